"""Consumer group membership: heartbeats, versions, expiry, and changes pushed on the stream."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from aeromq.broker import InvalidArgumentError
from aeromq.broker.processor.consumer_groups import ConsumerGroupManager
from aeromq.client import BrokerUnavailableError, IllegalArgumentError, IllegalStateError
from aeromq.client.grpc_client import GrpcClient, HeartbeatStream
from aeromq.proto import consumer_group_pb2

from .conftest import RunningBroker, put_messages

PUSH_DEADLINE_S = 1.0


def beat(client_id: str, *groups: str) -> consumer_group_pb2.HeartbeatRequest:
    return consumer_group_pb2.HeartbeatRequest(
        client_id=client_id,
        consumers=[consumer_group_pb2.ConsumerData(consumer_group=g) for g in groups],
    )


class ManualClock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def members(response: consumer_group_pb2.HeartbeatResponse, group: str) -> list[str]:
    [found] = [m for m in response.memberships if m.consumer_group == group]
    return list(found.consumer_ids)


def next_membership(
    stream: HeartbeatStream, group: str, timeout_s: float = PUSH_DEADLINE_S
) -> tuple[list[str], float]:
    """The next pushed membership of ``group`` and how long it took to arrive."""
    start = time.monotonic()
    deadline = start + timeout_s
    while (remaining := deadline - time.monotonic()) > 0:
        response = stream.poll(remaining)
        if response is None:
            break
        if any(m.consumer_group == group for m in response.memberships):
            return members(response, group), time.monotonic() - start
    raise AssertionError(f"no membership push for group={group} within {timeout_s} s")


# -- the manager, with a manual clock ----------------------------------------------------------


def test_should_raise_the_version_on_every_membership_change() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    assert members(manager.heartbeat(beat("c1", "g")), "g") == ["c1"]
    assert manager.membership("g").version == 1
    manager.heartbeat(beat("c1", "g"))  # a renewal changes nothing
    assert manager.membership("g").version == 1
    manager.heartbeat(beat("c2", "g"))
    assert list(manager.membership("g").consumer_ids) == ["c1", "c2"]
    assert manager.membership("g").version == 2
    manager.heartbeat(beat("c1"))  # c1 leaves g by not naming it
    assert list(manager.membership("g").consumer_ids) == ["c2"]
    assert manager.membership("g").version == 3
    assert manager.unregister("c2") == ["g"]
    assert manager.membership("g").version == 4
    assert manager.groups() == []


def test_should_expire_a_silent_client_after_the_heartbeat_timeout() -> None:
    clock = ManualClock()
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=clock)
    changes: list[consumer_group_pb2.GroupMembership] = []
    manager.add_listener(changes.append)
    manager.heartbeat(beat("quiet", "g"))
    manager.heartbeat(beat("chatty", "g"))
    clock.now_ms += 800
    manager.heartbeat(beat("chatty", "g"))
    clock.now_ms += 300
    assert manager.scan_expired() == ["quiet"]
    assert list(manager.membership("g").consumer_ids) == ["chatty"]
    assert manager.client_count() == 1
    assert [list(c.consumer_ids) for c in changes] == [["quiet"], ["chatty", "quiet"], ["chatty"]]
    clock.now_ms += 1001
    assert manager.scan_expired() == ["chatty"]
    assert manager.client_count() == 0


def test_should_expire_on_its_own_timer() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=100)
    manager.start_expiry_timer(interval_ms=20)
    try:
        manager.heartbeat(beat("c", "g"))
        deadline = time.monotonic() + 5.0
        while manager.client_count() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert manager.client_count() == 0
    finally:
        manager.close()


def test_should_keep_notifying_when_a_listener_fails() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    seen: list[str] = []

    def broken(membership: consumer_group_pb2.GroupMembership) -> None:
        raise RuntimeError("listener bug")

    manager.add_listener(broken)
    manager.add_listener(lambda m: seen.append(m.consumer_group))
    manager.heartbeat(beat("c", "g"))
    assert seen == ["g"]


@pytest.mark.parametrize(
    "request_",
    [beat("", "g"), beat("c", "bad group"), beat("x" * 300, "g")],
)
def test_should_refuse_bad_heartbeats(request_: consumer_group_pb2.HeartbeatRequest) -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    with pytest.raises(InvalidArgumentError):
        manager.heartbeat(request_)


def test_should_merge_pending_pushes_and_never_send_an_older_version() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    stream = manager.open_stream()
    stream.on_heartbeat(beat("c1", "g"))
    first = stream.poll(0.1)
    assert first is not None and members(first, "g") == ["c1"]
    for other in ("c2", "c3", "c4"):
        manager.heartbeat(beat(other, "g"))
    merged = stream.poll(0.1)
    assert merged is not None
    assert [(m.consumer_group, m.version) for m in merged.memberships] == [("g", 4)]
    assert members(merged, "g") == ["c1", "c2", "c3", "c4"]
    assert stream.poll(0.05) is None
    stream.close()
    assert list(manager.membership("g").consumer_ids) == ["c2", "c3", "c4"]


def test_should_keep_a_client_that_moved_to_a_newer_stream() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    old = manager.open_stream()
    old.on_heartbeat(beat("c", "g"))
    new = manager.open_stream()
    new.on_heartbeat(beat("c", "g"))
    old.close()
    assert list(manager.membership("g").consumer_ids) == ["c"]
    new.close()
    assert list(manager.membership("g").consumer_ids) == []


# -- over gRPC ---------------------------------------------------------------------------------


def test_should_push_a_join_and_a_leave_to_other_members_at_once(client: GrpcClient) -> None:
    first = client.open_heartbeat_stream()
    second = client.open_heartbeat_stream()
    try:
        first.send(beat("c1", "g"))
        assert next_membership(first, "g")[0] == ["c1"]

        second.send(beat("c2", "g"))
        joined, join_latency_s = next_membership(first, "g")
        assert joined == ["c1", "c2"]
        assert join_latency_s < PUSH_DEADLINE_S
        assert next_membership(second, "g")[0] == ["c1", "c2"]

        second.close()  # a graceful leave: the broker pushes it at once
        left, leave_latency_s = next_membership(first, "g")
        assert left == ["c1"]
        assert leave_latency_s < PUSH_DEADLINE_S
    finally:
        first.close()
        second.close()


def test_should_drop_a_client_whose_stream_is_cancelled(client: GrpcClient) -> None:
    watcher = client.open_heartbeat_stream()
    crasher = client.open_heartbeat_stream()
    try:
        watcher.send(beat("watcher", "g"))
        next_membership(watcher, "g")
        crasher.send(beat("crasher", "g"))
        assert next_membership(watcher, "g")[0] == ["crasher", "watcher"]
        crasher.cancel()
        assert next_membership(watcher, "g")[0] == ["watcher"]
    finally:
        watcher.close()


def test_should_expire_a_silent_stream_client_and_push_it(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    running = broker_factory(client_heartbeat_timeout_ms=1000)
    with GrpcClient(running.address) as grpc_client:
        live = grpc_client.open_heartbeat_stream()
        silent = grpc_client.open_heartbeat_stream()
        try:
            # Timed from before silent's only beat: the broker stamps that beat later, so silent
            # cannot expire within 1 s of this (0.7: room for the broker's ms wall clock), however
            # long the round trips below take on a loaded machine.
            start = time.monotonic()
            silent.send(beat("silent", "g"))
            assert next_membership(silent, "g")[0] == ["silent"]
            live.send(beat("live", "g"))
            assert next_membership(live, "g")[0] == ["live", "silent"]
            remaining: list[str] = []
            while time.monotonic() - start < 15.0:
                live.send(beat("live", "g"))  # keep renewing; "silent" never does
                response = live.poll(0.1)
                if response is not None and response.memberships:
                    remaining = members(response, "g")
                    break
            assert remaining == ["live"]
            assert time.monotonic() - start >= 0.7  # not before the timeout
        finally:
            live.close()
            silent.close()


def test_should_answer_unary_heartbeats_and_consumer_ids(client: GrpcClient) -> None:
    response = client.send_heartbeat(beat("c1", "g1", "g2"))
    assert [m.consumer_group for m in response.memberships] == ["g1", "g2"]
    assert response.heartbeat_timeout_ms == 30_000
    client.send_heartbeat(beat("c2", "g1"))
    ids = client.get_consumer_ids("g1")
    assert list(ids.consumer_ids) == ["c1", "c2"]
    assert ids.version == 2
    client.unregister_client("c1", ["g1"])
    assert list(client.get_consumer_ids("g1").consumer_ids) == ["c2"]
    assert list(client.get_consumer_ids("g2").consumer_ids) == ["c1"]
    client.unregister_client("c1")
    assert list(client.get_consumer_ids("g2").consumer_ids) == []
    assert list(client.get_consumer_ids("never").consumer_ids) == []


def test_should_answer_a_bad_heartbeat_with_a_status(client: GrpcClient) -> None:
    with pytest.raises(IllegalArgumentError):
        client.send_heartbeat(beat("", "g"))
    stream = client.open_heartbeat_stream()
    try:
        stream.send(beat("c", "bad group"))
        with pytest.raises(IllegalArgumentError):
            stream.poll(PUSH_DEADLINE_S)
        stream.send(beat("c", "good"))  # the stream still serves
        assert next_membership(stream, "good")[0] == ["c"]
    finally:
        stream.close()


def test_should_push_an_offset_reset_to_online_members(client: GrpcClient) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
    stream = client.open_heartbeat_stream()
    try:
        stream.send(beat("c", "g"))
        next_membership(stream, "g")
        client.reset_offset("g", "t", "latest")
        response = stream.poll(PUSH_DEADLINE_S)
        assert response is not None
        [reset] = response.offset_resets
        assert (reset.consumer_group, reset.topic) == ("g", "t")
        assert {q.queue_id: q.offset for q in reset.offsets} == {0: 0, 1: 0}
    finally:
        stream.close()


def test_should_end_streams_when_the_broker_stops(broker: RunningBroker) -> None:
    with GrpcClient(broker.address) as grpc_client:
        stream = grpc_client.open_heartbeat_stream()
        stream.send(beat("c", "g"))
        next_membership(stream, "g")
        start = time.monotonic()
        broker.server.stop(grace_s=2.0)
        assert time.monotonic() - start < 1.9  # the stream did not hold the 2 s grace period
        with pytest.raises((BrokerUnavailableError, IllegalStateError)):
            while time.monotonic() - start < 15.0:
                stream.poll(0.1)
        stream.close()


# -- queue holders (hand-overs) ----------------------------------------------------------------


def test_should_grant_a_held_queue_only_after_its_live_holder_released_it() -> None:
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=ManualClock())
    manager.heartbeat(beat("old", "g"))
    manager.heartbeat(beat("new", "g"))
    assert manager.acquire_queue("g", "t", 0, "old") == ""
    assert manager.acquire_queue("g", "t", 0, "old") == ""  # holding it already
    assert manager.acquire_queue("g", "t", 0, "new") == "old"
    assert manager.acquire_queue("g", "t", 1, "new") == ""  # another queue is free
    assert not manager.release_queue("g", "t", 0, "new")  # not the holder: nothing changes
    assert manager.queue_holder("g", "t", 0) == "old"
    assert manager.release_queue("g", "t", 0, "old")
    assert manager.acquire_queue("g", "t", 0, "new") == ""
    assert manager.queue_holder("g", "t", 0) == "new"
    assert manager.acquire_queue("other-group", "t", 0, "old") == ""  # groups are apart


def test_should_pass_over_a_holder_that_left_expired_or_is_forced_out() -> None:
    clock = ManualClock()
    manager = ConsumerGroupManager(heartbeat_timeout_ms=1000, clock_ms=clock)
    for client_id in ("a", "b", "c"):
        manager.heartbeat(beat(client_id, "g"))
    assert manager.acquire_queue("g", "t", 0, "a") == ""
    manager.unregister("a")
    assert manager.queue_holder("g", "t", 0) == ""  # leaving lets go of everything
    assert manager.acquire_queue("g", "t", 0, "b") == ""
    clock.now_ms += 600
    manager.heartbeat(beat("c", "g"))
    clock.now_ms += 600  # b silent for 1,200 ms: expired
    assert manager.acquire_queue("g", "t", 0, "c") == "b"
    assert manager.scan_expired() == ["b"]
    assert manager.acquire_queue("g", "t", 0, "c") == ""
    manager.heartbeat(beat("a", "g"))
    assert manager.acquire_queue("g", "t", 0, "a") == "c"
    assert manager.acquire_queue("g", "t", 0, "a", force=True) == ""
    assert not manager.release_queue("g", "t", 0, "c")  # forced out: its release is a no-op
    with pytest.raises(InvalidArgumentError):
        manager.acquire_queue("g", "t", 0, "")


def test_should_hand_a_queue_over_with_the_commit_of_its_release(
    client: GrpcClient, broker: RunningBroker
) -> None:
    client.create_topic("t", read_queue_nums=2, write_queue_nums=2)
    put_messages(broker.store, "t", 1, 9)  # offsets are committed within their queue
    for client_id in ("old", "new"):
        client.send_heartbeat(beat(client_id, "g"))
    assert client.acquire_queue("g", "t", 1, "old") == (-1, "")
    client.commit_offset("g", "t", 1, 5)  # a periodic persist: still held
    assert client.acquire_queue("g", "t", 1, "new") == (-1, "old")
    client.release_queue("g", "t", 1, 9, client_id="old")
    assert client.acquire_queue("g", "t", 1, "new") == (9, "")
    client.release_queue("g", "t", 1, -1, client_id="new")  # release only
    assert client.query_offset("g", "t", 1) == 9
    assert client.acquire_queue("g", "t", 1, "old") == (9, "")
    client.unregister_client("old")
    assert client.acquire_queue("g", "t", 1, "new") == (9, "")  # the holder left
    with pytest.raises(IllegalArgumentError):
        client.release_queue("g", "t", 1, 3, client_id="")  # a release names its client
    with pytest.raises(IllegalArgumentError):
        client.commit_offset("g", "t", 1, -1)  # -1 only releases
    with pytest.raises(IllegalArgumentError):
        client.acquire_queue("g", "t", 1, "")
