"""A broker process refuses each input the issue found accepted, with a typed error naming the
value, and keeps what it holds unchanged: a CreateTopic of a system topic's name, an
UpdateOffset or a pull's commit_offset of 2^62, a heartbeat with a SQL92 subscription that does
not compile (its group then not tracked) or naming 5,000 groups, and a pull without a consumer
group."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import GrpcClient, IllegalArgumentError, Message, ResponseCode
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.producer import Producer
from aeromq.proto import consumer_group_pb2, messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from tests._servers import serving
from tests.system.conftest import ADMIN_TIMEOUT_S

TOPIC = "Guarded"
HUGE = 2**62


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path / "data", "broker-guarded", ["--ingress-udp-endpoint", "none"]
    )
    with serving(process, {TOPIC: 1}, clean_exit=True):
        with Producer("guard-producer", process.grpc_address) as producer:
            producer.send(Message(TOPIC, b"one"))
        yield process


@pytest.fixture
def admin(broker: ServerProcess) -> Iterator[GrpcClient]:
    with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as client:
        yield client


def _beat(*consumers: consumer_group_pb2.ConsumerData) -> consumer_group_pb2.HeartbeatRequest:
    return consumer_group_pb2.HeartbeatRequest(client_id="hostile@1", consumers=consumers)


def _group(name: str, expression: str = "*", sql: bool = False) -> consumer_group_pb2.ConsumerData:
    return consumer_group_pb2.ConsumerData(
        consumer_group=name,
        subscriptions=[
            consumer_group_pb2.SubscriptionData(
                topic=TOPIC,
                sub_expression=expression,
                expression_type=messages_pb2.SQL92 if sql else messages_pb2.TAG,
            )
        ],
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", ["TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_mine"])
def test_should_refuse_a_topic_named_as_a_system_topic(admin: GrpcClient, name: str) -> None:
    with pytest.raises(IllegalArgumentError, match=rf"system topic.*topic='{name}'"):
        admin.create_topic(name)
    assert name not in {topic.topic_name for topic in admin.list_topics()}


@pytest.mark.slow
def test_should_refuse_offsets_past_the_queue_and_keep_the_committed_one(
    admin: GrpcClient,
) -> None:
    admin.commit_offset("guards", TOPIC, 0, 1)  # the queue holds one message
    with pytest.raises(IllegalArgumentError, match=f"offset={HUGE} max_offset=1"):
        admin.commit_offset("guards", TOPIC, 0, HUGE)
    assert admin.query_offset("guards", TOPIC, 0) == 1


@pytest.mark.slow
def test_should_refuse_heartbeats_with_a_bad_sql92_subscription_or_thousands_of_groups(
    admin: GrpcClient,
) -> None:
    with pytest.raises(IllegalArgumentError, match=r"bad subscription expression.*group='sql'"):
        admin.send_heartbeat(_beat(_group("sql", "a > AND (", sql=True)))
    with pytest.raises(IllegalArgumentError, match=r"at most 256 groups.*groups=5000"):
        admin.send_heartbeat(_beat(*(_group(f"g{index}") for index in range(5_000))))
    admin.send_heartbeat(_beat(_group("fine", "a > 1", sql=True)))  # a good one is tracked
    groups = {group.consumer_group for group in admin.list_groups()}
    assert "fine" in groups and "sql" not in groups and "g0" not in groups


@pytest.mark.slow
def test_should_refuse_pulls_without_a_group_or_committing_past_the_queue(
    broker: ServerProcess, admin: GrpcClient
) -> None:
    with (
        Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as aeron,
        ClientSession.connect(aeron, SessionConfig(client_id="hostile")) as session,
    ):
        no_group = session.request(messages_pb2.PullMessageRequest(topic=TOPIC))
        assert no_group.status.code == ResponseCode.INVALID_PARAMETER
        assert "the group is blank" in no_group.status.message
        huge = session.request(
            messages_pb2.PullMessageRequest(consumer_group="pulls", topic=TOPIC, commit_offset=HUGE)
        )
        assert huge.status.code == ResponseCode.INVALID_PARAMETER
        assert f"commit_offset={HUGE} max_offset=1" in huge.status.message
        fine = session.request(messages_pb2.PullMessageRequest(consumer_group="pulls", topic=TOPIC))
        assert fine.pull_status == messages_pb2.FOUND  # the broker keeps serving
    assert admin.query_offset("pulls", TOPIC, 0) == -1
