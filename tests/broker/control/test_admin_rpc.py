"""Every BrokerAdmin RPC against a real gRPC server on port 0 over a real store in tmp_path."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    NotSupportedError,
    ResponseCode,
    TopicNotFoundError,
)
from aeromq.client.grpc_client import GrpcClient
from aeromq.proto import admin_pb2, common_pb2, consumer_group_pb2

from .conftest import RunningBroker, put_messages


class StepClock:
    """Store timestamps that only move when told."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


# -- topics ------------------------------------------------------------------------------------


def test_should_create_list_update_and_delete_topics(client: GrpcClient) -> None:
    created = client.create_topic("orders", read_queue_nums=4, write_queue_nums=4)
    assert (created.topic_name, created.read_queue_nums, created.write_queue_nums) == (
        "orders",
        4,
        4,
    )
    assert created.perm == 0x6
    default = client.create_topic("events")
    assert default.read_queue_nums == default.write_queue_nums == 8  # the broker's default
    assert [t.topic_name for t in client.list_topics()] == ["events", "orders"]

    update = common_pb2.TopicConfig(topic_name="orders", write_queue_nums=2, perm=0x4)
    updated = client.update_topic(update)
    assert (updated.read_queue_nums, updated.write_queue_nums, updated.perm) == (4, 2, 0x4)

    client.delete_topic("orders")
    assert [t.topic_name for t in client.list_topics()] == ["events"]


def test_should_refuse_a_second_create_with_topic_exist_already(client: GrpcClient) -> None:
    client.create_topic("dup")
    with pytest.raises(ClientError) as info:
        client.create_topic("dup")
    assert info.value.code == ResponseCode.TOPIC_EXIST_ALREADY
    assert "topic='dup'" in str(info.value)


def test_should_refuse_updates_and_deletes_of_unknown_topics(client: GrpcClient) -> None:
    with pytest.raises(TopicNotFoundError):
        client.update_topic(common_pb2.TopicConfig(topic_name="ghost"))
    with pytest.raises(TopicNotFoundError) as info:
        client.delete_topic("ghost")
    assert info.value.code == ResponseCode.TOPIC_NOT_EXIST
    assert info.value.rpc == "DeleteTopic"


@pytest.mark.parametrize(
    "config",
    [
        common_pb2.TopicConfig(topic_name="bad name"),
        common_pb2.TopicConfig(topic_name="t", read_queue_nums=5000),
        common_pb2.TopicConfig(topic_name="t", perm=99),
        common_pb2.TopicConfig(topic_name=""),
    ],
)
def test_should_refuse_invalid_topic_configs_with_invalid_parameter(
    client: GrpcClient, config: common_pb2.TopicConfig
) -> None:
    with pytest.raises(IllegalArgumentError) as info:
        client.create_topic(
            config.topic_name, read_queue_nums=config.read_queue_nums, perm=config.perm
        )
    assert info.value.code == ResponseCode.INVALID_PARAMETER


