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

Callers: the broker's session dispatch (``broker/session/_dispatch.py``: requests) and answer
writing (``broker/session/_answer_envelopes.py``: answers); the pull processor makes the
answers (``broker/processor/pull.py``). No I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Final, NamedTuple

from google.protobuf import unknown_fields

from aeromq.common._envelope import (
    RESPONSE_FIELD_NUMBERS,
    encode_envelope,
    encode_envelope_around,
)
from aeromq.common._pull_answer import PullAnswer
from aeromq.proto import messages_pb2, session_pb2

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = [
    "PullRequestFields",
    "StoredPullAnswer",
    "read_pull_request",
    "read_pull_request_py",
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
