"""Type ids of the client-driver command protocol, and the driver's error codes.

Clients write commands to the media driver on the to-driver ring buffer (many writers, one
reader); the driver answers every client at once on the to-clients broadcast buffer. Each
record carries one of these ids as its ``msg_type_id`` and one message of this package as its
payload. Commands are 0x01..0x0F, responses 0x0F01..0x0F0B, as in Aeron's
``ControlProtocolEvents`` and ``aeron_control_protocol.h``.

``ErrorCode`` is the ``error_code`` of an ON_ERROR response (and of an ERR frame on UDP). Its
values follow Aeron's ``ErrorCode`` enum: 0 is ``UNUSED`` (it clashed with success, so Aeron
retired it) and ``GENERIC_ERROR`` is 11.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "ADD_COUNTER",
    "ADD_DESTINATION",
    "ADD_EXCLUSIVE_PUBLICATION",
    "ADD_PUBLICATION",
    "ADD_RCV_DESTINATION",
    "ADD_STATIC_COUNTER",
    "ADD_SUBSCRIPTION",
    "CLIENT_CLOSE",
    "CLIENT_KEEPALIVE",
    "ON_AVAILABLE_IMAGE",
    "ON_CLIENT_TIMEOUT",
    "ON_COUNTER_READY",
    "ON_ERROR",
    "ON_EXCLUSIVE_PUBLICATION_READY",
    "ON_OPERATION_SUCCESS",
    "ON_PUBLICATION_READY",
    "ON_STATIC_COUNTER",
    "ON_SUBSCRIPTION_READY",
    "ON_UNAVAILABLE_COUNTER",
    "ON_UNAVAILABLE_IMAGE",
    "REMOVE_COUNTER",
    "REMOVE_DESTINATION",
    "REMOVE_PUBLICATION",
    "REMOVE_RCV_DESTINATION",
    "REMOVE_SUBSCRIPTION",
    "TERMINATE_DRIVER",
    "ErrorCode",
    "type_name",
]

# Clients to the media driver (to-driver ring buffer).
ADD_PUBLICATION = 0x01
REMOVE_PUBLICATION = 0x02
ADD_EXCLUSIVE_PUBLICATION = 0x03
ADD_SUBSCRIPTION = 0x04
REMOVE_SUBSCRIPTION = 0x05
CLIENT_KEEPALIVE = 0x06
ADD_DESTINATION = 0x07
REMOVE_DESTINATION = 0x08
ADD_COUNTER = 0x09
REMOVE_COUNTER = 0x0A
CLIENT_CLOSE = 0x0B
ADD_RCV_DESTINATION = 0x0C
REMOVE_RCV_DESTINATION = 0x0D
TERMINATE_DRIVER = 0x0E
ADD_STATIC_COUNTER = 0x0F

# The media driver to clients (to-clients broadcast buffer).
ON_ERROR = 0x0F01
ON_AVAILABLE_IMAGE = 0x0F02
ON_PUBLICATION_READY = 0x0F03
ON_OPERATION_SUCCESS = 0x0F04
ON_UNAVAILABLE_IMAGE = 0x0F05
ON_EXCLUSIVE_PUBLICATION_READY = 0x0F06
ON_SUBSCRIPTION_READY = 0x0F07
ON_COUNTER_READY = 0x0F08
ON_UNAVAILABLE_COUNTER = 0x0F09
ON_CLIENT_TIMEOUT = 0x0F0A
ON_STATIC_COUNTER = 0x0F0B

_NAMES = {
    value: name
    for name, value in globals().items()
    if name.isupper() and isinstance(value, int) and not name.startswith("_")
}


def type_name(type_id: int) -> str:
    """The protocol name of a command or response type id, e.g. ``ADD_PUBLICATION``."""
    return _NAMES.get(type_id, f"UNKNOWN(0x{type_id:X})")


class ErrorCode(IntEnum):
    """Error codes between the media driver and clients (Aeron's ``ErrorCode``)."""

    UNKNOWN_CODE_VALUE = -1
    """A code this version does not know (see :meth:`of`)."""
    UNUSED = 0
    """Aeron's old generic value, retired because 0 clashes with success."""
    INVALID_CHANNEL = 1
    UNKNOWN_SUBSCRIPTION = 2
    UNKNOWN_PUBLICATION = 3
    CHANNEL_ENDPOINT_ERROR = 4
    UNKNOWN_COUNTER = 5
    UNKNOWN_COMMAND_TYPE_ID = 6
    MALFORMED_COMMAND = 7
    NOT_SUPPORTED = 8
    UNKNOWN_HOST = 9
    RESOURCE_TEMPORARILY_UNAVAILABLE = 10
    GENERIC_ERROR = 11
    STORAGE_SPACE = 12
    IMAGE_REJECTED = 13
    PUBLICATION_REVOKED = 14

    @classmethod
    def of(cls, value: int) -> ErrorCode:
        """The code for a wire value; ``UNKNOWN_CODE_VALUE`` for values this version lacks."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN_CODE_VALUE
