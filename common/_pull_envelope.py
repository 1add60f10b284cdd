"""A pull's request and its stored answer as they cross the session envelope, each in one native
call at the broker.

A consumer keeping up pulls about once a message (``common/_envelope.py`` draws the envelope).
The broker's side of it has a fast codec here, and a reference in Python beside each, which the
native one matches field for field (request) or byte for byte (answer), tested over generated
values:

- :class:`PullRequestFields`: a pull request's ids and ``PullMessageRequest`` fields, named as
  protobuf names them (the pull processor reads either form alike), read by
  :func:`read_pull_request` in one pass in C (``record_batch/_pull_envelope.c``) from a
  request's bytes; None for every other request (a send, a CONNECT, an unknown field, bytes that
  do not parse), which the broker then parses with protobuf as before.
  :func:`read_pull_request_py` is the same over protobuf, the reference. Without the native
  module :func:`read_pull_request` gives None: every request takes protobuf's path.
- :class:`StoredPullAnswer`: a FOUND answer whose ``PullMessageResponse`` holds its pull status
  and three offsets and nothing else, its batches as pieces (views of the commit log). Its
  envelope, ``[head, *pieces, tail]`` for one vectored offer, is made by
  :func:`stored_pull_envelope` in one native call, else by :func:`stored_pull_envelope_py`
  (protobuf's serialisation and :func:`~common.encode_envelope_around`).

- :class:`PullRequestBody`: a pull request as the consumer makes it (the ``PullMessageRequest``
  fields, no ids), its envelope written by :func:`encode_pull_request` in one native call, byte
  for byte what :func:`pull_request_py` (protobuf's serialisation) writes.
- :class:`PulledAnswerFields`: the same answer as the client reads it back, its ids, pull status,
  offsets and raw section, read by :func:`read_pulled_answer` in one native call straight from
  the log buffer it was polled from, and held as a :class:`PulledAnswer`; None for every other
  answer (a refusal with its status, a local read's ranges, another body, bytes that do not
  parse), which the client then reads with ``split_raw_section`` and protobuf as before.
  :func:`read_pulled_answer_py` is the same over those two, the reference: where the native
  reader reads an answer, it reads what the reference does (it may leave to protobuf an odd
  encoding the reference reads, such as an empty ``batches`` field).

Callers: the broker's session dispatch (``broker/session/_dispatch.py``: requests) and answer
writing (``broker/session/_answer_envelopes.py``: answers); the pull processor makes the
answers (``broker/processor/pull.py``). No I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, NamedTuple

from google.protobuf import unknown_fields

from aeromq.common._envelope import (
    ENVELOPE_HEAD_MAX_LENGTH,
    RESPONSE_FIELD_NUMBERS,
    encode_envelope,
    encode_envelope_around,
    split_raw_section,
)
from aeromq.common._errors import CorruptMessageError
from aeromq.common._pull_answer import PullAnswer
from aeromq.proto import common_pb2, messages_pb2, session_pb2

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "PullRequestBody",
    "PullRequestFields",
    "PulledAnswer",
    "PulledAnswerFields",
    "StoredPullAnswer",
    "encode_pull_request",
    "pull_request_py",
    "read_pull_request",
    "read_pull_request_py",
    "read_pulled_answer",
    "read_pulled_answer_py",
    "stored_pull_envelope",
    "stored_pull_envelope_py",
]

_PULL_FIELD: Final = RESPONSE_FIELD_NUMBERS["pull"]


class PullRequestFields(NamedTuple):
    """A pull request's ids and fields, as ``TransportRequest`` and ``PullMessageRequest`` name
    them (see module); made by the native reader without a protobuf message, or by
    :func:`read_pull_request_py`."""

    correlation_id: int
    session_id: int
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    max_bytes: int
    sub_expression: str
    expression_type: int
    suspend_timeout_ms: int
    commit_offset: int
    local_read: bool

    def message(self) -> messages_pb2.PullMessageRequest:
        """The request as protobuf's ``PullMessageRequest`` (tests, tools)."""
        return PullRequestBody(*self[2:]).message()


