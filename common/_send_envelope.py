"""A send's request and its answer as they cross the session envelope, each in one native call.

A one-at-a-time ``Producer.send`` is one request and one answer on its broker session
(``common/_envelope.py`` draws the envelope). Both ends of it have a fast codec here, and a
reference in Python beside each, which the native one matches byte for byte (request) or
field for field (answer), tested over generated values:

- :class:`SendRequest`: what the producer hands its session for one attempt (group, topic,
  queue, the record batch and, for an idempotent producer, the producer state the batch is
  stamped with as it is encoded). The session's sender turns it into bytes when it has the
  correlation id: :func:`encode_send_request`, one pass in C (``record_batch/_send_encode.c``:
  the stamp, the ``SendMessageRequest`` and the envelope's varints), else
  :func:`send_request_py` (``stamp_batch``, protobuf and :func:`~common.encode_envelope`).
- :class:`SendAnswer`: a stored send's answer (its ids, status code, send status, queue and
  offsets, store host, broker name), read by :func:`read_send_answer` in one pass in C
  (``record_batch/_send_answer.c``) from an answer's bytes; None for every other answer
  (another body, an error, a raw section, an unknown field, bytes that do not parse), which
  the caller then parses with protobuf as before. :func:`read_send_answer_py` is the same over
  protobuf, the reference. Without the native module :func:`read_send_answer` gives None:
  every answer takes protobuf's path.

Callers: the client session's sender (``client/_request_sender.py``) and answer dispatch
(``client/_answer_dispatch.py``); the producer makes the requests and reads the answers
(``producer/_send_path.py``, ``producer/_answers.py``). No I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final, NamedTuple

from google.protobuf import unknown_fields

from aeromq.common._envelope import REQUEST_FIELD_NUMBERS, encode_envelope
from aeromq.common._response_code import ResponseCode
from aeromq.common.record_batch import stamp_batch
from aeromq.proto import common_pb2, messages_pb2, session_pb2

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = [
    "SendAnswer",
    "SendRequest",
    "encode_send_request",
    "read_send_answer",
    "read_send_answer_py",
    "send_request_py",
]

_SEND_FIELD: Final = REQUEST_FIELD_NUMBERS["send"]
_STORED_CODES: Final = (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT)


class SendRequest(NamedTuple):
    """One attempt of a send, for its session to encode (see module): a ``SendMessageRequest``
    of ``group``, ``topic``, ``queue_id`` and ``batch``, the batch stamped with ``producer_id``,
    ``base_sequence`` and ``producer_epoch`` (the idempotent producer's state,
    ``common/record_batch/descriptor.py``) unless ``producer_id`` is None."""

    group: str
    topic: str
    queue_id: int
    batch: bytes
    producer_id: int | None = None
    base_sequence: int = 0
    producer_epoch: int = 0

    def sent_batch(self) -> bytes:
        """The batch as it goes out: stamped, when the request carries a producer state."""
        if self.producer_id is None:
            return self.batch
        return stamp_batch(self.batch, self.producer_id, self.base_sequence, self.producer_epoch)

    def message(self) -> messages_pb2.SendMessageRequest:
        """The request as protobuf's ``SendMessageRequest`` (tests, tools)."""
        return messages_pb2.SendMessageRequest(
            producer_group=self.group,
            topic=self.topic,
            queue_id=self.queue_id,
            batch=self.sent_batch(),
        )


class SendAnswer(NamedTuple):
    """A stored send's answer, as ``SendMessageResponse`` names its fields (see module); made by
    the native reader without a protobuf message, or by :func:`read_send_answer_py`."""

    correlation_id: int
    session_id: int
    code: int
    send_status: int
    queue_id: int
    base_queue_offset: int
    message_count: int
    base_commit_log_offset: int
    store_host: str
    broker_name: str

    @property
    def status(self) -> common_pb2.Status:
        """The status as ``SendMessageResponse.status`` holds it (a stored send's: its code, no
        message, no leader), for a caller that reads either form of the answer alike."""
        return common_pb2.Status(code=self.code)


def send_request_py(
    correlation_id: int,
    session_id: int,
    group: str,
    topic: str,
    queue_id: int,
    batch: bytes,
    producer_id: int | None,
    base_sequence: int,
    producer_epoch: int,
) -> bytes:
    """:func:`encode_send_request` in Python: the reference of ``_send_encode.c``."""
    request = SendRequest(group, topic, queue_id, batch, producer_id, base_sequence, producer_epoch)
    body = request.message().SerializeToString()
    return encode_envelope(correlation_id, session_id, _SEND_FIELD, body)


encode_send_request: Final = send_request_py if _native is None else _native.send_request
"""``(correlation_id, session_id, *SendRequest) -> bytes``: the serialised ``TransportRequest``
of one attempt (see module); raises ``ValueError`` for a queue id, sequence or epoch out of
range or a batch too short to stamp, ``TypeError`` for values of the wrong type."""


def read_send_answer_py(data: bytes) -> SendAnswer | None:
    """:func:`read_send_answer` over protobuf: the reference of ``_send_answer.c``."""
    try:
        response = session_pb2.TransportResponse.FromString(data)
    except Exception:  # protobuf's DecodeError, or a RuntimeError of a deep recursion
        return None
    if response.WhichOneof("body") != "send" or _has_unknown_fields(response):
        return None
    send = response.send
    status = send.status
    if status.message or status.HasField("leader") or status.code not in _STORED_CODES:
        return None
    return SendAnswer(
        response.correlation_id,
        response.session_id,
        status.code,
        send.send_status,
        send.queue_id,
        send.base_queue_offset,
        send.message_count,
        send.base_commit_log_offset,
        send.store_host,
        send.broker_name,
    )


def _has_unknown_fields(response: session_pb2.TransportResponse) -> bool:
    send = response.send
    return any(
        len(unknown_fields.UnknownFieldSet(message)) for message in (response, send, send.status)
    )


def _no_fast_path(data: bytes) -> None:
    """Without the native module: every answer goes through protobuf (see module)."""
    del data


read_send_answer: Final[Callable[[bytes], SendAnswer | None]] = (
    _no_fast_path if _native is None else functools.partial(_native.send_answer, SendAnswer)
)
"""A stored send's answer read from the bytes of a ``TransportResponse``, or None for any other
answer (see module): one native call (a ``partial``, no Python frame); None without the native
module."""
