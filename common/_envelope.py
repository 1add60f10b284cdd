"""The session envelope: how requests and responses travel between a client and a broker over
the transport, and its codec. Pure functions, no I/O.

Each transport message is one serialised ``TransportRequest`` (client to broker) or
``TransportResponse`` (broker to client) of :mod:`proto.session_pb2`. Both number their fields
alike: the correlation id is field 1, the session id field 2 (varints), and the body one field
of the ``body`` oneof (length-delimited), whose number names the kind (``send`` 13, ...)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |  0x08 (1, v)  |  Correlation id (varint, 1 to 10 bytes)     ...
    +---------------+-----------------------------------------------+
    |  0x10 (2, v)  |  Session id (varint, 1 to 10 bytes)         ...
    +---------------+-----------------------------------------------+
    |  Body tag (varint: field number << 3 | 2)                   ...
    +---------------------------------------------------------------+
    |  Body length (varint)                                       ...
    +---------------------------------------------------------------+
    |  Body (a serialised message)                                ...
    +---------------------------------------------------------------+

:func:`encode_envelope` writes this header by hand in front of the serialised body, which
protobuf parses as one message: a body is serialised once and never copied into an envelope
object. :func:`salvage_envelope_ids` reads the two ids of an envelope that does not parse, so
the broker can still answer it.

A response may carry a raw section (a pull answer's stored record batches): bytes that travel
beside the body instead of inside it, as field :data:`RAW_SECTION_FIELD` (length-delimited)
between the ids and the body::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |  0x08 (1, v)  |  Correlation id (varint, 1 to 10 bytes)     ...
    +---------------+-----------------------------------------------+
    |  0x10 (2, v)  |  Session id (varint, 1 to 10 bytes)         ...
    +---------------+---------------+-------------------------------+
    |  0xC2 0x3E (1000, LEN)        |  Raw length (varint)        ...
    +-------------------------------+-------------------------------+
    |  Raw section (Raw length bytes, as the broker stores them)  ...
    +---------------------------------------------------------------+
    |  Body tag, body length, body (as above)                     ...
    +---------------------------------------------------------------+

The whole is still one valid ``TransportResponse`` (a parser that does not know field 1000
keeps it as an unknown field), but neither end makes it one: the broker writes the head, the
raw bytes and the tail as three pieces of one vectored offer
(:func:`encode_envelope_around`), so the batches are never joined into a protobuf message nor
serialised; the client finds the section from the head alone (:func:`split_raw_section`,
reading at most :data:`ENVELOPE_HEAD_MAX_LENGTH` bytes), copies the raw bytes out once and
parses only the ids and the body. A raw length that runs past the message is a
:class:`~common.CorruptMessageError`, never a read past it.

The session protocol's constants live here too, for both ends: the version a CONNECT carries,
the broker's default ingress stream, the code of an envelope-level error that ends the
session, and the bit of the broker's session agent's doorbell flag word
(``transport/concurrent/doorbell.py``: the agent writes it, its IPC clients read it):
:data:`RINGS_WANTED_FLAG`, ring after a lazy pull too.
"""

from __future__ import annotations

import functools
from typing import Final, NamedTuple

from google.protobuf.message import Message as ProtoMessage

from aeromq.common._errors import CorruptMessageError
from aeromq.common._response_code import ResponseCode
from aeromq.proto import session_pb2

__all__ = [
    "ANSWER_TOO_LONG",
    "CORRELATION_ID_FIELD",
    "DEFAULT_INGRESS_STREAM_ID",
    "ENVELOPE_HEAD_MAX_LENGTH",
    "IPC_SESSION_MTU",
    "RAW_SECTION_FIELD",
    "REQUEST_FIELD_NUMBERS",
    "RESPONSE_FIELD_NUMBERS",
    "RINGS_WANTED_FLAG",
    "SESSION_CLOSED_CODE",
    "SESSION_ID_FIELD",
    "SESSION_PROTOCOL_VERSION",
    "RawSection",
    "encode_envelope",
    "encode_envelope_around",
    "raw_section_past_message",
    "salvage_envelope_ids",
    "split_raw_section",
    "with_ipc_mtu",
]

