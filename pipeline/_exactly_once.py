"""Exactly-once stream writes: how a task of a micro-batch sends its rows so that sending them
again (the query restarted from its checkpoint after a crash part way through the batch, or
Spark retrying the task) stores nothing twice.

The broker already deduplicates an idempotent producer's batches: per (producer id, topic,
queue) it keeps the producer's last :data:`BROKER_WINDOW` batches, answers a batch whose
sequences are one of them with that batch's stored result, and takes a batch whose sequences
follow the last (``broker/store``'s producer state table, ``producer/_sequences.py``). So a
task sends as a producer whose id it derives from what it writes
(:func:`producer_id_of`: the query's id, the micro-batch's id, the task's partition id and a
round number), and a replay of the task, which reads the same rows from the same offsets,
sends the same record batches with the same ids and sequences to the same queues: each one
stored before is answered, not stored again, and the first one that was not goes on from
there.

What that takes, here:

- the same record batches: each topic's rows of the task are cut into *slices*
  (:func:`slices`: at most :data:`SLICE_ROWS` rows and :data:`SLICE_BYTES` bytes, estimated
  generously), across the Arrow batches Spark hands over (:class:`TopicWriter` holds back the
  last, unfinished slice), so the cut depends on the rows and their order only; each slice goes
  to one queue with ``send_columns_async(queue=...)``, which cuts it into record batches of at
  most 256 KiB the same way every time: at most 4 per slice;
- the same queues: slice ``k`` of a topic goes to the topic's sorted writable queue
  ``(partition + k) % n``, never round robin;
- within the broker's window: a producer id sends at most one slice to each queue. Slices
  ``k`` with the same ``k // n`` are one *round* under one id
  (:meth:`~producer.Producer.restart_sequences`), and a round waits for the one before it. A
  round keeps up to one slice per queue in flight (4 queues: up to 2 MiB); each topic of the
  task has a producer (and rounds) of its own.

The limits (``docs/spark-connector.md``): the rows of each partition of a replayed micro-batch
must be the same rows in the same order (a deterministic query: the aeromq source replays the
same offsets; no ``rand()``, no ``uuid()``, no nondeterministic shuffle before the sink); the
topic keeps its queue count between the crash and the replay; the replay comes before the
broker forgets the producer ids (``producer_expiry_ms``, a day by default); a send that fails
for good inside a task starts its queue over in a new epoch, after which a retry of that task
may store that slice again (the producer's own rule for unknown outcomes).

Caller: the Arrow stream writer (``_arrow_writers.py``), on the executors.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from aeromq.client import MessageQueue
from aeromq.pipeline._host_address import response_host
from aeromq.pipeline._options import SinkOptions
from aeromq.pipeline._sink import StreamTask
from aeromq.producer import ColumnSendResults, Producer, ProducerConfig

__all__ = [
    "BROKER_WINDOW",
    "ROW_OVERHEAD_BYTES",
    "SLICE_BYTES",
    "SLICE_ROWS",
    "SendSlice",
    "TopicWriter",
    "producer_id_of",
    "row_bytes",
    "sink_producer",
    "slices",
]

BROKER_WINDOW: Final = 5
"""The batches a broker keeps per (producer id, topic, queue) to answer a resent one (its
producer state table's window; a test resends slices of every size and sees them answered)."""
SLICE_BYTES: Final = 512 * 1024
"""A slice's estimated bytes at most: two of the producer's 256 KiB record batches, so that a
slice is at most 4 of them, within :data:`BROKER_WINDOW` (one row longer than this is a slice
of its own, one batch)."""
SLICE_ROWS: Final = 8192
"""A slice's rows at most (the producer's most records per batch)."""
ROW_OVERHEAD_BYTES: Final = 128
"""Added to each row's estimate for its record's own fields (lengths, timestamps, its unique
id property), more than they take."""
SEND_TIMEOUT_S: Final = 60.0


def sink_producer(options: SinkOptions) -> Producer:
    """A producer of the sink (not started): its UDP sessions answered on this host's address
    toward the brokers (:func:`~pipeline._host_address.response_host`)."""
    config = ProducerConfig(udp_response_host=response_host(options.endpoints))
    return Producer(options.producer_group, options.endpoints, config=config)


def producer_id_of(
    query_id: str, batch_id: int, partition_id: int, topic: str, round_number: int
) -> int:
    """The producer id of one round of one topic's slices in one task of a micro-batch: 63
    bits of SHA-256 of the five, the same in every replay (two share one with odds of 2^-63)."""
    key = f"aeromq-sink/{query_id}/{batch_id}/{partition_id}/{topic}/{round_number}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") >> 1


