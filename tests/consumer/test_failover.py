"""The lite pull consumer's failover with a scripted broker group (``tests/client/_group.py``):
pulls, commits and offset queries follow the group's leader (the hint at once, one route query
for every queue that failed), and the pull task retries a failover soon without an error for
the application."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from aeromq.client import (
    SUB_ALL,
    BrokerRoute,
    BrokerUnavailableError,
    MessageQueue,
    NotLeaderError,
)
from aeromq.client.failover import error_for_status
from aeromq.common import ResponseCode, build_subscription_data
from aeromq.consumer import LitePullConsumerConfig
from aeromq.consumer._broker_api import PullResult
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer._membership import Membership
from aeromq.proto import common_pb2
from tests.client._group import BROKER, FakeGroup, GroupSessions
from tests.client._scripted import member_endpoints

A, B, C = "127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"
TOPIC = "orders"
GROUP = "readers"


@pytest.fixture
def group() -> Iterator[FakeGroup]:
    made = FakeGroup(A, B, C, topic=TOPIC, queues=4)
    yield made
    made.close()


@pytest.fixture
def api(group: FakeGroup) -> Iterator[GrpcBrokerApi]:
    # (a control call follows the leader until this passes: far past the 0.3 s elections of
    # these tests, so that a machine stalled for seconds under a full suite still passes)
    config = LitePullConsumerConfig(
        consumer_group=GROUP, endpoints=(A, B, C), control_timeout_ms=30_000
    )
    made = GrpcBrokerApi(config, "client-1")
    made._resolver.close()
    made._sessions.close()
    made._resolver = group.resolver()
    made._sessions = GroupSessions(group)
    yield made
    made.close()


class Answers:
    """Pull callbacks' outcomes, waited for one by one."""

    def __init__(self) -> None:
        self.got: list[PullResult | BaseException] = []
        self._event = threading.Condition()

    def __call__(self, result: PullResult | None, error: BaseException | None) -> None:
        with self._event:
            self.got.append(result if result is not None else error)  # type: ignore[arg-type]
            self._event.notify_all()

    def next(self, count: int = 1) -> list[PullResult | BaseException]:
        with self._event:
            assert self._event.wait_for(lambda: len(self.got) >= count, 5)
            return self.got[:count]


def _pull(api: GrpcBrokerApi, queue: MessageQueue, answers: Answers) -> None:
    subscription = build_subscription_data(TOPIC, SUB_ALL)
    api.pull_async(queue, subscription, GROUP, 0, 32, 0, 3_000, answers)


def test_should_pull_from_the_leader_a_not_leader_answer_names(
    api: GrpcBrokerApi, group: FakeGroup
) -> None:
    queue = MessageQueue(TOPIC, BROKER, 0)
    api.fetch_subscribe_queues(TOPIC)
    group.leader = B  # routes still name A

    first = Answers()
    _pull(api, queue, first)
    [error] = first.next()
    second = Answers()
    _pull(api, queue, second)
    [result] = second.next()

    assert isinstance(error, NotLeaderError)
    assert isinstance(result, PullResult)
    assert [member for member, _, _ in group.pulls] == [A, B]
    assert api._resolver.member(BROKER).grpc_address == B  # type: ignore[union-attr]


def test_should_look_a_dead_leader_up_once_for_every_queue(
    api: GrpcBrokerApi, group: FakeGroup
) -> None:
    queues = [MessageQueue(TOPIC, BROKER, q) for q in range(4)]
    api.fetch_subscribe_queues(TOPIC)
    group.kill_leader()
    group.elect(C)
    queries = sum(c.calls for c in api._resolver.scripted.values())  # type: ignore[attr-defined]

    first = Answers()
    for queue in queues:
        _pull(api, queue, first)
    outcomes = first.next(4)
    assert any(isinstance(e, BrokerUnavailableError) for e in outcomes), outcomes
    deadline = time.monotonic() + 5
    while api._resolver.member(BROKER).grpc_address != C:  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    again = Answers()
    for queue in queues:
        _pull(api, queue, again)

    assert all(isinstance(r, PullResult) for r in again.next(4))
    assert sorted(q for member, q, _ in group.pulls[-4:] if member == C) == [0, 1, 2, 3]
    asked = sum(c.calls for c in api._resolver.scripted.values()) - queries  # type: ignore[attr-defined]
    assert asked <= 3  # one query (the dead member asked first, then a live one), not four


def test_should_commit_and_query_offsets_at_the_new_leader(
    api: GrpcBrokerApi, group: FakeGroup
) -> None:
    queue = MessageQueue(TOPIC, BROKER, 2)
    api.fetch_subscribe_queues(TOPIC)
    group.leader = B

    api.commit_offset(GROUP, queue, 42)

    assert group.commits == [(B, 2, 42)]
    assert api.query_offset(GROUP, queue) == 42
    group.kill_leader()
    group.elect_later(C, 0.3)
    started = time.monotonic()
    api.commit_offset(GROUP, queue, 43)
    assert group.commits[-1] == (C, 2, 43) and time.monotonic() - started >= 0.3


def test_should_count_a_not_leader_pull_as_a_broker_to_look_up_again_not_an_error() -> None:
    status = common_pb2.Status(code=ResponseCode.NOT_LEADER, message="follower")
    status.leader.CopyFrom(member_endpoints(B))

    error = error_for_status(status, broker=BROKER)

    # the pull task retries a BrokerUnavailableError within 250 ms on a fresh route and keeps
    # it from the application (consumer.pull_task); NOT_LEADER is one
    assert isinstance(error, BrokerUnavailableError) and error.retriable


class FakeRoutes:
    """What the membership asks of the routes: the broker's current member."""

    def __init__(self, member: str) -> None:
        self.current = member

    def member(self, broker_name: str) -> BrokerRoute:
        return BrokerRoute.of("c", broker_name, member_endpoints(self.current))


class FakeStream:
    def __init__(self, address: str) -> None:
        self.address = address
        self.broker_name = BROKER
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_should_hold_a_new_leaders_pushes_until_the_group_settles(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("aeromq.consumer._membership.MEMBERSHIP_SETTLE_MS", 200)
    routes = FakeRoutes(A)
    membership = Membership(lambda: routes, 30_000, lambda job: job())  # type: ignore[arg-type,return-value]
    heard: list[list[str]] = []
    membership._listener = lambda group, ids: heard.append(list(ids))
    membership._primary = BROKER
    old = FakeStream(A)
    membership._streams = {A: old}  # type: ignore[dict-item]

    membership.on_push(A, GROUP, ["c1", "c2"])
    routes.current = C  # the leader moved
    membership.leader_moved()
    membership.on_push(A, GROUP, ["c1"])  # the former leader: not followed any more
    membership.on_push(C, GROUP, ["c1"])  # the first consumer to register with C
    membership.on_push(C, GROUP, ["c1", "c2"])  # then the other

    assert old.closed and membership._streams == {}
    assert heard == [["c1", "c2"]]  # nothing of C's yet
    time.sleep(0.4)
    assert heard == [["c1", "c2"], ["c1", "c2"]]  # C's last view only
    membership.on_push(C, GROUP, ["c2"])
    assert heard[-1] == ["c2"]  # settled: pushes pass at once
