"""Following a broker group's leader on the client side, with scripted answers: the errors that
mean a failover, the leader a NOT_LEADER answer names, the back-off, and the route resolver's
broker-name cache (the hint taken at once, one query for many failed requests, the deadline)."""

from __future__ import annotations

import threading
import time

import pytest

from aeromq.client import BrokerRoute, BrokerSessions, ClientSession, RouteResolver, failover
from aeromq.client.failover import (
    MIN_TRY_MS,
    Backoff,
    error_for_status,
    is_failover_error,
    leader_hint,
)
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.route import FOLLOW_QUERY_INTERVAL_MS, parse_endpoints
from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    NoPermissionError,
    NotEnoughReplicasError,
    NotLeaderError,
    OutOfOrderSequenceError,
    ReplicationTimeoutError,
    RequestTimeoutError,
    ResponseCode,
    TopicNotFoundError,
)
from aeromq.proto import common_pb2
from tests.client._scripted import (
    ScriptedClient,
    ScriptedResolver,
    member_endpoints,
    not_leader,
    route_data,
)

A, B, C = "127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000

    def __call__(self) -> int:
        return self.now_ms


def test_should_split_endpoints_on_commas_and_semicolons() -> None:
    assert parse_endpoints("a:1, b:2;c:3") == ("a:1", "b:2", "c:3")
    assert parse_endpoints(["a:1,b:2", " c:3 ", "a:1"]) == ("a:1", "b:2", "c:3")
    assert parse_endpoints(" , ;") == ()
    assert RouteResolver("a:1,b:2;c:3").endpoints == ("a:1", "b:2", "c:3")


def test_should_tell_failover_errors_from_others() -> None:
    for error in (
        BrokerUnavailableError("down"),
        not_leader(B),
        NotEnoughReplicasError("isr"),
        ReplicationTimeoutError("late"),
    ):
        assert is_failover_error(error)
    for error in (RequestTimeoutError("slow"), OutOfOrderSequenceError("gap"), ClientError("x")):
        assert not is_failover_error(error)


def test_should_keep_the_leader_a_not_leader_status_names() -> None:
    status = common_pb2.Status(code=ResponseCode.NOT_LEADER, message="follower")
    status.leader.CopyFrom(member_endpoints(B))

    error = error_for_status(status, broker="b")

    assert isinstance(error, NotLeaderError) and error.retriable
    assert error.values["leader"] == member_endpoints(B)
    assert leader_hint(error) == member_endpoints(B)
    assert f"leader_address='{B}'" in str(error) and "broker='b'" in str(error)
    unnamed = error_for_status(common_pb2.Status(code=ResponseCode.NOT_LEADER))
    assert isinstance(unnamed, NotLeaderError) and unnamed.values["leader"] is None
    assert leader_hint(unnamed) is None
    other = error_for_status(common_pb2.Status(code=ResponseCode.TOPIC_NOT_EXIST, message="t"))
    assert isinstance(other, TopicNotFoundError) and "leader" not in other.values


class _StillClock:
    """``failover``'s clock, stopped at ``now_ns``: its sleeps are recorded, not slept (a loaded
    machine overslept a real 25 ms sleep by 8 ms: CI-style load failed the wall-clock bound)."""

    def __init__(self, now_ns: int) -> None:
        self.now_ns = now_ns
        self.slept_s: list[float] = []

    def monotonic_ns(self) -> int:
        return self.now_ns

    def sleep(self, seconds: float) -> None:
        self.slept_s.append(seconds)


def test_should_back_off_doubling_up_to_its_bound_and_never_past_the_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    backoff = Backoff(first_ms=10, max_ms=50)
    assert [backoff.next_delay_ms() for _ in range(5)] == [10, 20, 40, 50, 50]
    clock = _StillClock(now_ns=1_000_000_000)
    monkeypatch.setattr(failover, "time", clock)
    started = clock.now_ns
    assert not Backoff(first_ms=100).sleep(started + 3_000_000)  # 3 ms left: no try fits
    assert clock.slept_s == []  # returned without waiting
    assert Backoff(first_ms=200).sleep(started + 30_000_000)  # cut to leave a try its time
    assert clock.slept_s == [pytest.approx((30 - MIN_TRY_MS) / 1000)]
    assert Backoff(first_ms=10).sleep(started + 30_000_000)  # its own delay when that fits
    assert clock.slept_s[1:] == [pytest.approx(0.010)]


