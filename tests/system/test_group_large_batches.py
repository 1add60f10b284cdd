"""A batch larger than a replication frame (``max_frame_bytes``, 256 KiB) is replicated in
pieces and acknowledged: the leader reads each piece's bytes from the batch's start (its log is
read at unit boundaries only), every ISR member stores the whole batch. Before, the second
piece's read raised on the leader's replication agent at every cycle, and the send (a coalesced
request of many async sends is as large) timed out."""

from __future__ import annotations

from aeromq.client import Message, MessageQueue
from aeromq.producer import Producer, ProducerConfig
from tests.broker.etcd import conftest as etcd_fixtures
from tests.system._group import GROUP, TOPIC, BrokerGroup

etcd_server = etcd_fixtures.etcd_server  # a real etcd per test, the etcd tests' own


def test_should_replicate_and_acknowledge_a_batch_larger_than_a_frame(group: BrokerGroup) -> None:
    group.start_all()
    leader = group.wait_for_leader()
    bodies = [f"large-{i:05d}-".encode() + b"." * 100 for i in range(3_000)]  # ~400 KiB
    config = ProducerConfig(send_timeout_ms=20_000, request_timeout_ms=20_000)
    with Producer("group-large", group.grpc(leader), config=config) as producer:
        results = producer.send_batch(
            [Message(TOPIC, body) for body in bodies], queue=MessageQueue(TOPIC, GROUP, 0)
        )
    assert len(results) == len(bodies)
    state = group.state()
    assert state is not None and len(state.isr) >= 2
    for member_id in state.isr:
        assert set(bodies) <= group.stored_bodies(member_id), member_id
