"""The one way the connector reads the broker: a queue range as ``pyarrow.RecordBatch``\\es of
the row schema (:mod:`pipeline._schema`).

:func:`read_queue_range` opens a reader for (endpoints, topic, broker, queue id, start offset,
end offset, sub expression) and yields record batches of the messages in ``[start, end)`` that
match the expression, in offset order, then closes. It is a bulk reader: it knows its range
up front, so it needs none of the lite pull consumer's machinery (rebalance, pull tasks, process
queues). It pulls straight on a transport session with the broker (IPC on the broker's host;
the process's session, kept from one read to the next, :mod:`pipeline._reader_sessions`),
several pulls in flight one after another along the range; its own thread reads the answers
(sleeping on the session's doorbell until the broker rings), and reads each answer's stored
record batches with the consumer's reader (:func:`consumer.read_pulled_batches`: a
one C pass per answer). On the broker's host the batches are read where they are stored: the
answer says where they are in the broker's commit log files, and the reader reads them there
(:mod:`pipeline._local_reads`; ``local_reads``, the ``localReads`` option). Otherwise they
arrive as the answer's raw section (:mod:`common._envelope`), copied out of the transport once
(from each fragment of an answer straight into the bytes kept, :mod:`client._answer_assembler`).
Answers are gathered into record batches of about 8,192 rows: Spark's Python data source hands
each one to the JVM as it is, and in Spark 7 of 7 alternating pairs of full reads ran 2-12% faster than with 32,768
rows (likely because a batch of about a mebibyte is still in the cache when it is written to
the JVM). Each Arrow column comes from the pulled batches' columns (``consumer.MessageBatch``),
without a Python object per message (the ``properties`` map, asked for with
``includeProperties``, is the exception: it parses each message's properties).

Pulls in flight ask for successive strides of the range (``pullBatchSize`` messages each, 8,192
by default, the broker's cap at most). A pull answers with whole stored batches, so it may end
past the stride (the next answer is then cut to start where this one ended) or short of it (the
broker's byte cap: the pulls after it are dropped, asked again from where it ended, with the
stride shrunk to what the broker answered). A pull asks for at most ``PULL_MAX_BYTES`` (what
the session's narrow response channel takes); through the transport, a stored batch too long
for that channel is refused by the broker, and the reader goes on from there on a wide
session.

A broker group's failover (``client.failover``): pulls that a follower refuses (``NOT_LEADER``)
or that fail with their member's session find the group's current member (the leader named, else
the route looked up again, backing off while the group elects one), within ``read_timeout_ms``,
and the read goes on there from the next offset to deliver (every member's log holds the same
offsets, and a leader answers only what its group acknowledged). A broker that no endpoint
answers for fails the read as before.

Tag filtering is done here, on the tags of the pulled messages (the broker is asked for every
message), so that every offset of the range is seen: a gap in the offsets is data loss.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from typing import Final

import numpy as np
import pyarrow as pa

from aeromq.client import MessageQueue, build_subscription_data
from aeromq.client.failover import Backoff, error_for_status, is_failover_error, leader_hint
from aeromq.client.route import BrokerKey, BrokerRoute, RouteResolver, origin_of
from aeromq.common import (
    ANSWER_TOO_LONG,
    PROPERTY_KEYS,
    RESERVED_PROPERTY_NAMES,
    BrokerInternalError,
    ClientError,
    PullAnswer,
)
from aeromq.consumer import MessageBatch, read_pulled_batches
from aeromq.pipeline._errors import DataLossError, ReadTimeoutError
from aeromq.pipeline._local_reads import CommitLogFiles, commit_log_files
from aeromq.pipeline._options import MAX_PULL_BATCH_SIZE
from aeromq.pipeline._reader_sessions import (
    PULL_MAX_BYTES,
    READER_GROUP,
    ReaderSessions,
    reader_sessions,
)
from aeromq.pipeline._resolve import start_within
from aeromq.pipeline._schema import arrow_schema
from aeromq.proto import messages_pb2
from aeromq.transport import TransportError

__all__ = ["READER_GROUP", "read_queue_range"]

_ROWS_PER_BATCH: Final = 8192
_PULLS_IN_FLIGHT: Final = 4
"""Enough to keep the broker answering while this process reads the last answer (measured:
one pull in flight leaves the reader idle about half the time on a 2-core machine)."""
_SUSPEND_MS: Final = 1_000
"""How long the broker holds a pull at the queue's end (a range being written as it is read)."""
_REQUEST_TIMEOUT_MS: Final = 30_000
_FOUND: Final = messages_pb2.FOUND
_ANSWERED: Final = (messages_pb2.FOUND, messages_pb2.NO_MATCHED_MSG)
_OFFSET_ILLEGAL: Final = messages_pb2.OFFSET_ILLEGAL


