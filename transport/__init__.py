"""aeromq's transport: an Aeron-style, Aeron-compatible messaging layer.

It moves byte fragments on (channel, stream id) pairs through shared-memory log buffers (IPC)
and reliable UDP, with a media driver and a client API. It knows nothing of brokers.
"""

from transport._errors import (
    ChannelUriError,
    ClientTimeoutError,
    CncFileError,
    ConfigurationError,
    DriverTimeoutError,
    IllegalStateError,
    IndexOutOfBoundsError,
    InvalidMessageTypeError,
    MessageTooLongError,
    RegistrationError,
    TransportError,
)

__all__ = [
    "ChannelUriError",
    "ClientTimeoutError",
    "CncFileError",
    "ConfigurationError",
    "DriverTimeoutError",
    "IllegalStateError",
    "IndexOutOfBoundsError",
    "InvalidMessageTypeError",
    "MessageTooLongError",
    "RegistrationError",
    "TransportError",
]
