"""Clients given every member of a real broker group (three ``aeromq broker`` processes on a real
etcd on loopback) where the group is in the middle of a change: a follower that does not know a
topic the leader just created, a leader paused (SIGSTOP) under a send, a consumer started while
the group elects its leader."""

from __future__ import annotations

import dataclasses
import time

import pytest

from aeromq.broker.replication import MemberInfo
from aeromq.client import GrpcClient, Message, MessageQueue, RouteResolver, TopicNotFoundError
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer, ProducerConfig
from tests.broker.etcd import conftest as etcd_fixtures
from tests.system._group import GROUP, TOPIC, BrokerGroup

pytestmark = pytest.mark.slow

etcd_server = etcd_fixtures.etcd_server  # a real etcd per test, the etcd tests' own

LOSS_ENV = "AEROMQ_TEST_UDP_LOSS"


def test_should_route_and_send_to_a_topic_the_leader_just_created_when_a_follower_lags(
    group: BrokerGroup, monkeypatch: pytest.MonkeyPatch
) -> None:
    group.start(0)
    group.start(1)
    monkeypatch.setenv(LOSS_ENV, "1.0")  # member 2 hears nothing of the log: it lags for good
    group.start(2)
    monkeypatch.delenv(LOSS_ENV)
    leader = group.wait_for_leader()
    assert leader != 2
    with GrpcClient(group.grpc(leader), timeout_s=10.0) as client:
        client.create_topic("fresh", read_queue_nums=2, write_queue_nums=2)
    with GrpcClient(group.grpc(2), timeout_s=5.0) as lagging, pytest.raises(TopicNotFoundError):
        lagging.query_route("fresh")  # the gap: a member that does not know the topic yet
    endpoints = [group.grpc(2), group.grpc(leader), *(group.grpc(m) for m in (0, 1) if m != leader)]

    with RouteResolver(endpoints, kind="broker") as resolver:
        assert resolver.route("fresh").broker(GROUP).grpc_address == group.grpc(leader)
    with Producer("fresh-producers", endpoints) as producer:
        sent = producer.send(Message("fresh", b"first"))
    assert sent.message_queue.topic == "fresh"


def test_should_abandon_a_send_to_a_paused_leader_and_store_it_on_the_next_one(
    group: BrokerGroup,
) -> None:
    group.start_all()
    config = ProducerConfig(send_timeout_ms=8_000, request_timeout_ms=1_000)
    endpoints = [group.grpc(m) for m in sorted(group.members)]
    with Producer("paused-producers", endpoints, config=config) as producer:
        queue = MessageQueue(TOPIC, GROUP, 0)
        before = producer.send(Message(TOPIC, b"before"), queue=queue)
        paused = group.wait_for_leader()
        group.pause(paused)
        # in flight to the paused leader: abandoned after 1 s, not after the send's 8 s, and
        # stored on the next leader (the group elects one within its 1 s lease and a tick)
        after = producer.send(Message(TOPIC, b"after"), queue=queue)
    assert group.wait_for_leader(other_than=paused) != paused
    assert after.queue_offset > before.queue_offset
    group.resume(paused)
    leader = group.wait_for_leader()
    bodies = group.stored_bodies(leader)
    assert {b"before", b"after"} <= bodies


def _as_if_on_another_host(group: BrokerGroup, member_id: int) -> None:
    """Member ``member_id``'s key without its process identity, as a member on another host
    has it for the others: its death is seen when its lease ends, not at once."""
    key = group.keys.member(member_id)
    kv = group.client.get(key)
    assert kv is not None
    info = dataclasses.replace(MemberInfo.from_json(kv.value), process="")
    group.client.put(key, info.to_json(), lease_id=kv.lease_id)


def test_should_start_a_consumer_while_its_group_elects_a_leader(group: BrokerGroup) -> None:
    group.start_all()
    endpoints = [group.grpc(m) for m in sorted(group.members)]
    with Producer("electing-producers", endpoints) as producer:
        for i in range(10):
            producer.send(Message(TOPIC, f"m{i}".encode()))
    leader = group.wait_for_leader()
    _as_if_on_another_host(group, leader)
    group.kill(leader)
    config = LitePullConsumerConfig(
        consumer_group="electing-readers",
        endpoints=tuple(endpoints),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    try:
        consumer.start()  # the dead leader's lease still held: routes name it for a second
        got: set[bytes] = set()
        deadline = time.monotonic() + 30
        while len(got) < 10 and time.monotonic() < deadline:
            got.update(m.body for m in consumer.poll())
    finally:
        consumer.shutdown()
    assert got == {f"m{i}".encode() for i in range(10)}
