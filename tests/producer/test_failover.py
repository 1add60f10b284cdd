"""The producer's failover with a scripted broker group (``tests/client/_group.py``): sends and
their retries go to the group's new leader within ``send_timeout_ms``, a NOT_LEADER retry is
not counted as an attempt, the hint is used at once, sends wait for an election, and RocketMQ's
rules go on where a group cannot help (another broker, a single broker that is down)."""

from __future__ import annotations

import time
from concurrent.futures import Future

import pytest

from aeromq.client import (
    BrokerUnavailableError,
    ClientError,
    Message,
    MessageQueue,
    ReplicationTimeoutError,
    RequestTimeoutError,
)
from aeromq.client.failover import is_failover_error
from aeromq.producer import Producer, ProducerConfig, SendResult
from aeromq.producer._failover import abandoned, attempt_limit_ms
from tests.client._group import BROKER, FakeGroup, GroupSessions
from tests.client._scripted import ScriptedClient, ScriptedResolver, route_data
from tests.producer.conftest import GROUP_MEMBERS, group_producer

A, B, C = GROUP_MEMBERS
TOPIC = "orders"


def _producer(group: FakeGroup, **config: int) -> Producer:
    settings = {"retry_times_when_send_failed": 0, "retry_times_when_send_async_failed": 0}
    settings.update(config)
    return group_producer(group, **settings)


def test_should_send_to_the_leader_a_not_leader_answer_names_without_counting_it(
    group: FakeGroup,
) -> None:
    producer = _producer(group)
    producer.send(Message(TOPIC, b"first"))
    group.leader = B  # A follows now (routes would name B: the hint comes first)
    queries = sum(c.calls for c in producer._router.source.scripted.values())  # type: ignore[union-attr]

    result = producer.send(Message(TOPIC, b"second"))

    assert [member for member, _, _ in group.sends] == [A, A, B]
    assert group.sends[1][2] == group.sends[2][2]  # the same bytes, the same queue
    assert group.sends[1][1] == group.sends[2][1] == result.message_queue.queue_id
    assert sum(c.calls for c in producer._router.source.scripted.values()) == queries  # type: ignore[union-attr]
    assert sorted(group.stored_bodies()) == [b"first", b"second"]
    assert producer.metrics().retries == 1
    producer.shutdown()


def test_should_look_the_leader_up_when_a_follower_names_none(group: FakeGroup) -> None:
    producer = _producer(group)
    producer.send(Message(TOPIC, b"first"))  # the route, naming A, is cached
    group.hint = False
    group.elect(C)

    producer.send(Message(TOPIC, b"x"))

    assert [member for member, _, _ in group.sends] == [A, A, C]


def test_should_wait_for_the_election_of_a_new_leader_within_the_send_timeout(
    group: FakeGroup,
) -> None:
    producer = _producer(group, send_timeout_ms=3_000)
    producer.send(Message(TOPIC, b"before"))
    group.kill_leader()
    group.elect_later(B, 0.4)
    started = time.monotonic()

    result = producer.send(Message(TOPIC, b"after"))

    assert 0.4 <= time.monotonic() - started < 1.5
    assert result.message_queue.broker_name == BROKER
    assert sorted(group.stored_bodies()) == [b"after", b"before"]
    queue_ids = {queue_id for _, queue_id, _ in group.sends[1:]}
    assert len(queue_ids) == 1  # every try to the same queue


def test_should_fail_at_the_send_timeout_when_no_leader_comes(group: FakeGroup) -> None:
    producer = _producer(group, send_timeout_ms=400)
    group.kill_leader()
    started = time.monotonic()

    with pytest.raises(BrokerUnavailableError):
        producer.send(Message(TOPIC, b"lost"))

    assert 0.35 <= time.monotonic() - started < 1.2
    assert group.stored_bodies() == []


def test_should_fail_at_once_on_a_single_broker_that_is_down() -> None:
    single = FakeGroup(A, topic=TOPIC)
    try:
        producer = _producer(single, send_timeout_ms=3_000, retry_times_when_send_failed=2)
        producer.send(Message(TOPIC, b"up"))
        single.kill_leader()
        started = time.monotonic()

        with pytest.raises(BrokerUnavailableError):
            producer.send(Message(TOPIC, b"down"))

        assert time.monotonic() - started < 0.5  # as before: no waiting for an election
    finally:
        single.close()


