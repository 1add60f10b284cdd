"""The RocketMQ 5 endpoint of a broker group's member that does not lead (``_leader.py``): its
routes name the leader's endpoint and the calls that reach it are answered by the leader (a
broker process here), so a RocketMQ 5 client with an older route loses nothing; with no leader
known, or one that does not answer, calls are refused with HA_NOT_AVAILABLE, which the official
clients retry."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from aeromq.broker.config import BrokerConfig
from aeromq.broker.rocketmq import RocketMQEndpoint
from aeromq.broker.store import MessageStore
from aeromq.broker.testing import ServerProcess
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc
from tests.broker.store.conftest import small_config
from tests.rocketmq5.conftest import endpoint
from tests.rocketmq5.conftest import receive as _receive
from tests.rocketmq5.conftest import resource as _resource

Code = definition_pb2.Code
TIMEOUT_S = 30.0


@dataclass
class Leadership:
    """A follower's view: the leader's endpoint (None: an election), whether it leads."""

    leader: tuple[str, int] | None
    leading: bool = False

    def serves(self) -> bool:
        return self.leading

    def leader_endpoint(self) -> tuple[str, int] | None:
        return self.leader


@dataclass
class Follower:
    stub: service_pb2_grpc.MessagingServiceStub
    leadership: Leadership
    port: int


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def follower(broker: ServerProcess, tmp_path: Path) -> Iterator[Follower]:
    store = MessageStore(small_config(tmp_path / "store"))
    store.start()
    leadership = Leadership(_address(endpoint(broker)))
    config = BrokerConfig(
        data_dir=tmp_path / "unused", broker_name="follower", grpc_host="127.0.0.1",
        rocketmq_port=_free_port(), auto_create_topic=True,
    )  # fmt: skip
    server = RocketMQEndpoint(store, config, leadership)
    server.start()
    with grpc.insecure_channel(server.address) as channel:
        yield Follower(
            service_pb2_grpc.MessagingServiceStub(channel), leadership, config.rocketmq_port
        )
    server.stop()
    store.shutdown()


def _send(stub: service_pb2_grpc.MessagingServiceStub, topic: str, body: bytes) -> Code.ValueType:
    message = definition_pb2.Message(topic=_resource(topic), body=body)
    message.system_properties.message_id = f"id-{body.decode()}"
    message.system_properties.message_type = definition_pb2.NORMAL
    response = stub.SendMessage(
        service_pb2.SendMessageRequest(messages=[message]),
        timeout=TIMEOUT_S,
        metadata=(("x-mq-client-id", "test-client"),),
    )
    return response.status.code


def test_should_name_the_leaders_endpoint_in_routes_and_assignments(
    follower: Follower, broker: ServerProcess
) -> None:
    request = service_pb2.QueryRouteRequest(topic=_resource("group-routes"))
    route = follower.stub.QueryRoute(request, timeout=TIMEOUT_S)
    assigned = follower.stub.QueryAssignment(
        service_pb2.QueryAssignmentRequest(topic=_resource("group-routes")), timeout=TIMEOUT_S
    )

    assert route.status.code == Code.OK and route.message_queues
    host, port = _address(endpoint(broker))
    for queue in [*route.message_queues, *(a.message_queue for a in assigned.assignments)]:
        [address] = queue.broker.endpoints.addresses
        assert (address.host, address.port) == (host, port)


def test_should_have_the_leader_answer_sends_receives_and_acks(follower: Follower) -> None:
    topic, group = "group-forwarded", "group-readers"

    assert _send(follower.stub, topic, b"one") == Code.OK
    got = _receive(follower.stub, topic, group)

    messages = [r.message for r in got if r.HasField("message")]
    assert [m.body for m in messages] == [b"one"]
    ack = follower.stub.AckMessage(
        service_pb2.AckMessageRequest(
            group=_resource(group),
            topic=_resource(topic),
            entries=[
                service_pb2.AckMessageEntry(
                    message_id=messages[0].system_properties.message_id,
                    receipt_handle=messages[0].system_properties.receipt_handle,
                )
            ],
        ),
        timeout=TIMEOUT_S,
    )
    assert ack.status.code == Code.OK


def test_should_answer_itself_while_it_leads(follower: Follower) -> None:
    follower.leadership.leading = True

    route = follower.stub.QueryRoute(
        service_pb2.QueryRouteRequest(topic=_resource("group-self")), timeout=TIMEOUT_S
    )

    [address] = route.message_queues[0].broker.endpoints.addresses
    assert address.port == follower.port  # its own endpoint, not the leader's
    assert route.message_queues[0].broker.name == "follower"


def test_should_refuse_with_ha_not_available_while_no_leader_answers(follower: Follower) -> None:
    follower.leadership.leader = None  # an election
    assert _send(follower.stub, "group-election", b"x") == Code.HA_NOT_AVAILABLE
    route = follower.stub.QueryRoute(
        service_pb2.QueryRouteRequest(topic=_resource("group-election")), timeout=TIMEOUT_S
    )
    assert route.status.code == Code.HA_NOT_AVAILABLE
    [refused] = _receive(follower.stub, "group-election", "g")
    assert refused.status.code == Code.HA_NOT_AVAILABLE

    with socket.socket() as probe:  # a leader that does not answer
        probe.bind(("127.0.0.1", 0))
        follower.leadership.leader = ("127.0.0.1", probe.getsockname()[1])
    assert _send(follower.stub, "group-election", b"y") == Code.HA_NOT_AVAILABLE
