"""Errors of the etcd client and server helper, under the broker's root (:class:`BrokerError`).

::

    BrokerError                         (aeromq.broker) root of the broker's errors
    └── EtcdError                       root of the errors of aeromq.broker.etcd
        ├── EtcdUnavailableError        (retriable) etcd cannot be reached or has no leader
        ├── EtcdTimeoutError            (retriable, also TimeoutError) no answer in the call's
        │                               deadline: a write's outcome is unknown
        ├── EtcdLeaseNotFoundError      the lease expired or was revoked: its keys are gone
        ├── EtcdCompactedError          a watch's start revision was compacted away
        ├── EtcdRequestError            etcd refused a request (any other gRPC status)
        └── EtcdServerError             an etcd process could not be started, or did not answer
            └── EtcdNotInstalledError   no ``etcd`` binary (Debian package ``etcd-server``)

Every message names the values that matter as ``key=value`` (``endpoint``, ``operation``,
``key``, ``lease_id``, ``revision``, ``status``); the values are kept as attributes.
:func:`error_from_rpc` turns a ``grpc.RpcError`` into the most specific class here; callers
raise it ``from`` the gRPC error.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from aeromq.broker._errors import BrokerError
from aeromq.common import ResponseCode

__all__ = [
    "EtcdCompactedError",
    "EtcdError",
    "EtcdLeaseNotFoundError",
    "EtcdNotInstalledError",
    "EtcdRequestError",
    "EtcdServerError",
    "EtcdTimeoutError",
    "EtcdUnavailableError",
    "error_from_rpc",
]


class EtcdError(BrokerError):
    """Root of the etcd errors: a call to etcd, or the etcd process, failed. ``endpoint`` and
    ``operation`` (the gRPC method) are set when a call failed."""

    endpoint: str | None = None
    operation: str | None = None


class EtcdUnavailableError(EtcdError):
    """etcd cannot be reached (connection refused or lost) or answered UNAVAILABLE (no leader,
    leader changed, request timed out inside etcd). Trying again may succeed."""

    retriable = True
    code = ResponseCode.SERVICE_NOT_AVAILABLE


class EtcdTimeoutError(EtcdError, TimeoutError):
    """No answer within the call's deadline (``timeout_ms``). A write may or may not have been
    applied: read before writing again when it matters."""

    retriable = True
    code = ResponseCode.SERVICE_NOT_AVAILABLE


class EtcdLeaseNotFoundError(EtcdError):
    """The lease (``lease_id``) is not known to etcd: it expired or was revoked, and every key
    put with it is gone. Grant a new lease."""


class EtcdCompactedError(EtcdError):
    """A watch asked for history (``start_revision``) older than the compacted revision
    (``compact_revision``). Read the current state, then watch from its revision."""


class EtcdRequestError(EtcdError):
    """etcd refused a request with a gRPC status (``status``, ``details``) that none of the other
    classes stands for (a bad argument, a request too large, permission denied)."""


class EtcdServerError(EtcdError):
    """An etcd process could not be started, exited, or did not answer in time (``output``
    holds its last lines, ``exit_code`` its exit status once it exited)."""

    output: Sequence[str] = ()
    exit_code: int | None = None


class EtcdNotInstalledError(EtcdServerError):
    """No ``etcd`` binary: install Debian's ``etcd-server`` (``bash
    scripts/install-system-packages``)."""


def error_from_rpc(
    exc: grpc.RpcError, operation: str, endpoint: str, **values: object
) -> EtcdError:
    """The error for a failed gRPC call ``operation`` (``"Range"``, ``"LeaseGrant"``, ...) to etcd
    at ``endpoint``; ``values`` name what the call was about (``key``, ``lease_id``, ...)."""
    status: grpc.StatusCode | None = exc.code() if isinstance(exc, grpc.Call) else None
    details = (exc.details() if isinstance(exc, grpc.Call) else None) or str(exc)
    named = {"endpoint": endpoint, "operation": operation, **values}
    if status is grpc.StatusCode.UNAVAILABLE:
        return EtcdUnavailableError("etcd unavailable", **named, details=details)
    if status is grpc.StatusCode.DEADLINE_EXCEEDED:
        return EtcdTimeoutError("etcd did not answer in time", **named)
    if status is grpc.StatusCode.NOT_FOUND and "lease not found" in details:
        return EtcdLeaseNotFoundError("etcd lease not found", **named)
    status_name = status.name if status is not None else "UNKNOWN"
    return EtcdRequestError(
        "etcd refused the request", **named, status=status_name, details=details
    )
