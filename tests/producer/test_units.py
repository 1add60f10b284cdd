"""Producer pieces without a broker: selectors, config, routes, results, exports."""

from __future__ import annotations

import dataclasses
import importlib
import time
from collections.abc import Callable

import pytest

from aeromq.client import IllegalArgumentError, Message, MessageQueue
from aeromq.client.route import TopicRoute
from aeromq.common import hash_code
from aeromq.producer import (
    KeyHashSelector,
    ProducerConfig,
    RandomSelector,
    RoundRobinSelector,
    SendResult,
    SendStatus,
    StaticRoute,
)
from aeromq.producer._routing import QueueRouter
from aeromq.producer._selector import select_avoiding
from aeromq.proto import common_pb2
from tests.client._helpers import isort_key

QUEUES = [MessageQueue("t", broker, q) for broker in ("a", "b") for q in range(3)]
MESSAGE = Message("t", b"x", keys="order-7")


def test_should_go_round_robin_from_where_it_starts() -> None:
    selector = RoundRobinSelector(start=4)
    picked = [selector(QUEUES, MESSAGE, None) for _ in range(7)]
    assert picked == [*QUEUES[4:], *QUEUES, QUEUES[0]][:7]


def test_should_skip_the_broker_that_failed_when_another_has_queues() -> None:
    selector = RoundRobinSelector(start=0)
    for _ in range(6):
        assert select_avoiding(selector, QUEUES, MESSAGE, "a").broker_name == "b"
    only_a = QUEUES[:3]
    assert select_avoiding(selector, only_a, MESSAGE, "a").broker_name == "a"


def test_should_pick_by_key_hash_as_rocketmq_does() -> None:
    selector = KeyHashSelector()
    assert selector(QUEUES, MESSAGE, None) == QUEUES[abs(hash_code("order-7")) % 6]
    assert selector(QUEUES, MESSAGE, "other") == QUEUES[abs(hash_code("other")) % 6]
    assert selector(QUEUES, MESSAGE, 13) == QUEUES[13 % 6]
    with pytest.raises(IllegalArgumentError, match="needs a key"):
        selector(QUEUES, Message("t", b"no key"), None)


def test_should_pick_randomly_but_repeatably_with_a_seed() -> None:
    first = [RandomSelector(7)(QUEUES, MESSAGE, None) for _ in range(1)]
    again = [RandomSelector(7)(QUEUES, MESSAGE, None) for _ in range(1)]
    assert first == again and first[0] in QUEUES


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("send_timeout_ms", 0),
        ("max_message_size", -1),
        ("offer_timeout_ms", 0),
        ("retry_times_when_send_failed", -1),
        ("retry_times_when_send_async_failed", -2),
        ("transport", "tcp"),
        ("send_timeout_ms", True),
    ],
)
def test_should_refuse_a_bad_setting_naming_it(field: str, value: object) -> None:
    with pytest.raises(IllegalArgumentError, match=field):
        ProducerConfig(**{field: value})  # type: ignore[arg-type]


def test_should_take_rocketmq_defaults() -> None:
    config = ProducerConfig()
    assert (config.send_timeout_ms, config.retry_times_when_send_failed) == (3_000, 2)
    assert config.max_message_size == 4 * 1024 * 1024 and config.transport == "auto"


def test_should_serve_a_static_route_for_any_topic() -> None:
    route = StaticRoute({"x": common_pb2.BrokerEndpoints(ipc_channel="aeron:ipc")}, 2).route("t")
    assert route.write_queues() == [MessageQueue("t", "x", 0), MessageQueue("t", "x", 1)]
    assert route.read_queues() == route.write_queues()
    assert route.broker("x").ipc_channel == "aeron:ipc"


def test_should_tell_a_send_ok_from_one_not_yet_durable() -> None:
    queue = MessageQueue("t", "a", 0)
    assert SendResult(SendStatus.SEND_OK, "u", "o", queue, 1).ok
    assert not SendResult(SendStatus.FLUSH_DISK_TIMEOUT, "u", "o", queue, 1).ok


