"""The RocketMQ 5 endpoint in a real broker group (``aeromq cluster up``'s runner: etcd and three
broker processes): every member opens it, its member key names it, and a RocketMQ 5 call made
to a follower reaches the leader (a send to the follower is read back from the leader)."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from aeromq._cli.cluster_runner import ClusterSpec, LocalCluster, Member
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc
from tests.rocketmq5.conftest import receive, resource, send

Code = definition_pb2.Code
TIMEOUT_S = 30.0
BROKER_ARGS = (
    "--auto-create-topic", "true", "--default-queue-count", "2", "--metrics-port", "none",
    "--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
)  # fmt: skip


@pytest.fixture
def cluster(shm_dir: Path) -> Iterator[LocalCluster]:
    spec = ClusterSpec(shm_dir / "cluster", broker_args=BROKER_ARGS)
    running = LocalCluster(spec, io.StringIO())
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _stub(channel: grpc.Channel) -> service_pb2_grpc.MessagingServiceStub:
    return service_pb2_grpc.MessagingServiceStub(channel)


def test_should_have_a_followers_rocketmq5_calls_answered_by_the_leader(
    cluster: LocalCluster,
) -> None:
    leader = cluster.leader()
    assert leader is not None
    follower: Member = next(m for m in cluster.members if m is not leader)
    assert leader.ready["rocketmq"] != "none" and follower.ready["rocketmq"] != "none"
    topic = "group-rocketmq5"

    with grpc.insecure_channel(follower.ready["rocketmq"]) as channel:
        via_follower = _stub(channel)
        route = via_follower.QueryRoute(
            service_pb2.QueryRouteRequest(topic=resource(topic)), timeout=TIMEOUT_S
        )
        assert send(via_follower, topic, b"through-the-follower") == Code.OK

    assert route.status.code == Code.OK
    for queue in route.message_queues:  # the follower's routes send clients to the leader
        [address] = queue.broker.endpoints.addresses
        assert f"{address.host}:{address.port}" == leader.ready["rocketmq"]
    with grpc.insecure_channel(leader.ready["rocketmq"]) as channel:
        got = receive(_stub(channel), topic, "group-rocketmq5-readers")
    assert [r.message.body for r in got if r.HasField("message")] == [b"through-the-follower"]
