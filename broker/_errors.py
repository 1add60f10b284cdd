"""Errors of the broker, one root for the package.

::

    BrokerError                         root of every error raised by ``broker``
    ├── ConfigError                     (also ValueError) a bad value in a config object
    │   └── BrokerConfigError           a bad broker setting: key, value, rule and source
    ├── InvalidArgumentError            (also ValueError) a bad argument to a call (topic, offset)
    │   └── TopicExistsError            a create of a topic the broker already holds
    ├── BrokerStateError                an operation the object's state does not allow (closed)
    ├── UnknownTopicError               (also KeyError) a topic the broker does not know
    ├── GroupNotFoundError              (also KeyError) a consumer group the broker does not know
    ├── MessageNotFoundError            no stored message has the id asked for
    ├── StoreError                      the message store failed
    │   ├── StoreLockedError            the data directory is held by another store or process
    │   ├── StoreIOError                (also OSError) the disk refused a read, write or flush
    │   │   └── NoSpaceError            the file system has no room for a new store file
    │   ├── CorruptRecordError          a record failed its framing or CRC check
    │   └── FlushTimeoutError           (also TimeoutError) a flush did not finish in time
    ├── NameServerCallError             (retriable) a call to the name server failed
    ├── ProtocolStatusError             a RocketMQ 5 call refused with an apache.rocketmq.v2
    │                                   ``Code`` (``v2_code``)
    ├── EtcdError                       a call to etcd, or the etcd process, failed
    │   ├── EtcdUnavailableError        (retriable) etcd cannot be reached or has no leader
    │   ├── EtcdTimeoutError            (retriable, also TimeoutError) no answer in time
    │   ├── EtcdLeaseNotFoundError      the lease expired or was revoked: its keys are gone
    │   ├── EtcdCompactedError          a watch's start revision was compacted away
    │   ├── EtcdRequestError            etcd refused a request (any other gRPC status)
    │   └── EtcdServerError             an etcd process could not be started, or did not answer
    │       └── EtcdNotInstalledError   no ``etcd`` binary
    └── ReplicationError                replication failed
        ├── MalformedFrameError         a replication frame failed its checks
        └── EpochFileError              the epoch file or the truncation intent cannot be used
            └── CorruptEpochFileError   a line that does not parse, or epochs out of order

The classes are defined here, except those a subpackage raises alone: ``TopicExistsError``,
``GroupNotFoundError`` and ``MessageNotFoundError`` in ``aeromq.broker.processor`` (beside the
processor that raises each), ``NameServerCallError`` in ``aeromq.broker.namesrv``,
``ProtocolStatusError`` in ``aeromq.broker.rocketmq``, and the two subtrees, each drawn in detail
in its own ``_errors`` module: ``EtcdError`` in ``aeromq.broker.etcd``, ``ReplicationError`` in
``aeromq.broker.replication``.

A broker error reaches a client as the client error of its ``code`` (``aeromq.client``'s tree,
rooted at ``ClientError``): ``UnknownTopicError`` as ``TopicNotFoundError``, ``BrokerError`` as
``BrokerInternalError``.

The hot paths of the store never raise for expected outcomes: a put returns a
``PutMessageStatus`` (``FLUSH_DISK_TIMEOUT``, ``MESSAGE_ILLEGAL``, ...) and a get returns a
``GetMessageStatus``. These errors are for the control path and for bugs in the caller's
arguments. Every message names the values that matter as ``key=value``; the values are kept as
attributes. ``retriable`` says whether trying again may succeed; ``code`` is the RocketMQ
response code the broker service answers with (``error_for_code`` maps it back to a class).
"""

from __future__ import annotations

from typing import Any, Final

from aeromq.common import ResponseCode

__all__ = [
    "BrokerConfigError",
    "BrokerError",
    "BrokerStateError",
    "ConfigError",
    "CorruptRecordError",
    "FlushTimeoutError",
    "InvalidArgumentError",
    "NoSpaceError",
    "StoreError",
    "StoreIOError",
    "StoreLockedError",
    "UnknownTopicError",
    "error_for_code",
]

