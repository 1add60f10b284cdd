"""aeromq's transport: an Aeron-style, Aeron-compatible messaging layer.

It moves byte fragments on (channel, stream id) pairs through shared-memory log buffers (IPC)
and reliable UDP, with a media driver and a client API. It knows nothing of brokers.
"""

from transport._errors import (
    ActiveDriverError,
    AgentTerminationError,
    ChannelUriError,
    ClientTimeoutError,
    CncFileError,
    ConfigurationError,
    DriverTimeoutError,
    IllegalStateError,
    IndexOutOfBoundsError,
    InvalidMessageTypeError,
    LogBufferFileError,
    MalformedCommandError,
    MessageTooLongError,
    RegistrationError,
    TransportError,
    UnknownHostError,
)

__all__ = [
    "ActiveDriverError",
    "AgentTerminationError",
    "ChannelUriError",
    "ClientTimeoutError",
    "CncFileError",
    "ConfigurationError",
    "DriverTimeoutError",
    "IllegalStateError",
    "IndexOutOfBoundsError",
    "InvalidMessageTypeError",
    "LogBufferFileError",
    "MalformedCommandError",
    "MessageTooLongError",
    "RegistrationError",
    "TransportError",
    "UnknownHostError",
]
