"""The errors a client sees, with the wire code a broker answers with: one root, shared.

They live in ``common`` because the shared rules raise them (a bad topic name, a tag
expression that does not parse, a malformed message id) wherever those rules run, in a producer,
a consumer or the broker checking a request; ``aeromq.client`` re-exports every one. The
broker's own failures (store, config, state) have their own root, ``broker.BrokerError``: they
reach a client as the class of their wire code (``SYSTEM_ERROR`` as ``BrokerInternalError``).

::

    ClientError                         root of every error raised by ``common``, ``client`` and
                                        their users (producer, consumer)
    ├── IllegalArgumentError            (also ValueError) a bad argument: the message names it
    │   ├── MessageIllegalError         a message that fails validation (topic, body, property)
    │   │   └── MessageTooLargeError    a message body over the maximum size
    │   └── InvalidExpressionError      a subscription expression that does not parse
    ├── IllegalStateError               an operation in a state that does not allow it
    ├── NotSupportedError               (also NotImplementedError) a feature that is not built
    ├── TopicNotFoundError              the broker does not know the topic
    ├── NoPermissionError               the broker or topic does not allow the operation
    │   ├── AuthenticationError         a secured broker refused the credentials
    │   └── AccessDeniedError           the user lacks a permission on a topic or group
    ├── OffsetIllegalError              an offset outside [min, max] of its queue
    ├── CorruptMessageError             pulled bytes that fail their CRC or framing check
    ├── BrokerInternalError             the broker failed to process a request (SYSTEM_ERROR)
    ├── BrokerBusyError                 (retriable) the broker is flow-controlling
    │   ├── DiskFullError               (retriable) the broker's disk is below its free watermark
    │   └── BackPressuredError          (retriable) the broker's ingress stayed back-pressured:
    │                                   nothing was sent (in ``aeromq.client``)
    ├── BrokerUnavailableError          (retriable) no broker can serve the request now
    │   ├── NotLeaderError              (retriable) the member asked does not lead its group
    │   │                               now; ``leader`` names the one that does, if known
    │   └── NotEnoughReplicasError      (retriable) fewer members in sync than ``min_isr``:
    │                                   nothing was stored
    ├── OutOfOrderSequenceError         an idempotent producer's sequence skipped ahead
    └── RequestTimeoutError             (retriable, also TimeoutError) no answer in time
        └── ReplicationTimeoutError     (retriable) stored on the leader, not acknowledged by
                                        its group in time: the outcome is unknown

Every class has ``retriable`` (whether trying again may succeed) and ``code``: the
:class:`~common.ResponseCode` a broker answers with for it (an instance made from
a response keeps the exact code it came with). :data:`ERROR_FOR_CODE` is the one table from wire
codes to classes and :func:`error_for_code` builds the error for a failed response.

Messages name the values that matter as ``key=value``; the values are kept as attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from aeromq.common._response_code import ResponseCode

__all__ = [
    "ERROR_FOR_CODE",
    "AccessDeniedError",
    "AuthenticationError",
    "BrokerBusyError",
    "BrokerInternalError",
    "BrokerUnavailableError",
    "ClientError",
    "DiskFullError",
    "IllegalArgumentError",
    "IllegalStateError",
    "InvalidExpressionError",
    "MessageIllegalError",
    "MessageTooLargeError",
    "NoPermissionError",
    "NotEnoughReplicasError",
    "NotLeaderError",
    "NotSupportedError",
    "OffsetIllegalError",
    "OutOfOrderSequenceError",
    "ReplicationTimeoutError",
    "RequestTimeoutError",
    "TopicNotFoundError",
    "error_for_code",
]


class ClientError(Exception):
    """Root of the client's errors.

    ``ClientError(message, code=None, **values)``: the message becomes ``message: k=v ...``, each
    value is kept as an attribute, and ``code`` (when given) overrides the class's wire code.
    """

    retriable: bool = False
    code: int | None = None

    def __init__(self, message: str, *, code: int | None = None, **values: object) -> None:
        if values:
            detail = " ".join(f"{key}={value!r}" for key, value in values.items())
            message = f"{message}: {detail}"
        super().__init__(message)
        self.values = values
        for key, value in values.items():
            setattr(self, key, value)
        if code is not None:
            self.code = code


class IllegalArgumentError(ClientError, ValueError):
    """A bad argument to a constructor or method; the message names the value and the rule."""

    code = ResponseCode.INVALID_PARAMETER


class MessageIllegalError(IllegalArgumentError):
    """A message that fails validation: its topic, body, tags, keys or a property."""

    code = ResponseCode.MESSAGE_ILLEGAL


class MessageTooLargeError(MessageIllegalError):
    """A message body longer than the producer's or broker's maximum message size."""


class InvalidExpressionError(IllegalArgumentError):
    """A tag or SQL subscription expression that does not parse."""

    code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class IllegalStateError(ClientError):
    """An operation that the object's current state does not allow (e.g. before ``start``)."""

    code = ResponseCode.ILLEGAL_OPERATION


class NotSupportedError(ClientError, NotImplementedError):
    """A feature that exists in the API but is not implemented yet (the message says which)."""

    code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TopicNotFoundError(ClientError):
    """The broker (or name server) does not know the topic."""

    code = ResponseCode.TOPIC_NOT_EXIST


class NoPermissionError(ClientError):
    """The broker or the topic's permissions do not allow the operation."""

    code = ResponseCode.NO_PERMISSION


class AuthenticationError(NoPermissionError):
    """A secured broker did not accept the client's credentials (none, an unknown user or a
    wrong secret); the message names the user."""

    code = ResponseCode.UNAUTHORIZED