# RocketMQ's ResponseCode values for the errors that have one.
_SYSTEM_ERROR: Final = ResponseCode.SYSTEM_ERROR
_SYSTEM_BUSY: Final = ResponseCode.SYSTEM_BUSY
_MESSAGE_ILLEGAL: Final = ResponseCode.MESSAGE_ILLEGAL
_SERVICE_NOT_AVAILABLE: Final = ResponseCode.SERVICE_NOT_AVAILABLE
_TOPIC_NOT_EXIST: Final = ResponseCode.TOPIC_NOT_EXIST
_FLUSH_DISK_TIMEOUT: Final = ResponseCode.FLUSH_DISK_TIMEOUT
_DISK_FULL: Final = ResponseCode.DISK_FULL


class BrokerError(Exception):
    """Root of the broker's errors.

    ``retriable`` says whether the same call may succeed later; ``code`` is the RocketMQ
    response code for the error (``SYSTEM_ERROR`` unless a subclass says otherwise).
    """

    retriable: bool = False
    code: int = _SYSTEM_ERROR

    def __init__(self, message: str, **values: Any) -> None:
        if values:
            detail = " ".join(f"{key}={value!r}" for key, value in values.items())
            message = f"{message}: {detail}"
        super().__init__(message)
        self.values = values
        for key, value in values.items():
            setattr(self, key, value)


class ConfigError(BrokerError, ValueError):
    """A bad value in a config object: the message names the field, the value and the rule."""


class BrokerConfigError(ConfigError):
    """A bad broker setting: ``key``, ``value``, ``rule`` and ``source`` say which and why."""


class InvalidArgumentError(BrokerError, ValueError):
    """A bad argument to a call: an illegal topic name, a negative offset, an unknown queue."""

    code = _MESSAGE_ILLEGAL


class BrokerStateError(BrokerError):
    """An operation that the object's current state does not allow (not started, shut down)."""

    code = _SERVICE_NOT_AVAILABLE


class UnknownTopicError(BrokerError, KeyError):
    """A topic that the broker's topic config does not hold."""

    code = _TOPIC_NOT_EXIST

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StoreError(BrokerError):
    """The message store failed: the root of storage errors."""


class StoreLockedError(StoreError):
    """The data directory is locked by another open store (in this or another process)."""

    retriable = True
    code = _SERVICE_NOT_AVAILABLE


class StoreIOError(StoreError, OSError):
    """The operating system refused a read, write, map or flush of a store file."""

    retriable = True
    code = _SYSTEM_BUSY


class NoSpaceError(StoreIOError):
    """The file system has no room for a store file (``ENOSPC`` when allocating it): the
    message names ``needed_bytes`` and ``free_bytes``. Sends are refused with ``DISK_FULL``
    until space is freed."""

    code = _DISK_FULL


class CorruptRecordError(StoreError):
    """A commit log record that failed its framing or CRC check; ``physical_offset`` says where.

    The record is never returned as a message.
    """


class FlushTimeoutError(StoreError, TimeoutError):
    """A flush to disk did not complete within its timeout."""

    retriable = True
    code = _FLUSH_DISK_TIMEOUT


_BY_CODE: dict[int, type[BrokerError]] = {
    _MESSAGE_ILLEGAL: InvalidArgumentError,
    _SERVICE_NOT_AVAILABLE: BrokerStateError,
    _TOPIC_NOT_EXIST: UnknownTopicError,
    _SYSTEM_BUSY: StoreIOError,
    _FLUSH_DISK_TIMEOUT: FlushTimeoutError,
    _DISK_FULL: NoSpaceError,
}


def error_for_code(code: int) -> type[BrokerError]:
    """The error class for a RocketMQ response code (``BrokerError`` for codes without one)."""
    return _BY_CODE.get(code, BrokerError)
