"""``PullMessage``: RocketMQ's pull semantics over the store, with long polling.

Carrier-independent: :meth:`PullProcessor.process` takes a ``PullMessageRequest`` and calls
``on_done(PullAnswer)`` exactly once, inline when the answer is ready, or later from the hold
service's thread when the pull was held. A :class:`~common.PullAnswer` is the answer's control
fields (a ``PullMessageResponse`` without ``batches``) beside the stored batches' bytes: the
transport session writes the batches as the envelope's raw section (:mod:`common._envelope`),
so they are never copied into a protobuf message nor serialised.

Outcomes (``status.code`` is 0 for all four; ``pull_status`` tells them apart):

==============  ==========================================================================
FOUND           messages from ``queue_offset`` on; ``next_begin_offset`` is last read + 1
NO_NEW_MSG      ``queue_offset`` is the queue's end (or the queue is empty and it is 0);
                held up to ``suspend_timeout_ms`` (capped) when asked, and answered again at
                the first arrival in the queue or at the deadline
NO_MATCHED_MSG  the tag filter matched none of the entries scanned; ``next_begin_offset``
                still moves past them
OFFSET_ILLEGAL  below the queue's min (next = min), beyond its max (next = max), or a
                non-zero offset in an empty queue
==============  ==========================================================================

``min_offset`` and ``max_offset`` are the queue's bounds at the read. A pull finds at most
``max_pull_messages`` messages and about ``max_pull_bytes`` (a request may ask for less; one
stored batch is always returned however large).

A FOUND answer carries the stored record batches (:mod:`common.record_batch`) that hold the
messages found, as the commit log holds them: a view of each in the mapped commit log, written
into the transport from there (no join, no decode, no object per message, no protobuf copy; a
SQL92 answer is joined once). The last batch goes whole: when the count cap falls inside it,
``next_begin_offset`` moves to its end (as a Kafka fetch returns whole batches), so no pull sends
a batch twice. A batch can hold records before ``queue_offset`` or of other tags; the consumer
keeps the ones in ``[queue_offset, next_begin_offset)`` that match (and checks each batch's CRC). Bad requests are answered with a non-zero ``status.code`` and
a ``key=value`` text, and counted by code in :attr:`PullProcessor.errors`: an unknown topic
(TOPIC_NOT_EXIST), a topic without read permission (NO_PERMISSION), a bad queue id, offset,
count, commit offset or group, or none (INVALID_PARAMETER), a tag expression that does not parse
(SUBSCRIPTION_PARSE_FAILED), and so does a SQL92 expression that does not compile.

In a broker group (``leadership`` given) only the leader serves pulls; another member answers
NOT_LEADER naming the leader (``Status.leader``).

SQL92 subscriptions (``expression_type`` SQL92): the expression is compiled once (cached) and
:func:`apply_sql92` keeps the messages of a get whose properties it selects (``TAGS`` among
them); a FOUND get none of whose messages match is answered NO_MATCHED_MSG, its next offset
still past them. The whole SQL92 step is that one function, called on each get result.

``commit_offset`` commits the group's offset of the queue when it is positive: 0 is proto3's
default, so a pull that does not set the field would otherwise reset its group to offset 0
(commit offset 0 through the control plane's ``UpdateOffset``). One past the queue's max offset
is refused (INVALID_PARAMETER), and so is a pull without a consumer group.
"""

from __future__ import annotations

import collections
import struct
import time
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Final

import numpy as np

from aeromq.broker.observability._topic_meter import TopicMeter
from aeromq.broker.processor.leadership import Leadership, refusal
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.store import (
    GetMessageResult,
    GetMessageStatus,
    MessageStore,
    PutMessageResult,
    TopicConfig,
)
from aeromq.common import (
    HEADER_STRUCT,
    ClientError,
    PullAnswer,
    PullRequestFields,
    RecordBatch,
    ResponseCode,
    Sql92Filter,
    StoredPullAnswer,
    build_subscription_data,
    check_group,
    compile_sql92,
    read_total_length,
    stored_properties,
)
from aeromq.common.record_batch import BASE_PHYSICAL_OFFSET_OFFSET
from aeromq.proto import messages_pb2