class AccessDeniedError(NoPermissionError):
    """The client's user lacks a permission on a resource; the message names the user, the
    resource (``topic:NAME`` or ``group:NAME``) and the permission (pub, sub or admin)."""

    code = ResponseCode.FORBIDDEN


class OffsetIllegalError(ClientError):
    """An offset below the queue's minimum or above its maximum."""

    code = ResponseCode.PULL_OFFSET_MOVED


class CorruptMessageError(ClientError):
    """Pulled messages whose record batch fails its CRC or framing check (corrupted on the
    broker's disk or on the way); the text names the queue and offsets. Nothing of the batch
    is delivered: seek past it to go on."""

    code = ResponseCode.SYSTEM_ERROR


class BrokerInternalError(ClientError):
    """The broker failed to process a request: an internal error on its side (``SYSTEM_ERROR``),
    or a gRPC failure that no other class stands for."""

    code = ResponseCode.SYSTEM_ERROR


class BrokerBusyError(ClientError):
    """The broker is flow-controlling: try again shortly."""

    retriable = True
    code = ResponseCode.SYSTEM_BUSY


class DiskFullError(BrokerBusyError):
    """The broker refused a send: its disk's free space is below its watermark. The text
    names ``free_bytes`` and ``needed_bytes``. Pulls still work; sends are taken again once
    space is freed, so trying again later (or on another broker) may succeed."""

    code = ResponseCode.DISK_FULL


class BrokerUnavailableError(ClientError):
    """No broker can serve the request now (down, not registered, or not a master)."""

    retriable = True
    code = ResponseCode.SERVICE_NOT_AVAILABLE


class NotLeaderError(BrokerUnavailableError):
    """The member of a broker group that was asked does not lead it now (it follows, or it lost
    its lease). ``leader`` (a ``common_pb2.BrokerEndpoints``, or None when the member does not
    know one yet) names the member that leads; refresh the route and send there. Nothing was
    stored."""

    code = ResponseCode.NOT_LEADER


class NotEnoughReplicasError(BrokerUnavailableError):
    """The leader of a broker group has fewer members in sync than its ``min_isr``, so it
    stores nothing (a send would not survive the loss of the leader). The text names ``isr``
    and ``min_isr``. Retriable: members come back in sync as they catch up."""

    code = ResponseCode.NOT_ENOUGH_REPLICAS


class OutOfOrderSequenceError(ClientError):
    """An idempotent producer's batch skipped ahead of the sequence the leader expects in its
    queue (a batch in between was lost to the producer): the text names ``expected`` and
    ``received``. Not retriable as it is: the producer must resend from the gap."""

    code = ResponseCode.OUT_OF_ORDER_SEQUENCE


class RequestTimeoutError(ClientError, TimeoutError):
    """A request got no response within its timeout."""

    retriable = True
    code = ResponseCode.RPC_TIME_OUT


class ReplicationTimeoutError(RequestTimeoutError):
    """The leader stored the batch but its group did not acknowledge it in time: the send may
    or may not survive a failover. Retriable; an idempotent producer's retry is not stored
    twice."""

    code = ResponseCode.REPLICATION_TIMEOUT


ERROR_FOR_CODE: Mapping[int, type[ClientError]] = MappingProxyType(
    {
        ResponseCode.SYSTEM_ERROR: BrokerInternalError,
        ResponseCode.SYSTEM_BUSY: BrokerBusyError,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED: NotSupportedError,
        ResponseCode.SLAVE_NOT_AVAILABLE: BrokerUnavailableError,
        ResponseCode.MESSAGE_ILLEGAL: MessageIllegalError,
        ResponseCode.SERVICE_NOT_AVAILABLE: BrokerUnavailableError,
        ResponseCode.VERSION_NOT_SUPPORTED: NotSupportedError,
        ResponseCode.NO_PERMISSION: NoPermissionError,
        ResponseCode.TOPIC_NOT_EXIST: TopicNotFoundError,
        ResponseCode.PULL_OFFSET_MOVED: OffsetIllegalError,
        ResponseCode.SUBSCRIPTION_PARSE_FAILED: InvalidExpressionError,
        ResponseCode.INVALID_PARAMETER: IllegalArgumentError,
        ResponseCode.BROKER_NOT_EXIST: BrokerUnavailableError,
        ResponseCode.FLOW_CONTROL: BrokerBusyError,
        ResponseCode.ILLEGAL_OPERATION: IllegalStateError,
        ResponseCode.DISK_FULL: DiskFullError,
        ResponseCode.NOT_LEADER: NotLeaderError,
        ResponseCode.NOT_ENOUGH_REPLICAS: NotEnoughReplicasError,
        ResponseCode.REPLICATION_TIMEOUT: ReplicationTimeoutError,
        ResponseCode.OUT_OF_ORDER_SEQUENCE: OutOfOrderSequenceError,
        ResponseCode.RPC_TIME_OUT: RequestTimeoutError,
        ResponseCode.UNAUTHORIZED: AuthenticationError,
        ResponseCode.FORBIDDEN: AccessDeniedError,
    }
)
"""The wire code of a failed response -> the class of error it raises; others are ClientError."""


def error_for_code(code: int, message: str, **values: object) -> ClientError:
    """The error for a failed response with ``code`` (the caller raises it).

    A code missing from :data:`ERROR_FOR_CODE` gives a plain :class:`ClientError` that keeps the
    code. ``SUCCESS`` is not an error: asking for it is a bug in the caller.
    """
    if code == ResponseCode.SUCCESS:
        raise IllegalArgumentError("a SUCCESS response is not an error", code_given=code)
    error_class = ERROR_FOR_CODE.get(code, ClientError)
    return error_class(message, code=code, **values)
