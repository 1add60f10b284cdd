"""The name server: registry units, two brokers registered through their registrars (routes
merged, a silent broker dropped), route lookup from clients (``aeromq namesrv`` itself:
``tests/cli/control/test_namesrv.py``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from aeromq.broker import UnknownTopicError
from aeromq.broker.config import BrokerConfigError
from aeromq.broker.namesrv import NameServer, NameServerConfig, NameServerRegistrar, RouteRegistry
from aeromq.client import BrokerUnavailableError, TopicNotFoundError
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.message import MessageQueue
from aeromq.client.route import RouteResolver
from aeromq.proto import common_pb2, namesrv_pb2

from .conftest import RunningBroker

WAIT_S = 5.0


def registration(broker: str, *topics: tuple[str, int]) -> namesrv_pb2.RegisterBrokerRequest:
    return namesrv_pb2.RegisterBrokerRequest(
        cluster_name="c",
        broker_name=broker,
        endpoints=common_pb2.BrokerEndpoints(grpc_address=f"{broker}:1"),
        topics=[
            common_pb2.TopicConfig(topic_name=t, read_queue_nums=n, write_queue_nums=n, perm=6)
            for t, n in topics
        ],
        data_version=1,
    )


def wait_until(condition: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


class ManualClock:
    def __init__(self) -> None:
        self.now_ms = 5_000_000

    def __call__(self) -> int:
        return self.now_ms


# -- the registry ------------------------------------------------------------------------------


def test_should_merge_a_topics_queues_across_brokers() -> None:
    registry = RouteRegistry(1000, clock_ms=ManualClock())
    registry.register(registration("b1", ("t", 4), ("only1", 1)))
    registry.register(registration("b2", ("t", 2)))
    route = registry.query_route("t")
    assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [
        ("b1", 4),
        ("b2", 2),
    ]
    assert [b.endpoints.grpc_address for b in route.broker_datas] == ["b1:1", "b2:1"]
    assert [(t.topic_name, t.write_queue_nums) for t in registry.list_topics()] == [
        ("only1", 1),
        ("t", 6),
    ]
    with pytest.raises(UnknownTopicError):
        registry.query_route("none")


def test_should_drop_a_silent_broker_and_ask_it_to_register_again() -> None:
    clock = ManualClock()
    registry = RouteRegistry(1000, clock_ms=clock)
    registry.register(registration("b1", ("t", 1)))
    registry.register(registration("b2", ("t", 1)))
    clock.now_ms += 800
    assert registry.heartbeat("c", "b2", 1) is False
    clock.now_ms += 300
    assert registry.scan_expired() == ["b1"]
    assert [q.broker_name for q in registry.query_route("t").queue_datas] == ["b2"]
    assert registry.heartbeat("c", "b1", 1) is True  # unknown now: register again
    assert registry.heartbeat("c", "b2", 2) is True  # newer topics: register again
    assert registry.unregister("c", "b2") is True
    assert registry.broker_names() == []


def test_should_list_clusters_sorted() -> None:
    registry = RouteRegistry(1000, clock_ms=ManualClock())
    registry.register(registration("b2", ("t", 1)))
    registry.register(registration("b1"))
    other = registration("z1")
    other.cluster_name = "a-cluster"
    registry.register(other)
    clusters = registry.list_clusters()
    assert [(c.cluster_name, [b.broker_name for b in c.brokers]) for c in clusters] == [
        ("a-cluster", ["z1"]),
        ("c", ["b1", "b2"]),
    ]
    assert clusters[1].brokers[1].topic_count == 1


def test_should_validate_the_name_server_config() -> None:
    config = NameServerConfig.load(
        ["--port", "0"], environ={"AEROMQ_NAMESRV_BROKER_TIMEOUT_MS": "500"}
    )
    assert (config.port, config.broker_timeout_ms) == (0, 500)
    with pytest.raises(BrokerConfigError) as info:
        NameServerConfig.load(["--port", "99999"], environ={})
    assert (info.value.key, info.value.source) == ("port", "argument --port")
    with pytest.raises(BrokerConfigError):
        NameServerConfig.load([], environ={"AEROMQ_NAMESRV_PROT": "1"})
    with pytest.raises(BrokerConfigError):
        NameServerConfig.load(["--port", "x"], environ={})


# -- two brokers behind a running name server --------------------------------------------------


@pytest.fixture
def namesrv() -> Iterator[NameServer]:
    server = NameServer(NameServerConfig(port=0, broker_timeout_ms=500, scan_interval_ms=50))
    server.start()
    yield server
    server.stop(grace_s=0.5)


def register(running: RunningBroker, namesrv: NameServer) -> NameServerRegistrar:
    """Beat every 50 ms; dropped after 1.5 s of silence (30 beats: safe on a loaded machine)."""
    registrar = NameServerRegistrar(
        running.control, namesrv.address, interval_ms=50, heartbeat_timeout_ms=1500
    )
    registrar.start()
    return registrar


def test_should_merge_routes_of_two_registered_brokers_and_drop_a_silent_one(
    broker_factory: Callable[..., RunningBroker], namesrv: NameServer
) -> None:
    first = broker_factory("b1", broker_name="broker-1", default_queue_count=2)
    second = broker_factory("b2", broker_name="broker-2", default_queue_count=3)
    for running in (first, second):
        with GrpcClient(running.address) as grpc_client:
            grpc_client.create_topic("shared")
    registrars = [register(first, namesrv), register(second, namesrv)]
    try:
        with GrpcClient(namesrv.address) as grpc_client:
            route = grpc_client.query_route("shared", namesrv=True)
            assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [
                ("broker-1", 2),
                ("broker-2", 3),
            ]
            assert {b.endpoints.grpc_address for b in route.broker_datas} == {
                first.address,
                second.address,
            }
            [cluster] = grpc_client.list_clusters(namesrv=True)
            assert [b.broker_name for b in cluster.brokers] == ["broker-1", "broker-2"]

            registrars[1].stop(unregister=False)  # broker-2 falls silent
            silent_since = time.monotonic()
            wait_until(
                lambda: len(grpc_client.query_route("shared", namesrv=True).queue_datas) == 1,
                timeout_s=15.0,
            )
            assert time.monotonic() - silent_since >= 1.0  # dropped by the timeout, not before
            route = grpc_client.query_route("shared", namesrv=True)
            assert [q.broker_name for q in route.queue_datas] == ["broker-1"]
            [cluster] = grpc_client.list_clusters(namesrv=True)
            assert [b.broker_name for b in cluster.brokers] == ["broker-1"]
    finally:
        registrars[0].stop()


def test_should_re_register_at_once_when_topics_change(
    broker_factory: Callable[..., RunningBroker], namesrv: NameServer
) -> None:
    running = broker_factory(broker_name="broker-1")
    registrar = NameServerRegistrar(running.control, namesrv.address, interval_ms=60_000)
    registrar.start()
    try:
        with GrpcClient(namesrv.address) as ns, GrpcClient(running.address) as broker:
            with pytest.raises(TopicNotFoundError):
                ns.query_route("late", namesrv=True)
            broker.create_topic("late")
            wait_until(lambda: "late" in {t.topic_name for t in ns.list_topics(namesrv=True)})
            broker.delete_topic("late")
            wait_until(lambda: not ns.list_topics(namesrv=True))
    finally:
        registrar.stop()
    assert namesrv.registry.broker_names() == []  # unregistered at stop


def test_should_keep_retrying_a_name_server_that_is_down(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    running = broker_factory(broker_name="broker-1")
    server = NameServer(NameServerConfig(port=0))
    server.start()
    address = server.address
    server.stop(grace_s=0.1)
    registrar = NameServerRegistrar(
        running.control, address, interval_ms=50, heartbeat_timeout_ms=5000, timeout_s=0.5
    )
    registrar.start()  # does not raise: the broker serves on without a name server
    try:
        port = int(address.rsplit(":", 1)[1])
        revived = NameServer(NameServerConfig(port=port))
        revived.start()
        try:
            wait_until(lambda: revived.registry.broker_names() == ["broker-1"])
        finally:
            revived.stop(grace_s=0.1)
    finally:
        registrar.stop(unregister=False)


# -- client route lookup -----------------------------------------------------------------------


def test_should_resolve_routes_from_a_name_server_or_a_broker(
    broker_factory: Callable[..., RunningBroker], namesrv: NameServer
) -> None:
    first = broker_factory("b1", broker_name="broker-1", default_queue_count=2)
    second = broker_factory("b2", broker_name="broker-2", default_queue_count=1)
    for running in (first, second):
        with GrpcClient(running.address) as grpc_client:
            grpc_client.create_topic("t")
    registrars = [register(first, namesrv), register(second, namesrv)]
    try:
        with RouteResolver([namesrv.address]) as resolver:
            route = resolver.route("t")
            assert route.write_queues() == [
                MessageQueue("t", "broker-1", 0),
                MessageQueue("t", "broker-1", 1),
                MessageQueue("t", "broker-2", 0),
            ]
            assert route.broker("broker-2").grpc_address == second.address
            assert resolver.broker_client("t", "broker-1").query_offset("g", "t", 0) == -1
            with pytest.raises(TopicNotFoundError):
                resolver.route("missing")
        # a dead endpoint first, then a broker that serves its own routes
        with RouteResolver(f"127.0.0.1:1;{first.address}", timeout_s=1.0) as resolver:
            route = resolver.route("t")
            assert [q.broker_name for q in route.read_queues()] == ["broker-1", "broker-1"]
            ingress = route.broker("broker-1").ingress(prefer_ipc=True)
            assert ingress == ("aeron:ipc", 1001)
    finally:
        for registrar in registrars:
            registrar.stop()


def test_should_cache_routes_until_the_ttl_or_an_invalidate(broker: RunningBroker) -> None:
    clock = ManualClock()
    with GrpcClient(broker.address) as grpc_client:
        grpc_client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
        with RouteResolver(broker.address, kind="broker", ttl_ms=1000, clock_ms=clock) as resolver:
            assert len(resolver.route("t").write_queues()) == 2
            grpc_client.update_topic(common_pb2.TopicConfig(topic_name="t", write_queue_nums=4))
            assert len(resolver.route("t").write_queues()) == 2  # cached
            clock.now_ms += 1000
            assert len(resolver.route("t").write_queues()) == 4  # expired
            grpc_client.update_topic(common_pb2.TopicConfig(topic_name="t", write_queue_nums=1))
            resolver.invalidate("t")
            assert resolver.cached("t") is None  # never fetches
            assert len(resolver.route("t").write_queues()) == 1
            cached = resolver.cached("t")
            assert cached is not None and len(cached.write_queues()) == 1
            clock.now_ms += 1000
            assert resolver.cached("t") is None  # expired


def test_should_fail_when_no_endpoint_answers() -> None:
    with (
        RouteResolver(["127.0.0.1:1", "127.0.0.1:2"], timeout_s=0.5) as resolver,
        pytest.raises(BrokerUnavailableError),
    ):
        resolver.route("t")
