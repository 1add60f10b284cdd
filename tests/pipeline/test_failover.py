"""The connector's failover with a scripted broker group (``tests/client/_group.py``), without
Spark: a range read whose leader dies part way goes on at the new leader from the next offset
(nothing missed, nothing twice), and the driver's offset queries follow the leader."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pytest

from aeromq.client import Message, MessageQueue
from aeromq.client.route import origin_of
from aeromq.pipeline import _queue_reader
from aeromq.pipeline._metadata import BrokerMetadata
from aeromq.pipeline._reader_sessions import ReaderSessions
from aeromq.producer import Producer
from tests.client._group import BROKER, FakeGroup, GroupSessions

A, B, C = "127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"
TOPIC = "events"
QUEUE_ID = 1


@pytest.fixture
def group() -> Iterator[FakeGroup]:
    made = FakeGroup(A, B, C, topic=TOPIC)
    producer = Producer("fill", route=made.resolver()).start()
    producer._send_path.sessions = GroupSessions(made)
    queue = MessageQueue(TOPIC, BROKER, QUEUE_ID)
    for first in range(0, 100, 10):
        producer.send_batch(
            [Message(TOPIC, str(n).encode()) for n in range(first, first + 10)], queue=queue
        )
    producer.shutdown()
    yield made
    made.close()


@pytest.fixture
def sessions(group: FakeGroup, monkeypatch: pytest.MonkeyPatch) -> ReaderSessions:
    pool = ReaderSessions()
    pool._narrow = GroupSessions(group)
    pool._resolvers[origin_of((A, B, C))] = group.resolver()
    monkeypatch.setattr(_queue_reader, "reader_sessions", lambda: pool)
    return pool


def _read(start: int, end: int) -> list[bytes]:
    batches = _queue_reader.read_queue_range(
        (A, B, C), TOPIC, BROKER, QUEUE_ID, start, end,
        pull_batch_size=10, local_reads=False, read_timeout_ms=5_000,
    )  # fmt: skip
    table = pa.Table.from_batches(list(batches))
    return [bytes(body) for body in table.column("body").to_pylist()]


def test_should_read_on_at_the_new_leader_when_the_leader_dies_part_way(
    group: FakeGroup, sessions: ReaderSessions
) -> None:
    group.kill_after_pulls = 3
    group.next_leader = C

    bodies = _read(0, 100)

    assert bodies == [str(n).encode() for n in range(100)]
    members = [member for member, _, _ in group.pulls]
    assert members[0] == A and members[-1] == C


def test_should_read_from_the_leader_a_follower_names(
    group: FakeGroup, sessions: ReaderSessions
) -> None:
    group.leader = B  # routes name A: it answers NOT_LEADER, naming B

    assert _read(20, 45) == [str(n).encode() for n in range(20, 45)]
    assert {member for member, _, _ in group.pulls} == {B}  # found by the min offset's call


def test_should_ask_the_new_leader_for_offsets_on_the_driver(group: FakeGroup) -> None:
    metadata = BrokerMetadata((A, B, C))
    metadata._routes.close()
    metadata._routes = group.resolver(ttl_ms=0)
    queue = MessageQueue(TOPIC, BROKER, QUEUE_ID)
    group.kill_leader()
    group.elect_later(B, 0.2)

    assert metadata.max_offset(queue) == 100
    assert metadata.min_offset(queue) == 0
    metadata.commit_group("spark-group", {queue: 50})
    assert group.commits == [(B, QUEUE_ID, 50)]
    assert metadata.committed("spark-group", queue) == 50
    metadata.close()
