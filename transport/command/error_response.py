"""Error response: ON_ERROR, the driver's refusal of a command.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |              Offending Command Correlation ID                 |
    |                                                               |
    +---------------------------------------------------------------+
  8 |                          Error Code                           |
    +---------------------------------------------------------------+
 12 |                     Error Message Length                      |
    +---------------------------------------------------------------+
 16 |                        Error Message                         ...
   ...                                                              |
    +---------------------------------------------------------------+

The error code is one of :class:`~transport.command.control_protocol.ErrorCode`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from aeromq.transport.command._codec import (
    check_capacity,
    check_region,
    encode_text,
    read_block,
    require,
    write_block,
)
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "ERROR_CODE_OFFSET",
    "ERROR_MESSAGE_LENGTH_OFFSET",
    "ERROR_RESPONSE_LENGTH",
    "OFFENDING_COMMAND_CORRELATION_ID_OFFSET",
    "ErrorResponse",
    "decode_error_response",
    "encode_error_response",
]

OFFENDING_COMMAND_CORRELATION_ID_OFFSET = 0
ERROR_CODE_OFFSET = OFFENDING_COMMAND_CORRELATION_ID_OFFSET + 8
ERROR_MESSAGE_LENGTH_OFFSET = ERROR_CODE_OFFSET + 4
ERROR_RESPONSE_LENGTH = ERROR_MESSAGE_LENGTH_OFFSET + 4
"""Length of the fixed part (``aeron_error_response_t``); the message text follows."""

_NAME = "error response"
_FIELDS = struct.Struct("<qi")


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    """A decoded ON_ERROR (layout above), driver to clients: a command refused.

    ``offending_command_correlation_id`` names the command; ``error_code`` is an
    :class:`~transport.command.control_protocol.ErrorCode` value.
    """

    offending_command_correlation_id: int
    error_code: int
    error_message: str


def encode_error_response(
    buffer: AtomicBuffer,
    offset: int,
    *,
    offending_command_correlation_id: int,
    error_code: int,
    error_message: str,
) -> int:
    """Write the message at ``offset``; return its length."""
    encoded = encode_text(error_message, "error_message")
    length = ERROR_RESPONSE_LENGTH + len(encoded)
    check_capacity(buffer, offset, length, _NAME)
    buffer.put_int64(
        offset + OFFENDING_COMMAND_CORRELATION_ID_OFFSET, offending_command_correlation_id
    )
    buffer.put_int32(offset + ERROR_CODE_OFFSET, error_code)
    write_block(buffer, offset + ERROR_MESSAGE_LENGTH_OFFSET, encoded)
    return length


def decode_error_response(buffer: AtomicBuffer, offset: int, length: int) -> ErrorResponse:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if bad.

    The text is decoded as UTF-8 with replacement: it is for people, never a name to match.
    """
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "error_code", ERROR_CODE_OFFSET, 4, length)
    correlation_id, error_code = _FIELDS.unpack_from(buffer, offset)
    raw, _ = read_block(buffer, offset, length, _NAME, "error_message", ERROR_MESSAGE_LENGTH_OFFSET)
    return ErrorResponse(correlation_id, error_code, raw.decode("utf-8", errors="replace"))
