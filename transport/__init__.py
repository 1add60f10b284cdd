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
from transport.client import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    CLOSED,
    MAX_POSITION_EXCEEDED,
    NOT_CONNECTED,
    Aeron,
    AeronContext,
    ConcurrentPublication,
    Counter,
    ExclusivePublication,
    Image,
    Publication,
    Subscription,
)
from transport.concurrent.action import Action

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Action",
    "ActiveDriverError",
    "Aeron",
    "AeronContext",
    "AgentTerminationError",
    "ChannelUriError",
    "ClientTimeoutError",
    "CncFileError",
    "ConcurrentPublication",
    "ConfigurationError",
    "Counter",
    "DriverTimeoutError",
    "ExclusivePublication",
    "IllegalStateError",
    "Image",
    "IndexOutOfBoundsError",
    "InvalidMessageTypeError",
    "LogBufferFileError",
    "MalformedCommandError",
    "MessageTooLongError",
    "Publication",
    "RegistrationError",
    "Subscription",
    "TransportError",
    "UnknownHostError",
]
