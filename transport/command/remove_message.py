"""Remove messages: REMOVE_PUBLICATION (with flags), REMOVE_SUBSCRIPTION and REMOVE_COUNTER.

REMOVE_SUBSCRIPTION and REMOVE_COUNTER (24 bytes)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                           Client ID                           |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                        Registration ID                        |
    |                                                               |
    +---------------------------------------------------------------+

REMOVE_PUBLICATION (32 bytes) adds a flags word::

    +---------------------------------------------------------------+
 24 |                             Flags                             |
    |                                                               |
    +---------------------------------------------------------------+

``REMOVE_PUBLICATION_FLAG_REVOKE`` asks the driver to revoke the publication (its images end at
once) rather than let it linger. A 24-byte REMOVE_PUBLICATION from a client older than the
flags is accepted with flags 0, as Aeron's driver does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.command.correlated_message import CLIENT_ID_OFFSET, CORRELATION_ID_OFFSET
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "REMOVE_FLAGS_OFFSET",
    "REMOVE_MESSAGE_LENGTH",
    "REMOVE_PUBLICATION_FLAG_REVOKE",
    "REMOVE_PUBLICATION_MESSAGE_LENGTH",
    "REMOVE_REGISTRATION_ID_OFFSET",
    "RemoveMessage",
    "RemovePublicationMessage",
    "decode_remove_message",
    "decode_remove_publication_message",
    "encode_remove_message",
    "encode_remove_publication_message",
]

REMOVE_REGISTRATION_ID_OFFSET = CORRELATION_ID_OFFSET + 8
REMOVE_MESSAGE_LENGTH = REMOVE_REGISTRATION_ID_OFFSET + 8
REMOVE_FLAGS_OFFSET = REMOVE_MESSAGE_LENGTH
REMOVE_PUBLICATION_MESSAGE_LENGTH = REMOVE_FLAGS_OFFSET + 8

REMOVE_PUBLICATION_FLAG_REVOKE = 0x1

_NAME = "remove message"
_PUBLICATION_NAME = "remove publication message"
_FIELDS = struct.Struct("<qqq")


@dataclass(frozen=True, slots=True)
class RemoveMessage:
    """A decoded REMOVE_SUBSCRIPTION or REMOVE_COUNTER (layout above), client to driver.

    ``registration_id`` names the subscription or counter to remove.
    """

    client_id: int
    correlation_id: int
    registration_id: int


@dataclass(frozen=True, slots=True)
class RemovePublicationMessage:
    """A decoded REMOVE_PUBLICATION (layout above), client to driver.

    ``registration_id`` names the publication; ``flags`` holds
    ``REMOVE_PUBLICATION_FLAG_REVOKE`` or 0.
    """

    client_id: int
    correlation_id: int
    registration_id: int
    flags: int

    @property
    def revoke(self) -> bool:
        """Whether the client asked to revoke the publication (its images end at once)."""
        return bool(self.flags & REMOVE_PUBLICATION_FLAG_REVOKE)


def _put_fields(
    buffer: AtomicBuffer, offset: int, client_id: int, correlation_id: int, registration_id: int
) -> None:
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    buffer.put_int64(offset + REMOVE_REGISTRATION_ID_OFFSET, registration_id)


def encode_remove_message(
    buffer: AtomicBuffer, offset: int, *, client_id: int, correlation_id: int, registration_id: int
) -> int:
    """Write a REMOVE_SUBSCRIPTION / REMOVE_COUNTER payload at ``offset``; return its length."""
    check_capacity(buffer, offset, REMOVE_MESSAGE_LENGTH, _NAME)
    _put_fields(buffer, offset, client_id, correlation_id, registration_id)
    return REMOVE_MESSAGE_LENGTH


def decode_remove_message(buffer: AtomicBuffer, offset: int, length: int) -> RemoveMessage:
    """Read a REMOVE_SUBSCRIPTION / REMOVE_COUNTER payload; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "registration_id", REMOVE_REGISTRATION_ID_OFFSET, 8, length)
    return RemoveMessage(*_FIELDS.unpack_from(buffer, offset))


def encode_remove_publication_message(
    buffer: AtomicBuffer,
    offset: int,
    *,
    client_id: int,
    correlation_id: int,
    registration_id: int,
    flags: int = 0,
) -> int:
    """Write a REMOVE_PUBLICATION payload at ``offset``; return its length (32)."""
    check_capacity(buffer, offset, REMOVE_PUBLICATION_MESSAGE_LENGTH, _PUBLICATION_NAME)
    _put_fields(buffer, offset, client_id, correlation_id, registration_id)
    buffer.put_int64(offset + REMOVE_FLAGS_OFFSET, flags)
    return REMOVE_PUBLICATION_MESSAGE_LENGTH


def decode_remove_publication_message(
    buffer: AtomicBuffer, offset: int, length: int
) -> RemovePublicationMessage:
    """Read a REMOVE_PUBLICATION payload (24 bytes without flags, or 32 with them)."""
    check_region(buffer, offset, length, _PUBLICATION_NAME)
    require(_PUBLICATION_NAME, "registration_id", REMOVE_REGISTRATION_ID_OFFSET, 8, length)
    client_id, correlation_id, registration_id = _FIELDS.unpack_from(buffer, offset)
    if length == REMOVE_MESSAGE_LENGTH:
        flags = 0  # a client from before the flags word
    else:
        require(_PUBLICATION_NAME, "flags", REMOVE_FLAGS_OFFSET, 8, length)
        flags = buffer.get_int64(offset + REMOVE_FLAGS_OFFSET)
    return RemovePublicationMessage(client_id, correlation_id, registration_id, flags)