def read_pull_request_py(data: bytes) -> PullRequestFields | None:
    """:func:`read_pull_request` over protobuf: the reference of ``_pull_envelope.c``."""
    try:
        request = session_pb2.TransportRequest.FromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeError of a deep recursion
        return None
    if request.WhichOneof("body") != "pull":
        return None
    pull = request.pull
    if len(unknown_fields.UnknownFieldSet(request)) or len(unknown_fields.UnknownFieldSet(pull)):
        return None
    return PullRequestFields(
        request.correlation_id,
        request.session_id,
        pull.consumer_group,
        pull.topic,
        pull.queue_id,
        pull.queue_offset,
        pull.max_msg_nums,
        pull.max_bytes,
        pull.sub_expression,
        pull.expression_type,
        pull.suspend_timeout_ms,
        pull.commit_offset,
        pull.local_read,
    )


def _no_fast_path(data: bytes) -> None:
    """Without the native module: every request goes through protobuf (see module)."""
    del data


read_pull_request: Final[Callable[[bytes], PullRequestFields | None]] = (
    _no_fast_path if _native is None else functools.partial(_native.pull_request, PullRequestFields)
)
"""A pull request's fields read from the bytes of a ``TransportRequest``, or None for any other
request (see module): one native call (a ``partial``, no Python frame); None without the
native module."""


class StoredPullAnswer(PullAnswer):
    """A FOUND pull's answer whose ``response`` holds ``pull_status``, ``next_begin_offset``,
    ``min_offset`` and ``max_offset`` and nothing else (no status, no local ranges), its stored
    batches as ``pieces`` (see module): the answer the session writes in one native call."""

    __slots__ = ()


def stored_pull_envelope_py(
    correlation_id: int, session_id: int, answer: PullAnswer
) -> tuple[list[bytes | memoryview] | bytes, int]:
    """:func:`stored_pull_envelope` in Python: the reference of ``_pull_envelope.c``, and the
    way of any pull answer (its batches, if any, as the raw section)."""
    body = answer.response.SerializeToString()
    pieces = answer.pieces
    if not pieces:
        data = encode_envelope(correlation_id, session_id, _PULL_FIELD, body)
        return data, len(data)
    size = sum(memoryview(piece).nbytes for piece in pieces)
    head, tail = encode_envelope_around(correlation_id, session_id, _PULL_FIELD, body, size)
    return [head, *pieces, tail], len(head) + size + len(tail)


def _stored_pull_envelope_native(
    correlation_id: int, session_id: int, answer: PullAnswer
) -> tuple[list[bytes | memoryview] | bytes, int]:
    response = answer.response
    pieces: Sequence[bytes | memoryview] = answer._pieces  # a stored answer's: never empty
    return _native.pull_answer(
        correlation_id,
        session_id,
        response.pull_status,
        response.next_begin_offset,
        response.min_offset,
        response.max_offset,
        pieces,
    )


stored_pull_envelope: Final = (
    stored_pull_envelope_py if _native is None else _stored_pull_envelope_native
)
"""``(correlation_id, session_id, answer) -> (pieces to offer, length)``: the envelope of a
:class:`StoredPullAnswer` around its batches (see module), in one native call when built."""


class PulledAnswerFields(NamedTuple):
    """A pull answer's ids and ``PullMessageResponse`` fields as the client reads them back (see
    module), ``batches`` its raw section's bytes (empty without one)."""

    correlation_id: int
    session_id: int
    pull_status: int
    next_begin_offset: int
    min_offset: int
    max_offset: int
    batches: bytes


_ANSWER_FIELDS: Final = frozenset(("pull_status", "next_begin_offset", "min_offset", "max_offset"))


def read_pulled_answer_py(buffer: Buffer, offset: int, length: int) -> PulledAnswerFields | None:
    """:func:`read_pulled_answer` over ``split_raw_section`` and protobuf: the reference of
    ``_pull_envelope.c``."""
    view = memoryview(buffer).cast("B")
    if offset < 0 or length < 0 or offset + length > view.nbytes:
        return None
    data = bytes(view[offset : offset + length])
    try:
        section = split_raw_section(data[:ENVELOPE_HEAD_MAX_LENGTH], length)
    except CorruptMessageError:
        return None
    raw = b""
    if section is not None:
        end = section.offset + section.length
        raw = data[section.offset : end]
        data = data[: section.tag_offset] + data[end:]
    try:
        response = session_pb2.TransportResponse.FromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeError of a deep recursion
        return None
    if response.WhichOneof("body") != "pull":
        return None
    pull = response.pull
    if len(unknown_fields.UnknownFieldSet(response)) or len(unknown_fields.UnknownFieldSet(pull)):
        return None
    if any(field.name not in _ANSWER_FIELDS for field, _ in pull.ListFields()):
        return None
    return PulledAnswerFields(
        response.correlation_id,
        response.session_id,
        pull.pull_status,
        pull.next_begin_offset,
        pull.min_offset,
        pull.max_offset,
        raw,
    )