def test_should_drop_queues_and_offsets_with_a_deleted_topic(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic("gone", read_queue_nums=1, write_queue_nums=1)
    put_messages(broker.store, "gone", 0, 3)
    client.commit_offset("g", "gone", 0, 2)
    client.delete_topic("gone")
    assert broker.store.get_max_offset("gone", 0) == 0
    assert broker.store.consumer_offsets.query_offset("g", "gone", 0) == -1
    client.create_topic("gone", read_queue_nums=1, write_queue_nums=1)
    assert client.query_offset("g", "gone", 0) == -1


# -- routes and clusters -----------------------------------------------------------------------


def test_should_serve_its_own_route(broker: RunningBroker, client: GrpcClient) -> None:
    client.create_topic("routed", read_queue_nums=3, write_queue_nums=2)
    route = client.query_route("routed")
    assert route.topic == "routed"
    [queues] = route.queue_datas
    assert (queues.broker_name, queues.read_queue_nums, queues.write_queue_nums) == (
        "broker-a",
        3,
        2,
    )
    [data] = route.broker_datas
    assert data.cluster_name == "DefaultCluster"
    assert data.endpoints.grpc_address == broker.address
    assert data.endpoints.ipc_channel == "aeron:ipc"
    assert data.endpoints.ipc_stream_id == 1001
    assert data.endpoints.hostname


def test_should_refuse_a_route_of_an_unknown_topic_without_auto_create(client: GrpcClient) -> None:
    with pytest.raises(TopicNotFoundError):
        client.query_route("nowhere")


def test_should_auto_create_on_route_query_when_enabled(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    running = broker_factory(auto_create_topic=True, default_queue_count=3)
    with GrpcClient(running.address) as grpc_client:
        route = grpc_client.query_route("fresh")
        assert route.queue_datas[0].write_queue_nums == 3
        assert [t.topic_name for t in grpc_client.list_topics()] == ["fresh"]


def test_should_list_its_own_cluster(broker: RunningBroker, client: GrpcClient) -> None:
    client.create_topic("a")
    [cluster] = client.list_clusters()
    assert cluster.cluster_name == "DefaultCluster"
    [info] = cluster.brokers
    assert info.broker_name == "broker-a"
    assert info.topic_count == 1
    assert info.endpoints.grpc_address == broker.address


def test_should_answer_unimplemented_for_name_server_calls(client: GrpcClient) -> None:
    with pytest.raises(NotSupportedError) as info:
        client.query_route("x", namesrv=True)
    assert info.value.grpc_code == "UNIMPLEMENTED"


# -- offsets -----------------------------------------------------------------------------------


def test_should_commit_and_query_offsets(client: GrpcClient, broker: RunningBroker) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
    put_messages(broker.store, "t", 1, 42)  # an offset is committed within its queue
    assert client.query_offset("g", "t", 1) == -1
    client.commit_offset("g", "t", 1, 42)
    assert client.query_offset("g", "t", 1) == 42
    assert client.query_offset("g", "t", 0) == -1
    assert client.query_offset("other", "t", 1) == -1


@pytest.mark.parametrize(
    ("group", "topic", "queue_id", "offset", "error"),
    [
        ("g", "t", 2, 0, IllegalArgumentError),
        ("g", "t", -1, 0, IllegalArgumentError),
        ("g", "t", 0, -5, IllegalArgumentError),
        ("bad group", "t", 0, 0, IllegalArgumentError),
        ("g", "unknown", 0, 0, TopicNotFoundError),
    ],
)
def test_should_refuse_bad_offset_commits(
    client: GrpcClient,
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    error: type[ClientError],
) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
    with pytest.raises(error):
        client.commit_offset(group, topic, queue_id, offset)


def test_should_bound_a_consumers_commit_by_the_max_offset_but_not_a_sink_marker(
    client: GrpcClient,
) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)  # both queues empty
    with pytest.raises(IllegalArgumentError, match="past the queue's max offset"):
        client.commit_offset("g", "t", 0, 3)
    marker = "aeromq-sink-0d9f"  # the Spark sink's completed micro-batches of one query
    client.commit_offset(marker, "t", 0, 3)
    assert client.query_offset(marker, "t", 0) == 3


def test_should_report_min_and_max_offsets(broker: RunningBroker, client: GrpcClient) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
    put_messages(broker.store, "t", 1, 5)
    assert client.min_offset("t", 1) == 0
    assert client.max_offset("t", 1) == 5
    assert client.max_offset("t", 0) == 0
    with pytest.raises(IllegalArgumentError):
        client.max_offset("t", 7)


def test_should_search_offsets_by_store_time(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    clock = StepClock()
    running = broker_factory(clock_ms=clock)
    with GrpcClient(running.address) as grpc_client:
        grpc_client.create_topic("timed", read_queue_nums=1, write_queue_nums=1)
        base = clock.now_ms
        for _ in range(5):
            put_messages(running.store, "timed", 0, 2)  # two messages per 1000 ms step
            clock.now_ms += 1000
        assert grpc_client.search_offset("timed", 0, base) == 0
        assert grpc_client.search_offset("timed", 0, base + 1500) == 4
        assert grpc_client.search_offset("timed", 0, base + 2000) == 4
        assert grpc_client.search_offset("timed", 0, base + 2000, upper=True) == 5


def test_should_reset_offsets_to_earliest_latest_and_time(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    clock = StepClock()
    running = broker_factory(clock_ms=clock)
    with GrpcClient(running.address) as grpc_client:
        grpc_client.create_topic("r", read_queue_nums=2, write_queue_nums=2)
        base = clock.now_ms
        for queue_id in (0, 1):
            put_messages(running.store, "r", queue_id, 3)
        clock.now_ms += 10_000
        for queue_id in (0, 1):
            put_messages(running.store, "r", queue_id, 2)
        grpc_client.commit_offset("g", "r", 0, 1)

        assert grpc_client.reset_offset("g", "r", "latest") == {0: 5, 1: 5}
        assert grpc_client.query_offset("g", "r", 1) == 5
        assert grpc_client.reset_offset("g", "r", "earliest", queue_id=1) == {1: 0}
        assert grpc_client.query_offset("g", "r", 0) == 5  # only queue 1 moved
        assert grpc_client.reset_offset("g", "r", "time", timestamp_ms=base + 5_000) == {
            0: 3,
            1: 3,
        }
        with pytest.raises(IllegalArgumentError):
            grpc_client.reset_offset("g", "r", "sometime")


def test_should_refuse_a_reset_without_a_target(client: GrpcClient) -> None:
    client.create_topic("r")
    with pytest.raises(IllegalArgumentError):
        client._call(
            "ResetOffset",
            client._admin.ResetOffset,
            admin_pb2.ResetOffsetRequest(consumer_group="g", topic="r"),
            None,
        )


def test_should_report_consumer_progress_with_lag_per_queue(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic("p", read_queue_nums=3, write_queue_nums=3)
    put_messages(broker.store, "p", 0, 10)
    put_messages(broker.store, "p", 1, 4)
    client.commit_offset("g", "p", 0, 7)
    client.commit_offset("g", "p", 1, 4)
    progress = client.consumer_progress("g")
    rows = [
        (q.topic, q.queue_id, q.broker_offset, q.consumer_offset, q.lag) for q in progress.queues
    ]
    assert rows == [("p", 0, 10, 7, 3), ("p", 1, 4, 4, 0), ("p", 2, 0, -1, 0)]
    assert progress.total_lag == 3
    assert progress.queues[0].broker_name == "broker-a"
    assert progress.queues[0].last_timestamp_ms > 0  # store time of offset 6
    assert progress.online_consumers == 0
    assert client.consumer_progress("g", "p").total_lag == 3


def test_should_refuse_progress_of_an_unknown_group(client: GrpcClient) -> None:
    with pytest.raises(ClientError) as info:
        client.consumer_progress("nobody")
    assert info.value.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


# -- groups and stats --------------------------------------------------------------------------


def test_should_list_groups_from_offsets_and_members(
    client: GrpcClient, broker: RunningBroker
) -> None:
    client.create_topic("a")
    client.create_topic("b")
    put_messages(broker.store, "a", 0, 1)
    client.commit_offset("offsets-only", "a", 0, 1)
    client.send_heartbeat(
        consumer_group_pb2.HeartbeatRequest(
            client_id="c1",
            consumers=[
                consumer_group_pb2.ConsumerData(
                    consumer_group="online",
                    message_model=admin_pb2.BROADCASTING,
                    subscriptions=[consumer_group_pb2.SubscriptionData(topic="b")],
                )
            ],
        )
    )
    groups = {g.consumer_group: g for g in client.list_groups()}
    assert sorted(groups) == ["offsets-only", "online"]
    assert list(groups["offsets-only"].topics) == ["a"]
    assert groups["offsets-only"].consumer_count == 0
    assert list(groups["online"].topics) == ["b"]
    assert groups["online"].consumer_count == 1
    assert groups["online"].message_model == admin_pb2.BROADCASTING


def test_should_report_broker_stats_with_counters(
    broker: RunningBroker, client: GrpcClient
) -> None:
    client.create_topic("s", read_queue_nums=1, write_queue_nums=1)
    put_messages(broker.store, "s", 0, 3)
    broker.control.registry.counter("send.messages").add(3)
    with pytest.raises(TopicNotFoundError):
        client.query_route("missing")
    stats = client.broker_stats()
    assert stats.broker_name == "broker-a"
    assert stats.cluster_name == "DefaultCluster"
    assert stats.topic_count == 1
    assert stats.commit_log_max_offset > 0
    assert stats.uptime_ms >= 0
    assert stats.counters["send.messages"] == 3
    assert stats.counters[f"admin.errors.{int(ResponseCode.TOPIC_NOT_EXIST)}"] == 1
    assert stats.counters["store.corrupt_records"] == 0
