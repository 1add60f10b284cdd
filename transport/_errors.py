"""Errors of the transport, one root for the package.

::

    TransportError                      root of every error raised by ``transport``
    ├── IndexOutOfBoundsError           (also IndexError) a buffer index, length or alignment is bad
    ├── ConfigurationError              (also ValueError) a value given to a constructor or context
    │   └── ChannelUriError             a channel URI that does not parse or validate
    │       └── UnknownHostError        a host in a channel URI that does not resolve
    ├── TransportStateError             an operation in a state that does not allow it
    │   └── ActiveDriverError           a live media driver already owns the aeron directory
    ├── AgentTerminationError           raised by an agent's duty cycle to end its runner
    ├── MessageTooLongError             a message over the buffer's maximum length
    ├── InvalidMessageTypeError         a ring or broadcast message type id < 1
    ├── RegistrationError               the media driver refused a command (carries ``code``)
    ├── DriverTimeoutError              (also TimeoutError) the media driver stopped answering
    ├── ClientTimeoutError              the driver timed this client out
    ├── CncFileError                    a cnc.dat that is missing, too short or of another version
    ├── ChannelEndpointError            a UDP socket that could not be opened, bound or joined
    ├── LogBufferFileError              a log buffer file too short or inconsistent with its metadata
    └── MalformedCommandError           a driver command or response too short or inconsistent

Hot paths never raise for expected conditions (a full ring buffer, back pressure): they return
codes. These errors are for the control path and for bugs in the caller's arguments. Every
message names the values that matter as ``key=value``; the values are kept as attributes.
"""

from __future__ import annotations

__all__ = [
    "ActiveDriverError",
    "AgentTerminationError",
    "ChannelEndpointError",
    "ChannelUriError",
    "ClientTimeoutError",
    "CncFileError",
    "ConfigurationError",
    "DriverTimeoutError",
    "IndexOutOfBoundsError",
    "InvalidMessageTypeError",
    "LogBufferFileError",
    "MalformedCommandError",
    "MessageTooLongError",
    "RegistrationError",
    "TransportError",
    "TransportStateError",
    "UnknownHostError",
]


class TransportError(Exception):
    """Root of the transport's errors. ``retriable`` says whether trying again may succeed."""

    retriable: bool = False

    def __init__(self, message: str, **values: object) -> None:
        if values:
            detail = " ".join(f"{key}={value!r}" for key, value in values.items())
            message = f"{message}: {detail}"
        super().__init__(message)
        self.values = values
        for key, value in values.items():
            setattr(self, key, value)


class IndexOutOfBoundsError(TransportError, IndexError):
    """A buffer access outside its region, or an atomic access that is not naturally aligned."""


class ConfigurationError(TransportError, ValueError):
    """A bad value for a constructor or a context: the message names the value and the rule."""


class ChannelUriError(ConfigurationError):
    """A channel URI that does not parse, names an unknown media or has a bad parameter."""


class UnknownHostError(ChannelUriError):
    """A host name in a channel URI (``endpoint``, ``control``, ``interface``) that does not resolve."""


class TransportStateError(TransportError):
    """An operation that the object's current state does not allow (e.g. use after close)."""


class ActiveDriverError(TransportStateError):
    """A media driver refused to start: a live driver (fresh heartbeat) owns the directory."""


class AgentTerminationError(TransportError):
    """Raised by an agent (``do_work``) to stop its runner: the loop ends and ``on_close`` runs."""


class MessageTooLongError(TransportError, ValueError):
    """A message longer than the buffer or publication allows."""


class InvalidMessageTypeError(TransportError, ValueError):
    """A ring buffer or broadcast message type id below 1 (ids <= 0 are reserved)."""


class RegistrationError(TransportError):
    """The media driver answered a command with ON_ERROR; ``code`` is the driver's error code."""

    code: int


class DriverTimeoutError(TransportError, TimeoutError):
    """The media driver did not answer or stopped heart-beating within the driver timeout."""

    retriable = True


class ClientTimeoutError(TransportError):
    """The media driver timed this client out (its keepalives stopped) and freed its resources."""


class CncFileError(TransportError):
    """A cnc.dat that does not exist, is too short, or has an incompatible version."""


class ChannelEndpointError(TransportError):
    """A UDP channel's socket could not be opened, bound, connected or joined to its group.

    The message names the channel, the address and the operating system's reason.
    """


class LogBufferFileError(TransportError):
    """A log buffer file that is too short, or whose length disagrees with its metadata.

    The message names the path, the file length and the term length and page size it records.
    """


class MalformedCommandError(TransportError):
    """A client-driver command or response that is truncated or whose lengths do not add up.

    The message names the message type, the field, its offset and the lengths involved.
    """