def _no_pulled_answer(buffer: Buffer, offset: int, length: int) -> None:
    """Without the native module: every answer goes through protobuf (see module)."""
    del buffer, offset, length


read_pulled_answer: Final[Callable[[Buffer, int, int], PulledAnswerFields | None]] = (
    _no_pulled_answer
    if _native is None
    else functools.partial(_native.pulled_answer, PulledAnswerFields)
)
"""A pull answer read from the ``length`` bytes at ``offset`` of ``buffer`` (a log buffer, or
any buffer), or None for any other answer (see module): one native call (a ``partial``, no
Python frame); None without the native module."""

_OK: Final = common_pb2.Status()
"""The status of every :class:`PulledAnswer`: code 0 (a refusal is read by protobuf). Shared:
read it, never change it."""


class PulledAnswer(PullAnswer):
    """A :class:`~common.PullAnswer` read by :func:`read_pulled_answer`: its ``fields`` (a
    :class:`PulledAnswerFields`) hold everything; its status is always success, and its
    ``response``, a ``PullMessageResponse``, is made each time it is asked for (a reader keeping
    up reads ``fields``)."""

    __slots__ = ("fields",)

    def __init__(self, fields: PulledAnswerFields) -> None:  # (PullAnswer's slots set here)
        self.fields = fields
        self._batches = fields.batches
        self._pieces = ()

    @property
    def response(self) -> messages_pb2.PullMessageResponse:  # type: ignore[override]  # made
        fields = self.fields
        return messages_pb2.PullMessageResponse(
            pull_status=fields.pull_status,  # type: ignore[arg-type]  # an open enum: any i32
            next_begin_offset=fields.next_begin_offset,
            min_offset=fields.min_offset,
            max_offset=fields.max_offset,
        )

    @property
    def status(self) -> common_pb2.Status:
        return _OK

    @property
    def pull_status(self) -> messages_pb2.PullStatus.ValueType:
        return self.fields.pull_status  # type: ignore[return-value]  # an open enum: any i32

    @property
    def next_begin_offset(self) -> int:
        return self.fields.next_begin_offset

    @property
    def min_offset(self) -> int:
        return self.fields.min_offset

    @property
    def max_offset(self) -> int:
        return self.fields.max_offset

    @property
    def local_ranges(self) -> bytes:
        return b""


class PullRequestBody(NamedTuple):
    """A pull request's ``PullMessageRequest`` fields, as protobuf names them, for the client
    session to send (see module): ``encode_pull_request`` writes its envelope. The broker reads
    it back as a :class:`PullRequestFields`."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: int
    max_msg_nums: int
    max_bytes: int
    sub_expression: str
    expression_type: int
    suspend_timeout_ms: int
    commit_offset: int
    local_read: bool

    def message(self) -> messages_pb2.PullMessageRequest:
        """The request as protobuf's ``PullMessageRequest`` (tests, tools)."""
        return messages_pb2.PullMessageRequest(
            consumer_group=self.consumer_group,
            topic=self.topic,
            queue_id=self.queue_id,
            queue_offset=self.queue_offset,
            max_msg_nums=self.max_msg_nums,
            max_bytes=self.max_bytes,
            sub_expression=self.sub_expression,
            expression_type=self.expression_type,  # type: ignore[arg-type]  # an open enum: any i32
            suspend_timeout_ms=self.suspend_timeout_ms,
            commit_offset=self.commit_offset,
            local_read=self.local_read,
        )


def pull_request_py(correlation_id: int, session_id: int, body: PullRequestBody) -> bytes:
    """:func:`encode_pull_request` over protobuf: the reference of ``_pull_envelope.c``, and its
    fallback."""
    request = session_pb2.TransportRequest(
        correlation_id=correlation_id, session_id=session_id, pull=body.message()
    )
    return request.SerializeToString()


encode_pull_request: Final[Callable[[int, int, PullRequestBody], bytes]] = (
    pull_request_py if _native is None else _native.pull_request_encode
)
"""``(correlation_id, session_id, body) -> bytes``: a pull request's envelope, ready to offer
(see module), in one native call when built; a value out of its field's range raises
``ValueError`` and one of the wrong type ``TypeError``, as protobuf does."""
