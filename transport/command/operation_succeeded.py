"""Operation succeeded: ON_OPERATION_SUCCESS, the driver's acknowledgement of a command.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Correlation ID                         |
    |                                                               |
    +---------------------------------------------------------------+

The answer to commands that create nothing: REMOVE_PUBLICATION, REMOVE_SUBSCRIPTION,
REMOVE_COUNTER and the destination commands. CLIENT_KEEPALIVE and CLIENT_CLOSE get no answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET",
    "OPERATION_SUCCEEDED_LENGTH",
    "OperationSucceeded",
    "decode_operation_succeeded",
    "encode_operation_succeeded",
]

OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET = 0
OPERATION_SUCCEEDED_LENGTH = OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET + 8

_NAME = "operation succeeded"


@dataclass(frozen=True, slots=True)
class OperationSucceeded:
    """A decoded ON_OPERATION_SUCCESS (layout above): command ``correlation_id`` was done."""

    correlation_id: int


def encode_operation_succeeded(buffer: AtomicBuffer, offset: int, *, correlation_id: int) -> int:
    """Write the message at ``offset``; return its length."""
    check_capacity(buffer, offset, OPERATION_SUCCEEDED_LENGTH, _NAME)
    buffer.put_int64(offset + OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET, correlation_id)
    return OPERATION_SUCCEEDED_LENGTH


def decode_operation_succeeded(
    buffer: AtomicBuffer, offset: int, length: int
) -> OperationSucceeded:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "correlation_id", OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET, 8, length)
    return OperationSucceeded(buffer.get_int64(offset + OPERATION_SUCCEEDED_CORRELATION_ID_OFFSET))
