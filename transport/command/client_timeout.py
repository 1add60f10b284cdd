"""Client timeout: ON_CLIENT_TIMEOUT, the driver removed a client that stopped heart-beating.

::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                           Client ID                           |
    |                                                               |
    +---------------------------------------------------------------+
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.transport.command._codec import check_capacity, check_region, require
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "CLIENT_TIMEOUT_CLIENT_ID_OFFSET",
    "CLIENT_TIMEOUT_LENGTH",
    "ClientTimeout",
    "decode_client_timeout",
    "encode_client_timeout",
]

CLIENT_TIMEOUT_CLIENT_ID_OFFSET = 0
CLIENT_TIMEOUT_LENGTH = CLIENT_TIMEOUT_CLIENT_ID_OFFSET + 8

_NAME = "client timeout"


@dataclass(frozen=True, slots=True)
class ClientTimeout:
    """A decoded ON_CLIENT_TIMEOUT (layout above): the driver dropped client ``client_id``.

    Driver to clients, on the broadcast buffer; the client with that id terminates with a
    :class:`~transport.ClientTimeoutError`.
    """

    client_id: int


def encode_client_timeout(buffer: AtomicBuffer, offset: int, *, client_id: int) -> int:
    """Write the message at ``offset``; return its length."""
    check_capacity(buffer, offset, CLIENT_TIMEOUT_LENGTH, _NAME)
    buffer.put_int64(offset + CLIENT_TIMEOUT_CLIENT_ID_OFFSET, client_id)
    return CLIENT_TIMEOUT_LENGTH


def decode_client_timeout(buffer: AtomicBuffer, offset: int, length: int) -> ClientTimeout:
    """Read the message of ``length`` bytes at ``offset``; raise MalformedCommandError if short."""
    check_region(buffer, offset, length, _NAME)
    require(_NAME, "client_id", CLIENT_TIMEOUT_CLIENT_ID_OFFSET, 8, length)
    return ClientTimeout(buffer.get_int64(offset + CLIENT_TIMEOUT_CLIENT_ID_OFFSET))