SESSION_PROTOCOL_VERSION: Final = 1
"""The version a client's CONNECT carries; a broker refuses another with VERSION_NOT_SUPPORTED."""
DEFAULT_INGRESS_STREAM_ID: Final = 1001
"""The stream id of a broker's ingress (IPC and UDP) unless configured otherwise."""
SESSION_CLOSED_CODE: Final = ResponseCode.SERVICE_NOT_AVAILABLE
"""The code of an envelope-level ``error`` that ends the session (closed, unknown, timed out)."""
IPC_SESSION_MTU: Final = 65504
"""The MTU of a session's IPC publications, both ways (Aeron's largest): a request or an answer
of up to 64 KiB is one fragment, not one per 1,408 bytes (no reassembly copy, fewer frames)."""
ANSWER_TOO_LONG: Final = "answer longer than the response channel takes"
"""How a broker's refusal (``SYSTEM_ERROR``) of an answer longer than the session's response
channel takes (an eighth of its term) begins: a client whose channel has a short term (such as
the Spark reader's, ``pipeline/_reader_sessions.py``) asks again on one with a longer term."""
RINGS_WANTED_FLAG: Final = 1
"""In the broker's session agent's doorbell flag word: a client that offers a lazy pull (one
that would ring nothing) rings after all (``broker/session/_agent.py``: lazy pulls)."""


def with_ipc_mtu(channel: str) -> str:
    """``channel`` with ``mtu`` set to :data:`IPC_SESSION_MTU` when it is an IPC channel
    without one (UDP channels keep the network's MTU)."""
    if not channel.startswith("aeron:ipc") or "mtu=" in channel:
        return channel
    return f"{channel}{'|' if '?' in channel else '?'}mtu={IPC_SESSION_MTU}"


CORRELATION_ID_FIELD: Final = 1
SESSION_ID_FIELD: Final = 2
_WIRE_VARINT: Final = 0
_WIRE_LENGTH_DELIMITED: Final = 2
_TAG_SHIFT: Final = 3
_WIRE_TYPE_MASK: Final = (1 << _TAG_SHIFT) - 1
_CORRELATION_ID_TAG: Final = bytes((CORRELATION_ID_FIELD << _TAG_SHIFT | _WIRE_VARINT,))  # 0x08
_SESSION_ID_TAG: Final = bytes((SESSION_ID_FIELD << _TAG_SHIFT | _WIRE_VARINT,))  # 0x10
RAW_SECTION_FIELD: Final = 1000
"""The field number of a response's raw section (see the module doc); ``session.proto``
reserves it."""
_RAW_SECTION_TAG: Final = bytes((0xC2, 0x3E))  # varint of 1000 << 3 | 2
_MAX_VARINT_LENGTH: Final = 10
_ID_TAGS: Final = (_CORRELATION_ID_TAG[0], _SESSION_ID_TAG[0])
_RAW_SECTION_TAG_LENGTH: Final = len(_RAW_SECTION_TAG)
_tuple_new: Final = tuple.__new__
ENVELOPE_HEAD_MAX_LENGTH: Final = 2 * (1 + _MAX_VARINT_LENGTH) + 2 + _MAX_VARINT_LENGTH
"""The most bytes before a raw section's first byte: enough of a message to find it."""
_VARINT_MORE: Final = 0x80
_VARINT_BITS: Final = 0x7F
_U64: Final = (1 << 64) - 1


def _field_numbers(message: type[ProtoMessage]) -> dict[str, int]:
    oneof = message.DESCRIPTOR.oneofs_by_name["body"]
    return {field.name: field.number for field in oneof.fields}


REQUEST_FIELD_NUMBERS: Final = _field_numbers(session_pb2.TransportRequest)
"""``TransportRequest`` body name -> field number (``send`` -> 13, ...)."""
RESPONSE_FIELD_NUMBERS: Final = _field_numbers(session_pb2.TransportResponse)
"""``TransportResponse`` body name -> field number."""


def _varint(value: int) -> bytes:
    """Protobuf's varint of ``value`` as an unsigned 64-bit int (negative ints take 10 bytes)."""
    value &= _U64
    if value <= _VARINT_BITS:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value > _VARINT_BITS:
        out.append((value & _VARINT_BITS) | _VARINT_MORE)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS: Final = tuple(bytes((value,)) for value in range(_VARINT_BITS + 1))
_session_varint: Final = functools.lru_cache(maxsize=4096)(_varint)
"""Session ids repeat on every envelope of a session (and take 9 or 10 bytes): made once."""


def encode_envelope(correlation_id: int, session_id: int, field_number: int, body: bytes) -> bytes:
    """A serialised envelope (``TransportRequest`` or ``TransportResponse``: both number the
    ids 1 and 2) of ``correlation_id``, ``session_id`` and the serialised ``body`` as oneof
    field ``field_number``."""
    return b"".join(
        (
            _CORRELATION_ID_TAG,
            _varint(correlation_id),
            _SESSION_ID_TAG,
            _session_varint(session_id),
            _varint(field_number << _TAG_SHIFT | _WIRE_LENGTH_DELIMITED),
            _varint(len(body)),
            body,
        )
    )