__all__ = [
    "MAX_PULL_BYTES",
    "MAX_PULL_MESSAGES",
    "PullDone",
    "PullProcessor",
    "PullRequest",
    "apply_sql92",
    "local_ranges",
    "pull_status",
    "sql92_of",
]

MAX_PULL_MESSAGES: Final = 8192
"""The most messages one pull finds (a request asks for up to this many; RocketMQ's broker
caps at 32 messages, which its per-message transfer needs; whole stored batches make larger
pulls cheap, and a bulk reader's pulls of thousands spread each pull's fixed cost thin).
``MAX_PULL_BYTES`` usually binds first for such pulls."""
MAX_PULL_BYTES: Final = 1024 * 1024
"""About the most bytes of stored batches one pull answers with (one batch always goes)."""

PullDone = Callable[[PullAnswer], None]
PullRequest = messages_pb2.PullMessageRequest | PullRequestFields
"""A pull request as the processor reads it: protobuf's, or its fields read by the session's
native reader (the same names)."""
_Context = tuple[PullDone, str, int, int, bool, bool]
"""A pull's ``on_done``, topic, offset, start, whether local, whether its batches are joined."""

_FOUND: Final = messages_pb2.FOUND
_NO_NEW_MSG: Final = messages_pb2.NO_NEW_MSG
_NO_MATCHED_MSG: Final = messages_pb2.NO_MATCHED_MSG
_OFFSET_ILLEGAL: Final = messages_pb2.OFFSET_ILLEGAL
_TAG: Final = messages_pb2.TAG
_SQL92: Final = messages_pb2.SQL92
_GOOD_GROUPS_LIMIT: Final = 4096
_TOPIC_CACHE_LIMIT: Final = 10_000
_BASE_QUEUE_OFFSET_FIELD: Final = 2  # of HEADER_STRUCT's fields
_COUNT_FIELD: Final = 8
_PHYSICAL_OFFSET: Final = struct.Struct("<q")

_STATUS: Final[dict[GetMessageStatus, messages_pb2.PullStatus.ValueType]] = {
    GetMessageStatus.FOUND: _FOUND,
    GetMessageStatus.NO_MATCHED_MSG: _NO_MATCHED_MSG,
    GetMessageStatus.MESSAGE_WAS_REMOVING: _NO_MATCHED_MSG,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: _NO_NEW_MSG,
    GetMessageStatus.OFFSET_TOO_SMALL: _OFFSET_ILLEGAL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: _OFFSET_ILLEGAL,
}


_STATUS_BY_ID: Final = {id(status): code for status, code in _STATUS.items()}
"""``_STATUS`` by the statuses' ids: an enum member hashes by a Python ``__hash__``, a call a
pull; the members are singletons."""


def pull_status(result: GetMessageResult, offset: int) -> messages_pb2.PullStatus.ValueType:
    """The pull status of a get, as RocketMQ's ``PullMessageProcessor`` maps it."""
    status = _STATUS_BY_ID.get(id(result.status))
    if status is None:  # NO_MESSAGE_IN_QUEUE
        return _NO_NEW_MSG if offset == 0 else _OFFSET_ILLEGAL
    return status


@lru_cache(maxsize=1024)
def _tag_codes(expression: str) -> tuple[int, ...] | None:
    """The tag hash codes an expression selects (None: every tag); raises on a bad one."""
    subscription = build_subscription_data("-", expression)
    return None if subscription.is_sub_all else tuple(subscription.codes)


def sql92_of(request: PullRequest) -> Sql92Filter | None:
    """The compiled filter of a SQL92 pull (None for a tag pull); raises on a bad one."""
    if request.expression_type != messages_pb2.SQL92:
        return None
    return compile_sql92(request.sub_expression)