def test_should_retry_a_pinned_send_at_the_new_leader_of_its_queue(group: FakeGroup) -> None:
    producer = _producer(group)
    queue = MessageQueue(TOPIC, BROKER, 1)
    group.leader = C

    result = producer.send(Message(TOPIC, b"pinned"), queue=queue)

    assert result.message_queue == queue
    assert [(member, queue_id) for member, queue_id, _ in group.sends] == [(A, 1), (C, 1)]


def test_should_go_to_another_broker_by_rocketmq_rules_while_the_group_has_no_leader() -> None:
    other = "127.0.0.1:9091"
    routes = ScriptedClient(B, route_data(TOPIC, {BROKER: A, "broker-b": other}))
    group = FakeGroup(A, B, C, topic=TOPIC)
    try:
        producer = Producer(
            "failover",
            route=ScriptedResolver(routes),
            config=ProducerConfig(retry_times_when_send_failed=2),
        ).start()
        sessions = producer._send_path.sessions = GroupSessions(group)
        group.kill_leader()
        group.members.append(other)
        group.leader = other  # the other broker's member answers (one fake holds both)

        for _ in range(4):
            producer.send(Message(TOPIC, b"x"))

        assert [member for member, _, _ in group.sends] == [other] * 4
        assert A in sessions.connects  # round robin still picks it: each such send moved on
        assert producer.metrics().retries == sessions.connects.count(A)
        producer.shutdown()
    finally:
        group.close()


def test_should_send_async_retries_to_the_new_leader(group: FakeGroup) -> None:
    producer = _producer(group, async_requests_in_flight=0)
    group.elect(B)

    futures: list[Future[SendResult]] = [
        producer.send_async(Message(TOPIC, f"m{i}".encode())) for i in range(20)
    ]

    results = [future.result(5) for future in futures]
    assert len(results) == 20
    assert sorted(group.stored_bodies()) == sorted(f"m{i}".encode() for i in range(20))
    producer.shutdown()


def test_should_keep_async_sends_waiting_for_an_election_without_a_thread_each(
    group: FakeGroup,
) -> None:
    producer = _producer(group, send_timeout_ms=3_000)
    group.kill_leader()
    group.elect_later(C, 0.3)

    futures = [producer.send_async(Message(TOPIC, f"m{i}".encode())) for i in range(50)]

    for future in futures:
        future.result(5)
    assert sorted(group.stored_bodies()) == sorted(f"m{i}".encode() for i in range(50))
    producer.shutdown()


def test_should_fail_async_sends_waiting_for_an_election_at_shutdown(group: FakeGroup) -> None:
    producer = _producer(group, send_timeout_ms=10_000)
    group.kill_leader()
    future = producer.send_async(Message(TOPIC, b"w"))
    time.sleep(0.2)

    producer.shutdown()

    with pytest.raises(ClientError, match=r"not started|closed"):
        future.result(5)


def test_should_give_an_idempotent_attempt_its_own_limit_within_the_send_timeout() -> None:
    assert attempt_limit_ms(1_000, 2_500, idempotent=True) == 1_000
    assert attempt_limit_ms(1_000, 400, idempotent=True) == 400
    assert attempt_limit_ms(1_000, 2_500, idempotent=False) == 2_500  # its retry could duplicate
    assert ProducerConfig().request_timeout_ms == 1_000
    with pytest.raises(ClientError, match="request_timeout_ms"):
        ProducerConfig(request_timeout_ms=0)


def test_should_abandon_an_attempt_its_own_limit_ended_as_a_failover() -> None:
    late = RequestTimeoutError("no answer in time")
    given_up = abandoned(late, 1_000, 2_500)
    assert isinstance(given_up, BrokerUnavailableError) and is_failover_error(given_up)
    assert abandoned(late, 2_500, 2_500) is late  # the send's own time ran out: its error
    unknown = ReplicationTimeoutError("stored, not acknowledged in time")
    assert abandoned(unknown, 1_000, 2_500) is unknown  # an answer, not a silence
