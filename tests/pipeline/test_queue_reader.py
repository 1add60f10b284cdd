"""The connector's bulk reader of one queue range (``read_queue_range``) against a real broker
process, without Spark: pulls in flight along the range, answers that end past their stride
(whole stored batches) or short of it (the broker's byte cap), tag filtering, and the process's
pool of reader sessions (kept between reads, narrow and wide channels, closed when idle)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue
from aeromq.pipeline import ReadTimeoutError, _reader_sessions
from aeromq.pipeline._queue_reader import read_queue_range
from aeromq.pipeline._reader_sessions import RESPONSE_TERM_LENGTH, reader_sessions
from aeromq.producer import Producer
from tests.consumer._broker_process import create_topic

_QUEUE_ID = 1


def _fill(
    broker: ServerProcess, topic: str, batches: int, per_batch: int, body_length: int
) -> None:
    """``batches`` stored batches of ``per_batch`` messages into queue 1: body ``<n>`` padded
    with dots to ``body_length``, tag ``even``/``odd``."""
    create_topic(broker, topic, 2)
    queue = MessageQueue(topic, broker.name, _QUEUE_ID)
    with Producer("queue-reader-test", broker.grpc_address) as producer:
        for first in range(0, batches * per_batch, per_batch):
            producer.send_batch(
                [
                    Message(topic, str(n).encode().ljust(body_length, b"."),
                            tags="even" if n % 2 == 0 else "odd")
                    for n in range(first, first + per_batch)
                ],
                queue=queue,
            )  # fmt: skip


def _read(broker: ServerProcess, topic: str, start: int, end: int, **options: object) -> pa.Table:
    batches = list(
        read_queue_range(
            (broker.grpc_address,),
            topic,
            broker.name,
            _QUEUE_ID,
            start,
            end,
            **options,  # type: ignore[arg-type]
        )
    )
    return pa.Table.from_batches(batches)


def test_should_read_exactly_the_range_when_pulls_are_smaller_than_the_stored_batches(
    broker: ServerProcess,
) -> None:
    _fill(broker, "QueueReaderStrides", batches=5, per_batch=50, body_length=10)
    table = _read(broker, "QueueReaderStrides", 7, 203, pull_batch_size=16)
    assert table.column("queueOffset").to_pylist() == list(range(7, 203))
    assert [bytes(b).rstrip(b".") for b in table.column("body").to_pylist()] == [
        str(n).encode() for n in range(7, 203)
    ]
    assert set(table.column("queueId").to_pylist()) == {_QUEUE_ID}


def test_should_read_on_when_an_answer_stops_at_the_broker_byte_cap(broker: ServerProcess) -> None:
    # 4 stored batches of 120 x 4 KiB (about 490 KB each): a pull of 1,024 messages gets two
    # of them (the broker's 1 MiB cap), short of its stride
    _fill(broker, "QueueReaderByteCap", batches=4, per_batch=120, body_length=4096)
    table = _read(broker, "QueueReaderByteCap", 0, 480)
    assert table.column("queueOffset").to_pylist() == list(range(480))
    assert all(len(body) == 4096 for body in table.column("body").to_pylist())


def test_should_keep_only_the_messages_of_the_sub_expression(broker: ServerProcess) -> None:
    _fill(broker, "QueueReaderTags", batches=3, per_batch=40, body_length=8)
    table = _read(broker, "QueueReaderTags", 5, 115, sub_expression="even", pull_batch_size=32)
    assert table.column("queueOffset").to_pylist() == list(range(6, 115, 2))
    assert set(table.column("tags").to_pylist()) == {"even"}


def test_should_keep_its_session_from_one_read_to_the_next_on_a_narrow_channel(
    broker: ServerProcess,
) -> None:
    _fill(broker, "QueueReaderSessions", batches=2, per_batch=10, body_length=10)
    sessions = reader_sessions()
    assert len(_read(broker, "QueueReaderSessions", 0, 20)) == 20
    first = sessions.open_session(broker.name)
    assert first is not None and first.is_open
    assert first.config.caller_reads  # the reader's thread reads its answers
    assert f"term-length={RESPONSE_TERM_LENGTH}" in first.response_channel
    resolver = sessions.resolver([broker.grpc_address])
    assert resolver.cached("QueueReaderSessions") is not None  # the route, kept
    assert len(_read(broker, "QueueReaderSessions", 5, 15)) == 10
    assert sessions.open_session(broker.name) is first  # no new session for the next read
    assert sessions.resolver([broker.grpc_address]) is resolver  # nor a new resolver


def test_should_read_a_stored_batch_longer_than_the_narrow_channel_takes(
    broker: ServerProcess,
) -> None:
    # stored batches of 3 x 800 KB: the narrow channel takes answers of up to 2 MiB, so the
    # broker refuses them there and the reader asks again on a wide session (through the
    # transport: a local read's answer holds no batch, test_local_reads.py)
    _fill(broker, "QueueReaderWide", batches=2, per_batch=3, body_length=800_000)
    table = _read(broker, "QueueReaderWide", 1, 6, local_reads=False)
    assert table.column("queueOffset").to_pylist() == [1, 2, 3, 4, 5]
    assert [bytes(b).rstrip(b".") for b in table.column("body").to_pylist()] == [
        str(n).encode() for n in range(1, 6)
    ]
    assert reader_sessions().open_session(broker.name, wide=True) is not None


def test_should_close_its_sessions_after_a_while_without_a_read(
    broker: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_reader_sessions, "IDLE_CLOSE_S", 0.2)
    _fill(broker, "QueueReaderIdle", batches=1, per_batch=5, body_length=10)
    sessions = reader_sessions()
    assert len(_read(broker, "QueueReaderIdle", 0, 5)) == 5
    session = sessions.open_session(broker.name)
    assert session is not None
    deadline = time.monotonic() + 10
    while sessions.open_count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sessions.open_count == 0 and not session.is_open
    assert sessions.resolver_count == 0  # the resolver is closed with them
    assert len(_read(broker, "QueueReaderIdle", 2, 5)) == 3  # and the next read connects again


def test_should_close_its_session_when_a_read_fails(broker: ServerProcess) -> None:
    _fill(broker, "QueueReaderFailed", batches=1, per_batch=5, body_length=10)
    with pytest.raises(ReadTimeoutError):  # offsets 5 to 9 never arrive
        _read(broker, "QueueReaderFailed", 0, 10, read_timeout_ms=300)
    assert reader_sessions().open_session(broker.name) is None  # the next read connects afresh
    assert reader_sessions().resolver_count == 0  # and resolves afresh
    assert len(_read(broker, "QueueReaderFailed", 0, 5)) == 5