def apply_sql92(result: GetMessageResult, sql: Sql92Filter | None, offset: int) -> GetMessageResult:
    """``result`` with only the stored batches holding a message that ``sql`` selects among
    those in ``[offset, next_begin_offset)`` (all of them when None); a FOUND result left empty
    becomes NO_MATCHED_MSG (see the module doc). The consumer selects again within the batches
    it gets (as it does for tags). Properties are decoded per message: a SQL92 pull costs that."""
    if sql is None or not result.data:
        return result
    matches = sql.matches
    data = memoryview(result.data)
    end = result.next_begin_offset
    kept: list[memoryview] = []
    found = 0
    position = 0
    while position < len(data):
        batch = RecordBatch(data, position)
        first = max(offset - batch.base_queue_offset, 0)
        last = min(end - batch.base_queue_offset, batch.count)
        hits = sum(1 for i in range(first, last) if matches(stored_properties(batch, i)))
        if hits:
            kept.append(data[position : position + batch.length])
            found += hits
        position += batch.length
    if found == result.message_count and len(kept) == result.batch_count:
        return result
    result.data = b"".join(kept)
    result.batch_count = len(kept)
    result.message_count = found
    if not found and result.status is GetMessageStatus.FOUND:
        result.status = GetMessageStatus.NO_MATCHED_MSG
    return result


def local_ranges(views: Sequence[memoryview]) -> bytes:
    """The (commit log offset, length) of each stored batch in ``views`` (views of the mapped
    commit log, whole batches), as little-endian int64 pairs: a local read's answer. Each
    batch's offset is its own header's base physical offset (written by the commit log where it
    landed, checked on every read of it)."""
    ranges = np.empty(2 * len(views), dtype="<i8")
    unpack = _PHYSICAL_OFFSET.unpack_from
    ranges[0::2] = [unpack(view, BASE_PHYSICAL_OFFSET_OFFSET)[0] for view in views]
    ranges[1::2] = [view.nbytes for view in views]
    return ranges.tobytes()


def _whole_batches_end(result: GetMessageResult, last: memoryview) -> int:
    """Where the next pull starts when the answer's ``last`` batch is taken whole: a count cap
    that falls inside a stored batch would have the consumer pull the rest of it again (and the
    broker send all of it again), so the answer's next offset moves to the batch's end, as a
    Kafka fetch returns whole batches (the consumer keeps what matches, as it does anyway)."""
    if read_total_length(last, 0)[0] != last.nbytes:
        last = last[_last_batch_start(last) :]  # a SQL92 answer: its batches joined
    header = HEADER_STRUCT.unpack_from(last, 0)
    end = int(header[_BASE_QUEUE_OFFSET_FIELD]) + int(header[_COUNT_FIELD])
    return max(result.next_begin_offset, min(end, result.max_offset))


def _last_batch_start(data: memoryview) -> int:
    """Where the last of the batches joined in ``data`` starts (a walk of their lengths)."""
    position = last = 0
    while position < data.nbytes:
        last = position
        position += read_total_length(data, position)[0]
    return last


def _ignore(_: PutMessageResult) -> None:
    """A pull's commit through the group's log is not waited for (the next one carries on)."""


