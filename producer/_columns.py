"""``ColumnSender``: a producer's columnar sends (``Producer.send_columns``), whole column sets
sent as record batches with no Python object per row.

A send takes its rows as columns (``_columns_input.py``: Arrow arrays, numpy arrays,
constants), places each row in a lane of its queue (``_columns_queues.py``: the queue, the
selector, or round robin batch by batch), and cuts each lane into record batches encoded
straight from the columns' buffers (:func:`~common.record_batch.encode_column_batch`, one pass
in C per batch under :data:`BATCH_BYTES`), every row checked as a ``Message`` of it would be.
All of a call's batches are encoded before the first is sent: a row that cannot be a message
fails the call, naming the row, with nothing sent.

Each batch then goes as an async send of its own (``LoneSends.submit``: an
:class:`~producer._attempt.Attempt` with its bytes, retried by RocketMQ's rules as any send,
the same bytes each time; a batch of a lane with a queue is pinned to it, one of no queue in
particular takes the next queue round robin and may be retried elsewhere). The call's future
completes with every row's result (:class:`~producer.ColumnSendResults`) when every batch is
stored, or fails with the first batch's error (the batches before and after it may be stored:
at least once, as a retried ``send_batch``). A sync send keeps :data:`SYNC_WINDOW` batches in
flight; an async one offers them all at once (an offer may wait while the broker
back-pressures, as ``send_async``'s does). The unique ids (``UNIQ_KEY``) come from a generator
of the sender's own (its own client hash), a 16-bit counter over the rows of each batch.

Caller: the façade (``Producer.send_columns``, ``send_columns_async``). Affects: the producer's
meter and hooks (a call is one send; its hooks see no ``Message``), the round robin counter.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import TYPE_CHECKING, Final, TypeAlias, cast

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageIllegalError,
    MessageQueue,
    MessageTooLargeError,
    UniqueMessageIdGenerator,
    call_hooks,
)
from aeromq.common import MAX_FRAMING_BYTES, check_topic, check_topic_sendable
from aeromq.common.record_batch import (
    BatchLimits,
    ColumnProblem,
    ColumnSet,
    describe_row_problem,
    encode_column_batch,
)
from aeromq.producer._attempt import Attempt
from aeromq.producer._batch import SendResults
from aeromq.producer._columns_input import ColumnValues, TextValues, column_set
from aeromq.producer._columns_queues import ColumnSelector, Lane, queue_lanes
from aeromq.producer._columns_result import BatchRows, ColumnSendResults, UniqueIdRun
from aeromq.producer._hooks import SendMessageContext, SendMode
from aeromq.producer._selector import QueueSelector

if TYPE_CHECKING:
    import pyarrow

    from aeromq.producer._async_sends import AsyncSends
    from aeromq.producer._send_path import SendPath

__all__ = ["BATCH_BYTES", "MAX_BATCH_RECORDS", "SYNC_WINDOW", "ColumnSender", "Properties"]

BATCH_BYTES: Final = 256 * 1024
"""The most bytes of one record batch of a columnar send (one row over it goes alone)."""
MAX_BATCH_RECORDS: Final = 8192
"""The most rows of one record batch: a pull asks for at most 8,192 messages (the broker's
``MAX_PULL_MESSAGES``), and answers with whole stored batches."""
SYNC_WINDOW: Final = 8
"""Batches a sync columnar send keeps in flight."""
_PLACEHOLDER_BODY: Final = b"columns"
_REQUEST_OVERHEAD: Final = 1024
"""Bytes of a send request around its batch (the envelope, the group, the queue id): room
left in the session's longest request (its topic on top)."""

Properties: TypeAlias = "Mapping[str, TextValues] | pyarrow.Array | pyarrow.ChunkedArray"
"""A send's properties: names and their columns, or an Arrow ``map<string, string>``."""


class _Encoded:
    """One batch of a call, encoded: its lane's queue, rows, bytes and unique ids."""

    __slots__ = ("batch", "ids", "queue", "rows")

    def __init__(
        self, queue: MessageQueue | None, rows: BatchRows, batch: bytes, ids: UniqueIdRun
    ) -> None:
        self.queue = queue
        self.rows = rows
        self.batch = batch
        self.ids = ids