@pytest.mark.parametrize("module_name", ["producer"])
def test_should_export_a_sorted_all_of_names_that_exist(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = module.__all__
    assert names == sorted(names, key=isort_key) and len(set(names)) == len(names)
    assert all(hasattr(module, name) for name in names)


def test_should_admit_up_to_the_limit_then_group_what_waits_by_size() -> None:
    from aeromq.producer._coalesce import SendCoalescer

    coalescer: SendCoalescer[bytes] = SendCoalescer(10, len)
    assert coalescer.admit("t", b"a", 1) and not coalescer.admit("t", b"bbbb", 1)
    assert coalescer.admit("u", b"x", 1)  # another topic counts on its own
    for item in (b"cccc", b"dddd"):
        assert not coalescer.admit("t", item, 1)
    # what waits goes in order, up to 10 bytes a group; the rest waits for the next answer
    assert coalescer.answered("t") == [b"bbbb", b"cccc"]
    assert coalescer.waiting_count("t") == 1
    assert not coalescer.admit("t", b"e", 2)  # behind the waiting send, whatever the limit
    assert coalescer.answered("t") == [b"dddd", b"e"]
    assert coalescer.answered("t") == [] and coalescer.answered("u") == []
    assert coalescer.admit("t", b"f", 1)  # nothing in flight, nothing waits: at once
    with pytest.raises(IllegalArgumentError):
        ProducerConfig(async_requests_in_flight=-1)


def test_should_defer_the_cut_for_a_woken_thread_until_it_waits_again() -> None:
    from aeromq.producer._coalesce import SendCoalescer

    coalescer: SendCoalescer[bytes] = SendCoalescer(100, len)
    assert coalescer.admit("t", b"a", 1)
    # its answer woke a thread: the place is owed, the thread's next sends wait for its wait
    assert coalescer.answered("t", coalescer.waits, round_trip_ns=5_000_000, now_ns=1_000) == []
    assert coalescer.owed == 1
    assert not coalescer.admit("t", b"b", 1) and not coalescer.admit("t", b"c", 1)
    assert coalescer.on_wait(now_ns=301_000) == [("t", [b"b", b"c"])]  # as one request
    assert coalescer.owed == 0 and coalescer.refill_ns == 75_000  # 300 us, averaged from 0
    # the thread waited again before the answer's reader got to the cut: cut at once
    waits = coalescer.waits
    assert coalescer.on_wait(now_ns=2_000) == []
    assert not coalescer.admit("t", b"d", 1)
    assert coalescer.answered("t", waits, round_trip_ns=5_000_000, now_ns=3_000) == [b"d"]
    # nothing added by the woken thread: the owed place is freed at its wait
    assert coalescer.answered("t", coalescer.waits, round_trip_ns=5_000_000, now_ns=4_000) == []
    assert coalescer.on_wait(now_ns=5_000) == [] and coalescer.admit("t", b"e", 1)


def test_should_cut_at_once_when_the_round_trip_is_shorter_than_a_refill() -> None:
    from aeromq.producer._coalesce import PROBE_EVERY, SendCoalescer

    coalescer: SendCoalescer[bytes] = SendCoalescer(100, len)
    assert coalescer.admit("t", b"a", 1)
    assert coalescer.answered("t", coalescer.waits, round_trip_ns=0, now_ns=1) == []  # none yet
    assert coalescer.on_wait(now_ns=4_000_001) == []
    assert coalescer.refill_ns == 1_000_000  # a refill of 4 ms, averaged from 0
    deferred = 0
    for answer in range(2, 2 * PROBE_EVERY + 2):
        assert coalescer.admit("t", b"x", 1)
        woken_at = coalescer.waits
        assert coalescer.answered("t", woken_at, round_trip_ns=500_000, now_ns=answer) == []
        if coalescer.owed:  # a probe: deferred whatever the round trip
            deferred += 1
            assert coalescer.on_wait(now_ns=answer + 1) == []
    assert deferred == 2  # one answer in PROBE_EVERY
    assert coalescer.refill_ns < 1_000_000  # the probes' short refills brought it down


def test_should_pick_the_queue_least_sent_to_for_groups_of_any_size() -> None:
    from aeromq.producer._selector import LeastSentSelector

    selector = LeastSentSelector()
    queues = QUEUES[:4]
    picked = [selector.pick(queues, count) for count in (1, 7, 1, 7, 1, 1, 7, 1)]
    assert picked[:4] == queues  # each once, then the least sent: the ones that had 1
    assert picked[4:6] == [queues[0], queues[2]] and picked[6] == queues[0]
    sent = {queue: 0 for queue in queues}
    for queue, count in zip(picked, (1, 7, 1, 7, 1, 1, 7, 1), strict=True):
        sent[queue] += count
    assert max(sent.values()) - min(sent.values()) <= 7
    newcomer = QUEUES[4]  # a queue new to the route starts level with the least sent
    assert selector.pick([*queues, newcomer], 1) in (queues[2], newcomer)


def test_should_group_no_more_sends_than_a_merge_takes() -> None:
    from aeromq.producer._coalesce import MAX_GROUP_SENDS, SendCoalescer

    coalescer: SendCoalescer[int] = SendCoalescer(1 << 30, lambda item: 100)
    assert coalescer.admit("t", 0, 1)
    for item in range(1, MAX_GROUP_SENDS + 10):
        assert not coalescer.admit("t", item, 1)

    group = coalescer.answered("t")

    assert len(group) == MAX_GROUP_SENDS and coalescer.waiting_count("t") == 9


class _AgingRoutes:
    """A route source whose route was fetched ``age_ms`` ago; counts its refreshes."""

    def __init__(self, age_ms: int) -> None:
        self.age_ms = age_ms
        self.refreshes = 0
        self._static = StaticRoute({"broker-a": common_pb2.BrokerEndpoints()}, 1)

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        self.refreshes += refresh
        fetched_ms = time.monotonic_ns() // 1_000_000 - (0 if refresh else self.age_ms)
        return dataclasses.replace(self._static.route(topic), fetched_ms=fetched_ms)

    def invalidate(self, topic: str) -> None:
        return None

    def close(self) -> None:
        return None


def test_should_refresh_a_route_in_the_background_past_three_quarters_of_its_ttl() -> None:
    ran: list[Callable[[], None]] = []
    routes = _AgingRoutes(age_ms=500)
    router = QueueRouter("group", routes)
    router.refresh_ahead(1_000, ran.append, lambda topic: None)
    router.route("T")
    assert not ran  # half its TTL: not yet
    routes.age_ms = 800
    router.route("T")
    router.route("T")
    assert len(ran) == 1  # once while one is on its way, and not on the send's thread
    assert routes.refreshes == 0
    ran.pop()()
    assert routes.refreshes == 1
    router.route("T")
    assert len(ran) == 1  # again, the last one done


def test_should_send_on_an_expired_route_while_its_fetch_runs_in_the_background() -> None:
    ran: list[Callable[[], None]] = []
    routes = _AgingRoutes(age_ms=5_000)  # past its TTL: a producer quiet for five seconds
    expired = routes.route("T")
    cached: dict[str, TopicRoute] = {"T": expired}
    router = QueueRouter("group", routes)
    router.refresh_ahead(1_000, ran.append, cached.get)
    assert router.route("T") is expired  # the last route, not a fetch on the send's thread
    assert routes.refreshes == 0 and len(ran) == 1
    ran.pop()()
    assert routes.refreshes == 1
    cached.clear()  # a failed send dropped it: the next send fetches on its own thread
    assert router.route("T") is not expired
