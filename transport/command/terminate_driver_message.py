"""Terminate driver message: TERMINATE_DRIVER, a request to stop the media driver.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                           Client ID                           |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                         Token Length                          |
    +---------------------------------------------------------------+
 20 |                         Token Buffer                         ...
   ...                                                              |
    +---------------------------------------------------------------+

The driver's termination validator decides whether the token allows the stop.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import (
    check_capacity,
    check_region,
    read_block,
    require,
    write_block,
)
from aeromq.transport.command.correlated_message import CLIENT_ID_OFFSET, CORRELATION_ID_OFFSET
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "TERMINATE_DRIVER_MESSAGE_LENGTH",
    "TERMINATE_DRIVER_TOKEN_LENGTH_OFFSET",
    "TerminateDriverMessage",
    "decode_terminate_driver_message",
    "encode_terminate_driver_message",
]

TERMINATE_DRIVER_TOKEN_LENGTH_OFFSET = CORRELATION_ID_OFFSET + 8
TERMINATE_DRIVER_MESSAGE_LENGTH = TERMINATE_DRIVER_TOKEN_LENGTH_OFFSET + 4
"""Length of the fixed part (``aeron_terminate_driver_command_t``); the token follows."""

_NAME = "terminate driver message"
_FIELDS = struct.Struct("<qq")


@dataclass(frozen=True, slots=True)
class TerminateDriverMessage:
    """A decoded TERMINATE_DRIVER (layout above), client to driver.

    ``token`` is opaque bytes that the driver's termination validator judges.
    """

    client_id: int
    correlation_id: int
    token: bytes


def encode_terminate_driver_message(
    buffer: AtomicBuffer, offset: int, *, client_id: int, correlation_id: int, token: bytes = b""
) -> int:
    """Write the message at ``offset``; return its length."""
    length = TERMINATE_DRIVER_MESSAGE_LENGTH + len(token)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(offset + CLIENT_ID_OFFSET, client_id)
    buffer.put_int64(offset + CORRELATION_ID_OFFSET, correlation_id)
    write_block(buffer, offset + TERMINATE_DRIVER_TOKEN_LENGTH_OFFSET, token)
    return length


def decode_terminate_driver_message(
    buffer: AtomicBuffer, offset: int, length: int
) -> TerminateDriverMessage:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "correlation_id", CORRELATION_ID_OFFSET, 8, length)
    client_id, correlation_id = _FIELDS.unpack_from(buffer, offset)
    token, _ = read_block(
        buffer, offset, length, _NAME, "token", TERMINATE_DRIVER_TOKEN_LENGTH_OFFSET
    )
    return TerminateDriverMessage(client_id, correlation_id, token)