def encode_envelope_around(
    correlation_id: int, session_id: int, field_number: int, body: bytes, raw_length: int
) -> tuple[bytes, bytes]:
    """``(head, tail)`` of a response with a raw section of ``raw_length`` bytes (see the
    module doc): the message is ``head``, the raw bytes, then ``tail``, written by one vectored
    offer without joining them."""
    head = b"".join(
        (
            _CORRELATION_ID_TAG,
            _varint(correlation_id),
            _SESSION_ID_TAG,
            _session_varint(session_id),
            _RAW_SECTION_TAG,
            _varint(raw_length),
        )
    )
    tail = b"".join(
        (_varint(field_number << _TAG_SHIFT | _WIRE_LENGTH_DELIMITED), _varint(len(body)), body)
    )
    return head, tail


class RawSection(NamedTuple):
    """Where a message's raw section is: its tag at ``tag_offset`` (the ids end there), its
    bytes at ``[offset, offset + length)``; the body follows it."""

    tag_offset: int
    offset: int
    length: int


def split_raw_section(head: bytes, message_length: int) -> RawSection | None:
    """The raw section of a message of ``message_length`` bytes whose first bytes are ``head``
    (at least ``min(message_length, ENVELOPE_HEAD_MAX_LENGTH)`` of them), or None when it has
    none. Raises :class:`~common.CorruptMessageError` when its length runs past the message or
    its varints are broken (the ids, if any, are in the error's values)."""
    # the varints walked inline (a Python call fewer each: this runs once a pulled answer)
    position = 0
    end = len(head)
    if message_length < end:
        end = message_length
    for tag in _ID_TAGS:
        if position >= end or head[position] != tag:
            return None
        position += 1
        limit = position + _MAX_VARINT_LENGTH
        if limit > end:
            limit = end
        while position < limit and head[position] & _VARINT_MORE:
            position += 1
        if position >= limit:
            return None  # a broken id: the protobuf parse reports it
        position += 1
    tag_offset = position
    if head[position : position + _RAW_SECTION_TAG_LENGTH] != _RAW_SECTION_TAG:
        return None
    position += _RAW_SECTION_TAG_LENGTH
    length = shift = 0  # the length's varint, inline as the ids'
    offset = -1
    limit = position + _MAX_VARINT_LENGTH
    if limit > end:
        limit = end
    while position < limit:
        byte = head[position]
        position += 1
        length |= (byte & _VARINT_BITS) << shift
        if not byte & _VARINT_MORE:
            length &= _U64
            offset = position
            break
        shift += 7
    else:
        length = 0
    if offset < 0 or length > message_length - offset:
        raise raw_section_past_message(
            head[:tag_offset], length if offset >= 0 else -1, message_length
        )
    return _tuple_new(RawSection, (tag_offset, offset, length))  # (NamedTuple's is Python)


def raw_section_past_message(
    ids: bytes, raw_length: int, message_length: int
) -> CorruptMessageError:
    """The error of a raw section of ``raw_length`` bytes (-1: its length is unreadable) that
    runs past its message of ``message_length`` bytes; ``ids`` are the message's first bytes,
    up to its raw section's tag (the ids it names)."""
    correlation_id, session_id = salvage_envelope_ids(ids)
    return CorruptMessageError(
        "raw section runs past its message",
        correlation_id=correlation_id,
        session_id=session_id,
        raw_length=raw_length,
        message_length=message_length,
    )


def salvage_envelope_ids(data: bytes) -> tuple[int, int]:
    """``(correlation_id, session_id)`` read from the leading varint fields of an envelope
    that does not parse as a whole (0 for what cannot be read), to answer it anyway."""
    ids = [0, 0, 0]
    position = 0
    end = len(data)
    while position < end:
        tag = data[position]
        field, wire_type = tag >> _TAG_SHIFT, tag & _WIRE_TYPE_MASK
        if wire_type != _WIRE_VARINT or field not in (CORRELATION_ID_FIELD, SESSION_ID_FIELD):
            break
        position += 1
        value = shift = 0
        while position < end and shift < 64:
            byte = data[position]
            position += 1
            value |= (byte & _VARINT_BITS) << shift
            shift += 7
            if not byte & _VARINT_MORE:
                break
        else:
            break
        ids[field] = value - (1 << 64) if value >= 1 << 63 else value
    return ids[1], ids[2]