def _lengths(column: pa.Array) -> npt.NDArray[np.int64]:
    lengths = pc.fill_null(pc.binary_length(column), 0)
    return np.asarray(lengths.to_numpy(zero_copy_only=False), np.int64)


def row_bytes(batch: pa.RecordBatch) -> npt.NDArray[np.int64]:
    """Each row's estimated bytes as a record: its body, keys, key, tags and properties, plus
    :data:`ROW_OVERHEAD_BYTES`."""
    names = batch.schema.names
    total = np.full(batch.num_rows, ROW_OVERHEAD_BYTES, np.int64)
    for name in ("body", "keys", "key", "tags"):
        if name in names:
            total += _lengths(batch.column(name))
    if "properties" in names:
        properties = batch.column("properties")
        offsets = np.asarray(properties.offsets, np.int64)
        keys, values = properties.keys, properties.items  # every row's, the offsets index them
        sizes = np.zeros(len(keys) + 1, np.int64)
        if len(keys):
            sizes[1:] = np.cumsum(_lengths(keys) + _lengths(values) + 8)
        total += np.diff(sizes[offsets])
    return total


def slices(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
    """``batch`` cut into slices of at most :data:`SLICE_ROWS` rows and :data:`SLICE_BYTES`
    estimated bytes (:func:`row_bytes`; a longer row alone), in order."""
    ends = np.cumsum(row_bytes(batch))
    start = 0
    done = 0  # the estimated bytes before ``start``
    while start < batch.num_rows:
        stop = int(np.searchsorted(ends, done + SLICE_BYTES, side="right"))
        stop = min(max(stop, start + 1), start + SLICE_ROWS, batch.num_rows)
        yield batch.slice(start, stop - start)
        done = int(ends[stop - 1])
        start = stop


SendSlice = Callable[[Producer, str, pa.RecordBatch, MessageQueue], Future[ColumnSendResults]]
"""Sends a slice's rows of a topic to a queue (the Arrow writers' column send)."""


class TopicWriter:
    """One topic's rows of one stream task (see the module): cut into slices across the task's
    Arrow batches, each sent to its queue under its round's producer id, with a producer of its
    own. Not thread-safe: the task's thread only."""

    def __init__(self, options: SinkOptions, topic: str, task: StreamTask, send: SendSlice) -> None:
        self.topic = topic
        self._task = task
        self._send = send
        self._producer = sink_producer(options).start()
        self._queues = sorted(self._producer.fetch_publish_queues(topic))
        self._pending: list[pa.RecordBatch] = []
        self._pending_bytes = 0
        self._sent = 0  # slices sent
        self._in_flight: list[Future[ColumnSendResults]] = []

    def add(self, rows: pa.RecordBatch) -> None:
        """Take ``rows`` (of this topic, in the task's order); send the slices they complete."""
        self._pending.append(rows)
        self._pending_bytes += int(row_bytes(rows).sum())
        if self._pending_bytes > SLICE_BYTES:
            self._cut(final=False)

    def finish(self) -> None:
        """Send what is left and wait for every slice; raises the first one's error."""
        if self._pending:
            self._cut(final=True)
        self._wait()

    def close(self) -> None:
        """Close the producer (slices in flight fail); idempotent."""
        self._producer.shutdown()

    def _cut(self, *, final: bool) -> None:
        """Send the pending rows' slices, all of them when ``final``, else all but the last
        (rows still to come may belong to it): so the slices are those of the task's whole
        sequence of rows, however Spark cut it into Arrow batches."""
        pending = self._pending
        joined = pending[0] if len(pending) == 1 else pa.concat_batches(pending)
        pieces = list(slices(joined))
        kept = [] if final else pieces[-1:]
        for piece in pieces[: len(pieces) - len(kept)]:
            self._send_slice(piece)
        self._pending = kept
        self._pending_bytes = int(row_bytes(kept[0]).sum()) if kept else 0

    def _send_slice(self, piece: pa.RecordBatch) -> None:
        """Slice ``k`` goes to queue ``(partition + k) % n`` under round ``k // n``'s producer
        id: a round sends one slice to each queue, and waits for them before the next."""
        count = len(self._queues)
        number = self._sent
        self._sent += 1
        if number % count == 0:
            self._wait()
            self._producer.restart_sequences(
                producer_id_of(
                    self._task.query_id,
                    self._task.batch_id,
                    self._task.partition_id,
                    self.topic,
                    number // count,
                )
            )
        queue = self._queues[(self._task.partition_id + number) % count]
        self._in_flight.append(self._send(self._producer, self.topic, piece, queue))

    def _wait(self) -> None:
        in_flight, self._in_flight = self._in_flight, []
        for future in in_flight:
            future.result(SEND_TIMEOUT_S)