def read_queue_range(
    endpoints: Sequence[str],
    topic: str,
    broker: str,
    queue_id: int,
    start_offset: int,
    end_offset: int,
    sub_expression: str = "*",
    *,
    include_properties: bool = False,
    fail_on_data_loss: bool = True,
    read_timeout_ms: int = 60_000,
    pull_batch_size: int = MAX_PULL_BATCH_SIZE,
    local_reads: bool = True,
) -> Iterator[pa.RecordBatch]:
    """Yield the range's matching messages as record batches (about 8,192 rows each).

    Raises :class:`~pipeline.DataLossError` when ``start_offset`` (or a later offset of the
    range) is no longer on the broker and ``fail_on_data_loss``; otherwise reads on from what
    is left. Raises :class:`~pipeline.ReadTimeoutError` when no message arrives for
    ``read_timeout_ms`` before the end. ``local_reads``: read the stored batches from the
    broker's files when the session is granted that (:mod:`pipeline._local_reads`)."""
    if end_offset <= start_offset:
        return
    queue = MessageQueue(topic, broker, queue_id)
    key = BrokerKey(origin_of(endpoints), broker)  # the name alone may be another cluster's
    with reader_sessions() as sessions:
        try:
            resolver = sessions.resolver(endpoints)
            min_offset = resolver.call_leader(
                topic, broker, lambda client: client.min_offset(topic, queue_id)
            )
            route = resolver.route(topic).broker(broker)
        except ClientError:
            sessions.drop(key)  # the next read resolves afresh
            raise
        start = start_within(queue, start_offset, min_offset, fail_on_data_loss)
        reader = _RangeReader(
            sessions,
            resolver,
            route,
            queue,
            start,
            end_offset,
            stride=max(1, min(MAX_PULL_BATCH_SIZE, pull_batch_size)),
            fail_on_data_loss=fail_on_data_loss,
            read_timeout_ms=read_timeout_ms,
            local_reads=local_reads,
        )
        try:
            yield from _record_batches(reader.batches(), sub_expression, include_properties)
        except (ClientError, TransportError, ReadTimeoutError):
            sessions.drop(key)  # the next read connects afresh
            raise