class PullProcessor:
    """Answers pulls from ``store``, holding NO_NEW_MSG answers in ``hold`` (see module).

    ``max_messages`` and ``max_bytes`` cap every batch; ``long_polling`` False answers
    NO_NEW_MSG at once whatever the request asks.
    """

    def __init__(
        self,
        store: MessageStore,
        hold: PullHoldService,
        broker_name: str,
        *,
        max_messages: int = MAX_PULL_MESSAGES,
        max_bytes: int = MAX_PULL_BYTES,
        long_polling: bool = True,
        meter: TopicMeter | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self._store = store
        self._leadership = leadership
        self.meter = meter or TopicMeter()
        self._hold = hold
        self.broker_name = broker_name
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        self.long_polling = long_polling
        self.errors: collections.Counter[int] = collections.Counter()
        self.pulls = 0
        self.held = 0
        self.messages_out = 0
        self.local_answers = 0  # FOUND answers given as local ranges
        self._good_groups: set[str] = set()  # groups that passed check_group: not again
        self._readable: dict[str, TopicConfig] = {}  # topics' configs found readable: not again

    @property
    def hold_service(self) -> PullHoldService:
        """The long-poll hold service this processor holds pulls in."""
        return self._hold

    def process(self, request: PullRequest, on_done: PullDone, *, local: bool = False) -> None:
        """Answer ``request`` through ``on_done`` (inline, or later if held). Never raises for
        a bad request: it is answered with its error code. ``local``: a FOUND answer names
        where its batches are in the commit log (``local_ranges``) instead of carrying them
        (the session granted local reads and the request asked; not for SQL92, whose answer
        is joined). A tag pull's get, its hold and its answer make no call they can do
        without (the steps inline, one closure for the hold): a consumer keeping up pulls
        about once a message."""
        self.pulls += 1
        started_ns = time.perf_counter_ns()
        topic = request.topic
        queue_id = request.queue_id
        response = messages_pb2.PullMessageResponse()
        leadership = self._leadership
        if leadership is not None and (code := leadership.read_refusal()):
            self.errors[code] += 1
            refusal(leadership, code, f"pull of topic={topic!r}", response.status)
            on_done(PullAnswer(response, b""))
            return
        error = self._check(request)
        if error is not None:
            code, text = error
            self.errors[code] += 1
            response.status.code = code
            response.status.message = text
            on_done(PullAnswer(response, b""))
            return
        sql: Sql92Filter | None = None
        codes: tuple[int, ...] | None = None
        try:
            if request.expression_type == _SQL92:
                sql = compile_sql92(request.sub_expression)
            else:
                codes = _tag_codes(request.sub_expression)
        except ClientError as exc:
            code = ResponseCode.SUBSCRIPTION_PARSE_FAILED
            self.errors[code] += 1
            response.status.code = code
            kind = "tag" if request.expression_type == _TAG else "SQL92"
            response.status.message = f"bad {kind} expression: {exc}"
            on_done(PullAnswer(response, b""))
            return
        if request.commit_offset > 0 and request.consumer_group:
            if leadership is None:
                self._store.consumer_offsets.commit_offset(
                    request.consumer_group, topic, queue_id, request.commit_offset
                )
            else:  # through the group's log; the pull does not wait for it
                self._store.commit_offset(
                    request.consumer_group, topic, queue_id, request.commit_offset, _ignore
                )
        max_messages = request.max_msg_nums or self.max_messages
        max_messages = min(max_messages, self.max_messages)
        max_bytes = min(request.max_bytes or self.max_bytes, self.max_bytes)
        offset = request.queue_offset
        local = local and sql is None
        get_batches = self._store.get_batches
        views: list[memoryview] = []
        suspend_ms = request.suspend_timeout_ms
        holds = suspend_ms > 0 and self.long_polling
        status: messages_pb2.PullStatus.ValueType | None
        queue = self._store.queues.by_key.get((topic, queue_id))  # (no get_max_offset call)
        if holds and offset == (queue.max_offset if queue is not None else 0):
            # a caught-up consumer's pull: NO_NEW_MSG whatever the get would read (the queue's
            # end, or 0 for an empty or unknown queue), so held without one
            status = _NO_NEW_MSG
        else:
            if sql is None:  # the batches as views of the commit log: no join
                result = get_batches(topic, queue_id, offset, max_messages, max_bytes, codes, views)
            else:
                result, views = self._get_sql92(
                    topic, queue_id, offset, max_messages, max_bytes, sql
                )
            status = _STATUS_BY_ID.get(id(result.status))
            if status is None:  # NO_MESSAGE_IN_QUEUE
                status = _NO_NEW_MSG if offset == 0 else _OFFSET_ILLEGAL
        context = (on_done, topic, offset, started_ns, local, sql is not None)
        if status == _NO_NEW_MSG and holds:
            self.held += 1

            def wake(arrived: bool) -> None:
                views: list[memoryview] = []
                if sql is None:
                    again = get_batches(
                        topic, queue_id, offset, max_messages, max_bytes, codes, views
                    )
                else:
                    again, views = self._get_sql92(
                        topic, queue_id, offset, max_messages, max_bytes, sql
                    )
                again_status = _STATUS_BY_ID.get(id(again.status))
                if again_status is None:
                    again_status = _NO_NEW_MSG if offset == 0 else _OFFSET_ILLEGAL
                self._answer(response, again, views, again_status, context)

            self._hold.hold(topic, queue_id, offset, suspend_ms, wake)
            return
        self._answer(response, result, views, status, context)

    def _get_sql92(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_messages: int,
        max_bytes: int,
        sql: Sql92Filter,
    ) -> tuple[GetMessageResult, list[memoryview]]:
        """A SQL92 pull's get: the batches joined, then filtered (``apply_sql92``)."""
        got = self._store.get_batches(topic, queue_id, offset, max_messages, max_bytes)
        got = apply_sql92(got, sql, offset)
        return got, [memoryview(got.data)] if got.data else []

    def _answer(
        self,
        response: messages_pb2.PullMessageResponse,
        result: GetMessageResult,
        views: list[memoryview],
        status: messages_pb2.PullStatus.ValueType,
        context: _Context,
    ) -> None:
        """Answer a pull with ``result`` through its ``on_done``; ``context`` is the pull's
        (``on_done``, topic, offset, start, whether local, whether its batches are joined)."""
        on_done, topic, offset, started_ns, local, joined = context
        response.pull_status = status
        response.next_begin_offset = result.next_begin_offset
        response.min_offset = result.min_offset
        response.max_offset = result.max_offset
        served = 0
        size = 0
        if views:
            last = views[-1]
            if joined:  # a SQL92 answer: its batches joined into one view
                response.next_begin_offset = _whole_batches_end(result, last)
            else:  # each view one whole batch: the last one's header, inline
                header = HEADER_STRUCT.unpack_from(last, 0)
                end = header[_BASE_QUEUE_OFFSET_FIELD] + header[_COUNT_FIELD]
                response.next_begin_offset = max(
                    result.next_begin_offset, min(end, result.max_offset)
                )
            size = last.nbytes if len(views) == 1 else sum(view.nbytes for view in views)
            # whole batches go out: every record from the pulled offset to the answer's next
            # one (a filter's misses included; the consumer drops those)
            served = response.next_begin_offset - offset
            self.messages_out += served
        self.meter.on_pulled(topic, served, size, time.perf_counter_ns() - started_ns)
        if local and views:
            response.local_ranges = local_ranges(views)
            for view in views:
                view.release()
            self.local_answers += 1
            on_done(PullAnswer(response, b""))
            return
        if views:  # FOUND: the session writes it in one native call (common._pull_envelope)
            on_done(StoredPullAnswer(response, pieces=views))
            return
        on_done(PullAnswer(response, b""))

    def _check(self, request: PullRequest) -> tuple[int, str] | None:
        """The error code and text of a request that cannot be served, or None."""
        topic = request.topic
        config = self._store.topic_config.by_name.get(topic)  # (a call fewer a pull)
        if config is None:
            return ResponseCode.TOPIC_NOT_EXIST, f"no such topic: topic={topic!r}"
        if config is not self._readable.get(topic):  # (a frozen config, checked once)
            if not config.is_readable:
                return ResponseCode.NO_PERMISSION, f"topic is not readable: topic={topic!r}"
            if len(self._readable) >= _TOPIC_CACHE_LIMIT:
                self._readable.clear()
            self._readable[topic] = config
        queue_id = request.queue_id
        if not 0 <= queue_id < config.read_queue_nums:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"bad queue id: topic={topic!r} queue_id={queue_id} "
                f"read_queue_nums={config.read_queue_nums}",
            )
        if request.queue_offset < 0:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"queue offset must be >= 0: queue_offset={request.queue_offset}",
            )
        if request.max_msg_nums < 0 or request.max_bytes < 0:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"max_msg_nums and max_bytes must be >= 0: max_msg_nums={request.max_msg_nums} "
                f"max_bytes={request.max_bytes}",
            )
        group = request.consumer_group
        if group not in self._good_groups:
            try:
                check_group(group)
            except ClientError as exc:
                return ResponseCode.INVALID_PARAMETER, f"bad consumer group: {exc}"
            if len(self._good_groups) < _GOOD_GROUPS_LIMIT:
                self._good_groups.add(group)
        commit_offset = request.commit_offset
        if commit_offset > 0:
            max_offset = self._store.get_max_offset(topic, queue_id)
            if commit_offset > max_offset:
                return (
                    ResponseCode.INVALID_PARAMETER,
                    f"commit offset past the queue's max offset: commit_offset={commit_offset} "
                    f"max_offset={max_offset}",
                )
        return None