class _Gather:
    """The call's future, completed once every batch is answered (or the first fails)."""

    __slots__ = ("_count", "_left", "_lock", "_results", "_rows", "future")

    def __init__(self, count: int, rows: list[BatchRows]) -> None:
        self.future: Future[ColumnSendResults] = Future()
        self._count = count
        self._rows = rows
        self._results: list[SendResults | None] = [None] * len(rows)
        self._left = len(rows)
        self._lock = threading.Lock()

    def answered(self, number: int, part: Future[SendResults]) -> None:
        """Batch ``number`` settled. Caller: a session's poller, or the retry thread."""
        error = part.exception()
        with self._lock:
            if self.future.done():
                return
            if error is not None:
                self.future.set_exception(error)
                return
            self._results[number] = part.result()
            self._left -= 1
            if self._left:
                return
        batches = cast(list[SendResults], self._results)  # every one set: none left
        self.future.set_result(ColumnSendResults(self._count, self._rows, batches))


class ColumnSender:
    """The columnar sends of one producer (see module); made by ``Producer.__init__``."""

    def __init__(self, path: SendPath, sends: AsyncSends) -> None:
        self._path = path
        self._sends = sends
        self._ids = UniqueMessageIdGenerator()
        self._counter = 0
        self._head_ms = -1
        self._head = b""
        self._lock = threading.Lock()

    def send(
        self,
        topic: str,
        bodies: ColumnValues,
        tags: TextValues | None,
        keys: TextValues | None,
        properties: Properties | None,
        queue: MessageQueue | None,
        selector: QueueSelector | ColumnSelector | None,
        arg: object,
        timeout_ms: int | None,
        asynchronous: bool,
    ) -> Future[ColumnSendResults]:
        """Check, encode and send a column set (see module): the future of its results.
        Raises (nothing sent) IllegalStateError before the start, IllegalArgumentError for
        bad columns, a queue of another topic or a selector's bad choice, and
        MessageIllegalError (MessageTooLargeError) naming the first row that cannot be a
        message."""
        path = self._path
        if not path.running:
            raise IllegalStateError("producer not started", group=path.group)
        check_topic(topic)
        check_topic_sendable(topic)
        columns = column_set(bodies, tags, keys, properties)
        count = columns.bodies.length
        if not count:
            raise IllegalArgumentError("nothing to send", group=path.group, topic=topic)
        started_ns = time.perf_counter_ns()
        context = self._before(topic, SendMode.ASYNC if asynchronous else SendMode.SYNC)
        try:
            chosen = selector if selector is not None else path._selector
            lanes = queue_lanes(topic, columns, path.router, queue, chosen, arg)
            encoded = self._encode(topic, columns, lanes)
        except BaseException as exc:
            path.meter.on_failed()
            path.after_send(context, exception=exc)
            raise
        gather = _Gather(count, [part.rows for part in encoded])
        gather.future.add_done_callback(self._observer(count, started_ns, context))
        self._submit(topic, encoded, gather, timeout_ms, asynchronous)
        return gather.future

    def _before(self, topic: str, mode: SendMode) -> SendMessageContext | None:
        """The hooks' ``send_message_before`` of a call (no messages: its rows are columns)."""
        hooks = self._path.hooks
        if not hooks:
            return None
        context = SendMessageContext(self._path.group, topic, (), mode, time.monotonic_ns())
        call_hooks(hooks, "send_message_before", context)
        return context

    def _observer(
        self, count: int, started_ns: int, context: SendMessageContext | None
    ) -> Callable[[Future[ColumnSendResults]], None]:
        path = self._path

        def settled(future: Future[ColumnSendResults]) -> None:
            error = future.exception()
            if error is not None:
                path.meter.on_failed()
                path.after_send(context, exception=error)
            else:
                path.meter.on_sent(count, time.perf_counter_ns() - started_ns)
                path.after_send(context, results=future.result())

        return settled

    def _unique_head(self, now_ms: int) -> bytes:
        """The unique ids' head at ``now_ms`` (made once per millisecond). Caller holds the lock."""
        if now_ms != self._head_ms:
            self._head = self._ids.next_id(now_ms)[:-4].encode()
            self._head_ms = now_ms
        return self._head

    def _limits(self, topic: str, lanes: list[Lane]) -> BatchLimits:
        """What one batch of the call may hold: the producer's sizes, and no more bytes than
        :data:`BATCH_BYTES` and the sessions of the brokers it may go to take in a request
        (a broker whose session cannot connect is left out: its sends fail as any other)."""
        path = self._path
        max_size = path.config.max_message_size
        batch_bytes = min(BATCH_BYTES, max_size + MAX_FRAMING_BYTES)
        router = path.router
        route = router.route(topic)
        names = {lane.queue.broker_name for lane in lanes if lane.queue is not None}
        if any(lane.queue is None for lane in lanes):
            names.update(queue.broker_name for queue in router.write_queues(route))
        sessions = path.require_sessions()
        for name in names:
            try:
                room = sessions.session(route.broker(name)).max_request_length
            except ClientError:
                continue
            if room > _REQUEST_OVERHEAD:
                batch_bytes = min(batch_bytes, room - _REQUEST_OVERHEAD - len(topic))
        return BatchLimits(MAX_BATCH_RECORDS, max_size, max_size, batch_bytes)

    def _encode(self, topic: str, columns: ColumnSet, lanes: list[Lane]) -> list[_Encoded]:
        """Every batch of the call, lane by lane; raises for the first row that cannot be a
        message."""
        path = self._path
        max_size = path.config.max_message_size
        limits = self._limits(topic, lanes)
        name = topic.encode()
        born_host = path._born_host
        out: list[_Encoded] = []
        for lane in lanes:
            rows = lane.rows
            stop = len(rows) if rows is not None else columns.bodies.length
            position = 0
            while position < stop:
                now_ms = time.time_ns() // 1_000_000
                with self._lock:  # the ids' counter: one call's batches at a time
                    head = self._unique_head(now_ms)
                    first = self._counter
                    batch, reached, problem = encode_column_batch(
                        name,
                        columns,
                        rows,
                        position,
                        stop,
                        limits,
                        born_timestamp_ms=now_ms,
                        born_host=born_host,
                        unique_head=head,
                        unique_counter=first,
                    )
                    if batch is None:
                        raise _refusal(columns, reached, problem, max_size)
                    self._counter = (first + reached - position) & 0xFFFF
                ids = UniqueIdRun(head.decode(), first, reached - position)
                out.append(_Encoded(lane.queue, BatchRows(rows, position, reached), batch, ids))
                position = reached
        return out

    def _submit(
        self,
        topic: str,
        encoded: list[_Encoded],
        gather: _Gather,
        timeout_ms: int | None,
        asynchronous: bool,
    ) -> None:
        """Each batch as an async send of its own (a sync call keeps :data:`SYNC_WINDOW` in
        flight); none more once the call failed."""
        path, sends = self._path, self._sends
        config = path.config
        retries = (
            config.retry_times_when_send_async_failed
            if asynchronous
            else config.retry_times_when_send_failed
        )
        timeout_ns = path.timeout(timeout_ms) * 1_000_000
        # the router reads an attempt's topic from its first message: one Message per call
        placeholder = [Message(topic, _PLACEHOLDER_BODY)]
        in_flight: list[Future[SendResults]] = []
        for number, part in enumerate(encoded):
            if gather.future.done():
                return
            if not asynchronous and len(in_flight) >= SYNC_WINDOW:
                _wait(in_flight.pop(0))
            attempt = Attempt(
                placeholder,
                part.batch,
                cast(list[str], part.ids),  # a lazy Sequence[str]: Attempt only reads it
                time.monotonic_ns() + timeout_ns,
                1 if part.queue is not None else 1 + retries,
                part.queue,
                None,
            )
            inner: Future[SendResults] = Future()
            inner.add_done_callback(functools.partial(gather.answered, number))
            sends.lone.submit(attempt, inner, single=False)
            in_flight.append(inner)


def _wait(future: Future[SendResults]) -> None:
    """Until ``future`` settles (its error is the call's, through the gather)."""
    try:
        future.exception()
    except BaseException:  # cancelled: the gather has it
        return


def _refusal(columns: ColumnSet, row: int, problem: int, max_size: int) -> ClientError:
    """The typed error of a row the encoder refused, naming it."""
    detail = describe_row_problem(columns, row, problem, max_size)
    name = ColumnProblem(problem).name
    if problem == ColumnProblem.BODY_TOO_LARGE:
        return MessageTooLargeError(
            "a row's body is over the maximum message size", row=row, detail=detail
        )
    if problem == ColumnProblem.BAD_COLUMN:
        return IllegalArgumentError("a row is not in its column", row=row, detail=detail)
    return MessageIllegalError("a row cannot be a message", row=row, problem=name, detail=detail)