class _RangeReader:
    """The pulls of one range, in flight ahead of the read (see the module doc)."""

    def __init__(
        self,
        sessions: ReaderSessions,
        resolver: RouteResolver,
        route: BrokerRoute,
        queue: MessageQueue,
        start: int,
        end: int,
        *,
        stride: int,
        fail_on_data_loss: bool,
        read_timeout_ms: int,
        local_reads: bool,
    ) -> None:
        self._sessions = sessions
        self._resolver = resolver
        self._route = route
        self._wide = False  # on a wide session: a stored batch was too long for the narrow one
        self._session = sessions.session(route)
        self._local_reads = local_reads
        self._local = self._local_files()
        self._queue = queue
        self._expected = start  # the next offset to deliver
        self._end = end
        self._stride = stride
        self._fail_on_data_loss = fail_on_data_loss
        self._read_timeout_ms = read_timeout_ms
        self._asked = start  # where the next pull starts
        self._in_flight: collections.deque[tuple[int, Future[PullAnswer]]] = collections.deque()

    def batches(self) -> Iterator[MessageBatch]:
        """The range's messages, answer by answer, in offset order."""
        deadline = time.monotonic() + self._read_timeout_ms / 1000.0
        while self._expected < self._end:
            try:
                self._ask()
                asked, future = self._in_flight.popleft()
                response = self._session.wait(future, _REQUEST_TIMEOUT_MS)
            except BrokerInternalError as exc:
                if self._wide or not str(exc).startswith(ANSWER_TOO_LONG):
                    raise
                self._wide = True  # a stored batch longer than the narrow channel takes
                self._session = self._sessions.session(self._route, wide=True)
                self._local = self._local_files()
                self._restart(self._stride)
                continue
            except ClientError as exc:
                if not is_failover_error(exc):
                    raise
                self._fail_over(exc)  # the member died: on from the next offset at its leader
                continue
            if response.status.code:
                refused = error_for_status(response.status, broker=self._queue.broker_name)
                if not is_failover_error(refused):
                    raise refused
                self._fail_over(refused)  # a follower (NOT_LEADER), or an election
                continue
            if asked > self._expected:  # asked past an answer that ended short: again
                self._restart(self._stride)
                continue
            next_offset = min(response.next_begin_offset, self._end)
            if response.pull_status in _ANSWERED:
                if next_offset <= self._expected:  # all of it came in an earlier answer
                    continue
                ranges = response.local_ranges
                if ranges:
                    local = self._local
                    batch = (
                        None
                        if local is None
                        else local.read(ranges, self._queue, self._expected, next_offset)
                    )
                    if batch is None:  # not readable here: through the transport from now on
                        self._local = None
                        self._restart(self._stride)
                        continue
                else:
                    batch = read_pulled_batches(
                        response.batches,
                        self._queue,
                        self._queue.broker_name,
                        self._expected,
                        next_offset,
                        None,
                    )
                if response.pull_status == _FOUND:
                    self._check_gaps(batch)
                self._expected = next_offset
                if next_offset < min(asked + self._stride, self._end):  # the byte cap
                    self._restart(max(1, next_offset - asked))
                deadline = time.monotonic() + self._read_timeout_ms / 1000.0
                if len(batch):
                    yield batch
                continue
            if response.pull_status == _OFFSET_ILLEGAL and next_offset > self._expected:
                self._lost(next_offset)  # below the min offset: removed during the read
                self._expected = next_offset
            elif time.monotonic() > deadline:
                raise ReadTimeoutError(
                    "queue range stopped arriving",
                    queue=str(self._queue),
                    next_offset=self._expected,
                    end_offset=self._end,
                    read_timeout_ms=self._read_timeout_ms,
                )
            self._restart(self._stride)  # the queue's end: wait there (held pulls)

    def _fail_over(self, error: ClientError) -> None:
        """The pulls failed with ``error``, a failover error: find the broker's current member
        (the leader a ``NOT_LEADER`` names, else the route looked up again, backing off while
        the group elects one) within ``read_timeout_ms``, open a session with it and ask again
        from the next offset to deliver (its log holds the same offsets). Raises ``error``
        when no endpoint answers or time is up."""
        deadline_ns = time.monotonic_ns() + self._read_timeout_ms * 1_000_000
        backoff = Backoff()
        while True:
            remaining_s = (deadline_ns - time.monotonic_ns()) / 1e9
            try:
                moved = self._resolver.follow_leader(
                    self._queue.topic, self._route, leader_hint(error), timeout_s=remaining_s
                )
                if moved != self._route:
                    self._session = self._sessions.session(moved, wide=self._wide)
                    self._route = moved
                    self._local = self._local_files()
                    self._restart(self._stride)
                    return
            except ClientError as exc:
                if not is_failover_error(exc) or remaining_s <= 0:
                    raise error from exc
            if not backoff.sleep(deadline_ns):
                raise error

    def _local_files(self) -> CommitLogFiles | None:
        """The broker's files as this process maps them, when the session was granted local
        reads and this read wants them."""
        session = self._session
        if not self._local_reads:
            return None
        return commit_log_files(
            session.local_read_dir,
            session.local_read_file_bytes,
            session.local_read_dir_id,
            self._route.broker_id,
        )

    def _ask(self) -> None:
        """Keep ``_PULLS_IN_FLIGHT`` pulls on their way, along the range."""
        queue = self._queue
        while len(self._in_flight) < _PULLS_IN_FLIGHT and self._asked < self._end:
            count = min(self._stride, self._end - self._asked)
            request = messages_pb2.PullMessageRequest(
                consumer_group=READER_GROUP,
                topic=queue.topic,
                queue_id=queue.queue_id,
                queue_offset=self._asked,
                max_msg_nums=count,
                max_bytes=PULL_MAX_BYTES,
                sub_expression="*",
                suspend_timeout_ms=_SUSPEND_MS,
                commit_offset=-1,
                local_read=self._local is not None,
            )
            future = self._session.request_async(request, _REQUEST_TIMEOUT_MS)
            self._in_flight.append((self._asked, future))
            self._asked += count

    def _restart(self, stride: int) -> None:
        """Drop the pulls in flight (their answers are not read) and ask again from the next
        offset to deliver."""
        self._in_flight.clear()
        self._asked = self._expected
        self._stride = stride

    def _check_gaps(self, batch: MessageBatch) -> None:
        """Fail (or go on) when offsets are missing from the answer: data removed meanwhile."""
        offsets = batch.queue_offsets
        if not len(offsets) or (
            offsets[0] == self._expected and offsets[-1] - offsets[0] == len(offsets) - 1
        ):  # one queue's offsets ascend: from the expected one, none missing
            return
        gaps = np.flatnonzero(np.diff(offsets, prepend=self._expected - 1) > 1)
        if len(gaps):
            at = int(gaps[0])
            self._lost(int(offsets[at]), int(offsets[at - 1]) + 1 if at else self._expected)

    def _lost(self, next_offset: int, expected: int | None = None) -> None:
        if self._fail_on_data_loss:
            raise DataLossError(
                "messages were removed from the queue during the read",
                queue=str(self._queue),
                expected_offset=self._expected if expected is None else expected,
                next_offset=next_offset,
            )


