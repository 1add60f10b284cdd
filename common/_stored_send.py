"""A send's request and its stored answer as they cross the session envelope at the broker, each
in one native call.

A one-at-a-time producer's send is one request and one answer (``common/_envelope.py`` draws
the envelope). The broker's side of them has a fast codec here, and a reference in Python
beside each, which the native one matches field for field (request) or byte for byte (answer),
tested over generated values:

- :class:`SendRequestFields`: a send request's ids and ``SendMessageRequest`` fields, named as
  protobuf names them (the send processor reads either form alike), read by
  :func:`read_send_request` in one pass in C (``record_batch/_send_fields.c``) from a
  request's bytes; None for every other request (a pull, a CONNECT, an unknown field, bytes that
  do not parse), which the broker then parses with protobuf as before.
  :func:`read_send_request_py` is the same over protobuf, the reference. Without the native
  module :func:`read_send_request` gives None: every request takes protobuf's path.
- :class:`StoredSendAnswer`: a stored send's answer (SEND_OK, no status): its queue, offsets,
  count, store host and broker name, whose envelope :func:`stored_send_envelope` writes in one
  native call, else :func:`stored_send_envelope_py` (protobuf's serialisation of the
  ``TransportResponse``).

Callers: the broker's session dispatch (``broker/session/_dispatch.py``: requests) and answer
writing (``broker/session/_answer_envelopes.py``: answers); the send processor makes the
answers (``broker/processor/send.py``). No I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, NamedTuple

from google.protobuf import unknown_fields

from aeromq.proto import messages_pb2, session_pb2

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = [
    "SendRequestFields",
    "StoredSendAnswer",
    "read_send_request",
    "read_send_request_py",
    "stored_send_envelope",
    "stored_send_envelope_py",
]


class SendRequestFields(NamedTuple):
    """A send request's ids and fields, as ``TransportRequest`` and ``SendMessageRequest``
    name them (see module); made by the native reader without a protobuf message, or by
    :func:`read_send_request_py`."""

    correlation_id: int
    session_id: int
    producer_group: str
    topic: str
    queue_id: int
    batch: bytes

    def message(self) -> messages_pb2.SendMessageRequest:
        """The request as protobuf's ``SendMessageRequest`` (tests, tools)."""
        return messages_pb2.SendMessageRequest(
            producer_group=self.producer_group,
            topic=self.topic,
            queue_id=self.queue_id,
            batch=self.batch,
        )


def read_send_request_py(data: bytes) -> SendRequestFields | None:
    """:func:`read_send_request` over protobuf: the reference of ``_send_fields.c``."""
    try:
        request = session_pb2.TransportRequest.FromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeError of a deep recursion
        return None
    if request.WhichOneof("body") != "send":
        return None
    send = request.send
    if len(unknown_fields.UnknownFieldSet(request)) or len(unknown_fields.UnknownFieldSet(send)):
        return None
    return SendRequestFields(
        request.correlation_id,
        request.session_id,
        send.producer_group,
        send.topic,
        send.queue_id,
        send.batch,
    )


def _no_fast_path(data: bytes) -> None:
    """Without the native module: every request goes through protobuf (see module)."""
    del data


read_send_request: Final[Callable[[bytes], SendRequestFields | None]] = (
    _no_fast_path if _native is None else functools.partial(_native.send_fields, SendRequestFields)
)
"""A send request's fields read from the bytes of a ``TransportRequest``, or None for any other
request (see module): one native call (a ``partial``, no Python frame); None without the
native module."""


class StoredSendAnswer(NamedTuple):
    """A stored send's answer (SEND_OK, no status; see module): what its
    ``SendMessageResponse`` holds."""

    queue_id: int
    base_queue_offset: int
    message_count: int
    base_commit_log_offset: int
    store_host: str
    broker_name: str

    def message(self) -> messages_pb2.SendMessageResponse:
        """The answer as protobuf's ``SendMessageResponse`` (the reference, tests)."""
        return messages_pb2.SendMessageResponse(
            queue_id=self.queue_id,
            base_queue_offset=self.base_queue_offset,
            message_count=self.message_count,
            base_commit_log_offset=self.base_commit_log_offset,
            store_host=self.store_host,
            broker_name=self.broker_name,
        )


def stored_send_envelope_py(
    correlation_id: int, session_id: int, answer: StoredSendAnswer
) -> bytes:
    """:func:`stored_send_envelope` over protobuf: the reference of ``_send_fields.c``, the
    bytes the session wrote for a send's answer before it."""
    envelope = session_pb2.TransportResponse(correlation_id=correlation_id, session_id=session_id)
    envelope.send.CopyFrom(answer.message())
    return envelope.SerializeToString()


stored_send_envelope: Final[Callable[[int, int, StoredSendAnswer], bytes]] = (
    stored_send_envelope_py if _native is None else _native.stored_send
)
"""``(correlation_id, session_id, answer) -> bytes``: the envelope of a
:class:`StoredSendAnswer` (see module), in one native call when built (no Python frame)."""
