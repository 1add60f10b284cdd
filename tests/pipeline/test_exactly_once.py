"""Exactly-once stream writes without Spark (``pipeline/_exactly_once.py``): a stream task's
rows sent again as the same task, after a first run that stopped part way, are stored once; the
slices stay within the broker's window; the producer ids are the same in every replay."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import MessageQueue
from aeromq.pipeline._arrow_writers import send_exactly_once
from aeromq.pipeline._exactly_once import (
    BROKER_WINDOW,
    SLICE_BYTES,
    SLICE_ROWS,
    producer_id_of,
    row_bytes,
    slices,
)
from aeromq.pipeline._options import SinkOptions
from aeromq.pipeline._sink import StreamTask
from aeromq.producer import Producer
from tests.consumer._broker_process import client, create_topic
from tests.pipeline._helpers import consume_all


def _batches(label: str, count: int, per_batch: int, body_length: int) -> list[pa.RecordBatch]:
    """``count`` Arrow batches of ``per_batch`` rows: body ``<label>-<n>`` padded with dots,
    a key and a property."""
    out = []
    for first in range(0, count * per_batch, per_batch):
        numbers = range(first, first + per_batch)
        out.append(
            pa.RecordBatch.from_pydict(
                {
                    "body": [f"{label}-{n}".encode().ljust(body_length, b".") for n in numbers],
                    "keys": [f"k{n}" for n in numbers],
                    "properties": pa.array(
                        [[("n", str(n))] for n in numbers], pa.map_(pa.string(), pa.string())
                    ),
                }
            )
        )
    return out


def test_should_derive_the_same_producer_id_for_the_same_task_topic_and_round_only() -> None:
    first = producer_id_of("query", 3, 1, "T", 0)
    assert first == producer_id_of("query", 3, 1, "T", 0)
    others = {producer_id_of(*task) for task in [
        ("query", 3, 1, "T", 1), ("query", 3, 0, "T", 0), ("query", 4, 1, "T", 0),
        ("other", 3, 1, "T", 0), ("query", 3, 1, "U", 0)]}  # fmt: skip
    assert first not in others and len(others) == 5
    assert all(0 <= pid < 1 << 63 for pid in (first, *others))


def test_should_cut_slices_by_rows_and_estimated_bytes_in_order() -> None:
    (small,) = _batches("s", 1, 20_000, 10)
    pieces = list(slices(small))
    assert pa.Table.from_batches(pieces).equals(pa.Table.from_batches([small]))
    estimates = [int(row_bytes(p).sum()) for p in pieces]
    assert all(SLICE_BYTES - 200 < e <= SLICE_BYTES for e in estimates[:-1])
    assert all(p.num_rows <= SLICE_ROWS for p in pieces)
    (large,) = _batches("l", 1, 40, 150_000)  # 3 rows fit 512 KiB; a longer row is alone
    pieces = list(slices(large))
    assert all(int(row_bytes(p).sum()) <= SLICE_BYTES for p in pieces)
    assert sum(p.num_rows for p in pieces) == 40 and max(p.num_rows for p in pieces) == 3
    (huge,) = _batches("h", 1, 2, SLICE_BYTES + 1)
    assert [p.num_rows for p in slices(huge)] == [1, 1]


def test_should_keep_every_slice_within_the_broker_window(broker: ServerProcess) -> None:
    topic = "ExactlyOnceWindow"
    create_topic(broker, topic, 1)
    queue = MessageQueue(topic, broker.name, 0)
    with Producer("window-test", broker.grpc_address) as producer:
        for body_length in (100, 130_000, 40_000):
            for number, piece in enumerate(slices(_batches("w", 1, 300, body_length)[0])):
                answers = []
                for _ in range(2):  # the slice, then the same slice again as a replay sends it
                    producer.restart_sequences(producer_id_of("q", body_length, 0, topic, number))
                    answers.append(
                        producer.send_columns(
                            topic,
                            piece.column("body"),
                            properties=piece.column("properties"),
                            queue=queue,
                        )
                    )
                first, again = answers
                assert 1 <= len(first.batches) < BROKER_WINDOW
                assert list(again.queue_offsets()) == list(first.queue_offsets())  # not stored


def _rebatched(batches: list[pa.RecordBatch], rows: int) -> list[pa.RecordBatch]:
    """The same rows in the same order, cut into Arrow batches of ``rows``."""
    return pa.Table.from_batches(batches).combine_chunks().to_batches(max_chunksize=rows)


def _stored(broker: ServerProcess, topic: str) -> int:
    with client(broker) as grpc:
        return sum(grpc.max_offset(topic, queue_id) for queue_id in range(4))


def _dying(
    batches: list[pa.RecordBatch], count: int, broker: ServerProcess, topic: str
) -> Iterator[pa.RecordBatch]:
    """The first ``count`` of ``batches``, then the task dies once the broker holds some of
    its rows. The slices it sent are sent asynchronously and a dying task does not wait for
    them (its producer's shutdown fails those in flight), so without the wait a loaded machine
    could kill it before any was stored, and the replay would have nothing to skip."""
    yield from batches[:count]
    deadline = time.monotonic() + 30
    while not _stored(broker, topic) and time.monotonic() < deadline:
        time.sleep(0.05)
    raise RuntimeError("the task was killed")


@pytest.mark.parametrize("stopped_after", [2, 6])
def test_should_store_each_row_once_when_a_task_is_sent_again_after_stopping_part_way(
    broker: ServerProcess, stopped_after: int
) -> None:
    topic = f"ExactlyOnceReplay{stopped_after}"
    create_topic(broker, topic, 4)
    options = SinkOptions(endpoints=(broker.grpc_address,), topic=topic)
    batches = _batches(topic, 10, 2_000, 100)  # about 6 slices: rounds of 4 queues
    task = StreamTask("query-1", 7, 2)
    with pytest.raises(RuntimeError, match="killed"):  # the task dies part way
        send_exactly_once(options, _dying(batches, stopped_after, broker, topic), task)
    stored_first = _stored(broker, topic)
    assert 0 < stored_first < 2_000 * stopped_after  # whole slices, the last one held back
    replay = iter(_rebatched(batches, 700))  # Spark may cut the same rows otherwise
    assert send_exactly_once(options, replay, task) == 20_000
    bodies = [m.body for m in consume_all(broker, topic, 20_000)]
    assert len(bodies) == 20_000
    assert sorted(bodies) == sorted(
        b for batch in batches for b in batch.column("body").to_pylist()
    )
    other = StreamTask("query-1", 8, 2)  # the next micro-batch: new producer ids, stored anew
    assert send_exactly_once(options, iter(batches[:1]), other) == 2_000
    assert len(consume_all(broker, topic, 22_000)) == 22_000