def _record_batches(
    batches: Iterator[MessageBatch], sub_expression: str, include_properties: bool
) -> Iterator[pa.RecordBatch]:
    """The answers, tag-filtered, as record batches of about ``_ROWS_PER_BATCH`` rows."""
    schema = arrow_schema(include_properties)
    subscription = build_subscription_data("-", sub_expression)
    codes = (
        None
        if subscription.is_sub_all
        else np.fromiter(subscription.codes, dtype=np.int64, count=len(subscription.codes))
    )
    gathered: list[MessageBatch] = []
    rows = 0
    for batch in batches:
        if codes is not None:
            keep = np.isin(batch.tag_hashes, codes)
            if keep.any():  # the tag strings of the hash matches, as the consumer's filter
                tags = batch.tag_array().to_pylist()
                keep &= np.fromiter(
                    (tag in subscription.tags for tag in tags), dtype=bool, count=len(tags)
                )
            if not keep.all():
                batch = batch.select(keep)
        if not len(batch):
            continue
        gathered.append(batch)
        rows += len(batch)
        if rows >= _ROWS_PER_BATCH:
            yield _to_batch(MessageBatch.concat(gathered), schema, include_properties)
            gathered, rows = [], 0
    if gathered:
        yield _to_batch(MessageBatch.concat(gathered), schema, include_properties)


def _to_batch(batch: MessageBatch, schema: pa.Schema, include_properties: bool) -> pa.RecordBatch:
    """One record batch of the row schema from messages of one queue, column by column."""
    count = len(batch)
    chunk = batch.chunks[0]
    timestamp = pa.timestamp("us", tz="UTC")
    columns: list[pa.Array] = [
        pa.repeat(pa.scalar(chunk.queue.topic, pa.string()), count),
        pa.repeat(pa.scalar(chunk.broker_name, pa.string()), count),
        pa.array(batch.queue_ids),
        pa.array(batch.queue_offsets),
        batch.property_array(PROPERTY_KEYS),
        batch.tag_array(),
        batch.body_array(),
    ]
    if include_properties:
        columns.append(
            pa.array(
                [
                    [(k, v) for k, v in m.properties.items() if k not in RESERVED_PROPERTY_NAMES]
                    for m in batch
                ],
                schema.field("properties").type,
            )
        )
    columns.append(pa.array(batch.born_timestamps_ms * 1000, timestamp))
    columns.append(pa.array(batch.store_timestamps_ms * 1000, timestamp))
    return pa.RecordBatch.from_arrays(columns, schema=schema)