def test_should_take_the_named_leader_at_once_for_every_cached_route() -> None:
    a = ScriptedClient(A, route_data("orders", {"broker-a": A}))
    resolver = ScriptedResolver(a)
    failed = resolver.route("orders").broker("broker-a")
    resolver.route("other", refresh=True)  # a second topic on the same broker
    queries = a.calls

    moved = resolver.follow_leader("orders", failed, member_endpoints(B))

    assert moved.grpc_address == B and moved.broker_name == "broker-a"
    assert a.calls == queries  # the hint, no query
    assert resolver.route("orders").broker("broker-a") == moved
    assert resolver.route("other").broker("broker-a") == moved
    assert resolver.member("broker-a") == moved


def test_should_ignore_a_hint_naming_the_member_that_failed() -> None:
    a = ScriptedClient(
        A, route_data("orders", {"broker-a": A}), route_data("orders", {"broker-a": B})
    )
    resolver = ScriptedResolver(a)
    failed = resolver.route("orders").broker("broker-a")

    moved = resolver.follow_leader("orders", failed, member_endpoints(A))

    assert moved.grpc_address == B and a.calls == 2  # looked up instead


def test_should_query_once_for_many_requests_failing_on_one_member() -> None:
    release = threading.Event()
    answers = [route_data("orders", {"broker-a": A})]

    def slow_new_leader() -> common_pb2.TopicRouteData:
        release.wait(5)
        return route_data("orders", {"broker-a": B})

    b = ScriptedClient(B, answers[0], slow_new_leader)
    resolver = ScriptedResolver(b)
    failed = resolver.route("orders").broker("broker-a")
    moved: list[BrokerRoute] = []
    threads = [
        threading.Thread(target=lambda: moved.append(resolver.follow_leader("orders", failed)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.05)
    release.set()
    for thread in threads:
        thread.join(5)

    assert [m.grpc_address for m in moved] == [B] * 8
    assert b.calls == 2  # the first route, then one query for the eight
    assert resolver.follow_leader("orders", failed).grpc_address == B and b.calls == 2


def test_should_query_at_most_once_per_interval_while_no_new_leader_is_known() -> None:
    clock = Clock()
    b = ScriptedClient(B, route_data("orders", {"broker-a": A}))
    resolver = ScriptedResolver(b, clock_ms=clock)
    failed = resolver.route("orders").broker("broker-a")

    assert resolver.follow_leader("orders", failed) == failed  # queried: still A
    assert resolver.follow_leader("orders", failed) == failed  # too soon: not queried
    assert b.calls == 2
    clock.now_ms += FOLLOW_QUERY_INTERVAL_MS
    assert resolver.follow_leader("orders", failed) == failed
    assert b.calls == 3


def test_should_keep_the_member_when_the_route_names_no_leader_for_its_broker() -> None:
    b = ScriptedClient(
        B,
        route_data("orders", {"broker-a": A, "broker-b": C}),
        route_data("orders", {"broker-b": C}),
    )
    resolver = ScriptedResolver(b)
    failed = resolver.route("orders").broker("broker-a")

    assert resolver.follow_leader("orders", failed) == failed


def test_should_ask_the_endpoint_that_answered_last_first() -> None:
    down = ScriptedClient(A, BrokerUnavailableError("refused", grpc_code="UNAVAILABLE"))
    up = ScriptedClient(B, route_data("orders", {"broker-a": B}))
    resolver = ScriptedResolver(down, up)

    resolver.route("orders")
    resolver.route("orders", refresh=True)

    assert (down.calls, up.calls) == (1, 2)


def test_should_follow_a_hint_then_a_query_in_call_leader() -> None:
    b = ScriptedClient(
        B, route_data("orders", {"broker-a": A}), route_data("orders", {"broker-a": C})
    )
    resolver = ScriptedResolver(b)
    script: dict[str, list[object]] = {
        A: [not_leader(B)],
        B: [BrokerUnavailableError("gone")],
        C: ["committed"],
    }
    asked: list[str] = []

    def call(client: GrpcClient) -> str:
        asked.append(client.address)
        answer = script[client.address].pop(0)
        if isinstance(answer, ClientError):
            raise answer
        assert isinstance(answer, str)
        return answer

    assert resolver.call_leader("orders", "broker-a", call) == "committed"
    assert asked == [A, B, C]


def test_should_back_off_until_a_leader_is_elected_within_the_deadline() -> None:
    elected_at = time.monotonic() + 0.3

    def route_now() -> common_pb2.TopicRouteData:
        leader = C if time.monotonic() >= elected_at else A
        return route_data("orders", {"broker-a": leader})

    b = ScriptedClient(B, route_now)
    resolver = ScriptedResolver(b)

    def call(client: GrpcClient) -> str:
        if client.address == A:
            raise BrokerUnavailableError("the leader died")
        return client.address

    started = time.monotonic()
    assert resolver.call_leader("orders", "broker-a", call, timeout_s=3.0) == C
    assert 0.3 <= time.monotonic() - started < 1.5
    assert b.calls < 20  # backed off, not spinning


def _leader_died(client: GrpcClient) -> str:
    raise BrokerUnavailableError("the leader died", address=client.address)


def test_should_give_up_at_the_deadline_with_the_last_error() -> None:
    b = ScriptedClient(B, route_data("orders", {"broker-a": A}))
    resolver = ScriptedResolver(b)

    started = time.monotonic()
    with pytest.raises(BrokerUnavailableError, match="leader died"):
        resolver.call_leader("orders", "broker-a", _leader_died, timeout_s=0.3)
    assert 0.25 <= time.monotonic() - started < 1.0


def test_should_fail_at_once_when_no_endpoint_answers_as_for_a_single_broker() -> None:
    a = ScriptedClient(
        A,
        route_data("orders", {"broker-a": A}),
        BrokerUnavailableError("refused", grpc_code="UNAVAILABLE"),
    )
    resolver = ScriptedResolver(a)

    started = time.monotonic()
    with pytest.raises(BrokerUnavailableError, match="leader died"):
        resolver.call_leader("orders", "broker-a", _leader_died, timeout_s=3.0)
    assert time.monotonic() - started < 0.5


def test_should_not_retry_an_error_that_is_not_a_failover() -> None:
    resolver = ScriptedResolver(ScriptedClient(A, route_data("orders", {"broker-a": A})))
    calls = []

    def call(client: GrpcClient) -> str:
        calls.append(client.address)
        raise NoPermissionError("read only")

    with pytest.raises(NoPermissionError):
        resolver.call_leader("orders", "broker-a", call)
    assert calls == [A]


def test_should_raise_topic_not_found_at_once_when_no_endpoint_knows_the_topic() -> None:
    gone = TopicNotFoundError("no such topic")
    a = ScriptedClient(A, route_data("orders", {"broker-a": A}), gone)
    b = ScriptedClient(B, gone)
    resolver = ScriptedResolver(a, b)
    calls = []

    def call(client: GrpcClient) -> str:
        calls.append(client.address)
        raise TopicNotFoundError("gone")

    started = time.monotonic()
    with pytest.raises(TopicNotFoundError, match="gone"):
        resolver.call_leader("orders", "broker-a", call, timeout_s=3.0)
    assert calls == [A]  # the route query asked every endpoint: none knows it
    assert time.monotonic() - started < 1.0
    with pytest.raises(TopicNotFoundError):
        resolver.route("missing")


def test_should_route_a_topic_a_follower_does_not_know_yet_from_the_next_member() -> None:
    # a follower learns a new topic when its record reaches it through the log
    follower = ScriptedClient(A, TopicNotFoundError("not yet"))
    leader = ScriptedClient(B, route_data("orders", {"broker-a": B}))
    resolver = ScriptedResolver(follower, leader)

    assert resolver.route("orders").broker("broker-a").grpc_address == B
    assert follower.calls == 1 and leader.calls == 1


def test_should_wait_for_a_member_whose_metadata_lags_while_the_route_names_it() -> None:
    # a leader just elected, the topic's record in its log but not applied yet
    resolver = ScriptedResolver(ScriptedClient(A, route_data("orders", {"broker-a": A})))
    answers: list[ClientError | str] = [
        TopicNotFoundError("lags"),
        TopicNotFoundError("lags"),
        "ok",
    ]

    def call(client: GrpcClient) -> str:
        answer = answers.pop(0)
        if isinstance(answer, ClientError):
            raise answer
        return answer

    assert resolver.call_leader("orders", "broker-a", call, timeout_s=3.0) == "ok"
    assert answers == []


def test_should_not_call_a_topic_missing_while_the_members_that_know_it_do_not_answer() -> None:
    follower = ScriptedClient(A, TopicNotFoundError("not yet"))
    leader = ScriptedClient(B, BrokerUnavailableError("refused", grpc_code="UNAVAILABLE"))
    resolver = ScriptedResolver(follower, leader)

    with pytest.raises(BrokerUnavailableError) as raised:
        resolver.route("orders")
    assert raised.value.values["leaderless"] and raised.value.values["not_found_on"] == 1


class FakeSession:
    """What BrokerSessions asks of a session: open, pending requests, close."""

    def __init__(self, member: BrokerRoute) -> None:
        self.member = member
        self.is_open = True
        self.pending_count = 0

    def close(self) -> None:
        self.is_open = False


class FakeSessions(BrokerSessions):
    def __init__(self) -> None:
        super().__init__(client_id="test", request_timeout_ms=1_000, offer_timeout_ms=1_000)
        self.connected: list[BrokerRoute] = []

    def _connect(self, broker: BrokerRoute) -> ClientSession:
        self.connected.append(broker)
        return FakeSession(broker)  # type: ignore[return-value]  # duck-typed session


def _member(address: str) -> BrokerRoute:
    return BrokerRoute.of("c", "broker-a", member_endpoints(address))


def test_should_keep_one_session_per_member_and_move_to_the_new_leader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions = FakeSessions()
    old, new = _member(A), _member(B)
    first = sessions.session(old)

    second = sessions.session(new)

    assert second is not first and first.is_open  # a caller may still name the old member
    assert sessions.session(new) is second and sessions.open_session("broker-a") is second
    assert sessions.open_session_to(new) is second and sessions.open_session_to(old) is None
    assert sessions.session(_member(B)) is second  # an equal route: the same session
    assert sessions.session(old) is first  # a caller with an older route: no new connection
    assert sessions.session(new) is second and second.is_open
    assert [m.grpc_address for m in sessions.connected] == [A, B]
    first.pending_count = 1  # type: ignore[misc]  # a request waits on it
    monkeypatch.setattr("aeromq.client.broker_sessions.FORMER_SESSION_LINGER_MS", 0)
    sessions.session(_member(B))
    assert first.is_open  # waited on: kept
    first.pending_count = 0  # type: ignore[misc]
    sessions.session(_member(B))  # (a refreshed route: the slow path, which closes them)
    assert not first.is_open  # idle, replaced long enough ago: closed
    sessions.drop("broker-a")
    assert not second.is_open and sessions.open_session("broker-a") is None
    sessions.close()


def _no_leader_known() -> BrokerUnavailableError:
    """A member's answer while its group elects a leader (SERVICE_NOT_AVAILABLE in a status)."""
    error = error_for_status(
        common_pb2.Status(code=ResponseCode.SERVICE_NOT_AVAILABLE, message="no leader known")
    )
    assert isinstance(error, BrokerUnavailableError)
    return error


def test_should_wait_while_members_answer_that_they_know_no_leader() -> None:
    clock = Clock()
    b = ScriptedClient(B, route_data("orders", {"broker-a": A}), _no_leader_known())
    resolver = ScriptedResolver(b, clock_ms=clock, ttl_ms=1_000)
    failed = resolver.route("orders").broker("broker-a")

    assert resolver.follow_leader("orders", failed) == failed  # an election: no raise
    clock.now_ms += 5_000  # the cached route expired meanwhile
    assert resolver.route("orders").broker("broker-a") == failed  # the last one, kept
    with pytest.raises(BrokerUnavailableError):
        resolver.route("orders", refresh=True)


def test_should_raise_when_no_endpoint_answers_at_all() -> None:
    dead = BrokerUnavailableError("connection refused", grpc_code="UNAVAILABLE")
    clock = Clock()
    a = ScriptedClient(A, route_data("orders", {"broker-a": A}), dead)
    resolver = ScriptedResolver(a, clock_ms=clock, ttl_ms=1_000)
    failed = resolver.route("orders").broker("broker-a")

    with pytest.raises(BrokerUnavailableError, match="no endpoint answered"):
        resolver.follow_leader("orders", failed)
    clock.now_ms += 5_000
    with pytest.raises(BrokerUnavailableError):
        resolver.route("orders")  # as before: an expired route of a broker that is down
