"""A blocking etcd v3 client over grpcio: reads, puts, deletes, transactions (compare-and-swap on
revisions), leases, and the threads that keep a lease alive and watch a prefix.

Every call has a deadline (``timeout_ms``, the client's ``timeout_ms`` unless given) and raises
an :class:`~aeromq.broker.etcd.EtcdError` subclass naming the endpoint, the operation and what it
was about. Reads are linearizable (etcd's default): a read sees every write acknowledged before
it started. The client holds one gRPC channel, safe to share between threads.

Caller: the broker's group membership and election (to come), :class:`EtcdServer` (to wait until
etcd answers), tests. Affects: keys and leases in etcd.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Final, TypeVar

import grpc

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.etcd._errors import EtcdError, EtcdLeaseNotFoundError, error_from_rpc
from aeromq.broker.etcd._lease_keeper import LeaseKeeper
from aeromq.broker.etcd._types import (
    KeyValue,
    Lease,
    LeaseStatus,
    RangeResult,
    TxnResult,
    WatchEvent,
    create_revision_equals,
    encode_key,
    get_op,
    mod_revision_equals,
    prefix_range_end,
    put_op,
)
from aeromq.broker.etcd._watcher import PrefixWatcher
from aeromq.proto.etcd import rpc_pb2, rpc_pb2_grpc

__all__ = ["DEFAULT_TIMEOUT_MS", "EtcdClient"]

DEFAULT_TIMEOUT_MS: Final = 2000
# Reconnect soon after etcd comes back (gRPC's own default backs off up to 120 s), and notice a
# frozen etcd on a long-lived stream (watch) by HTTP/2 pings. etcd refuses pings more often than
# every 5 s (its --grpc-keepalive-min-time) with GOAWAY, so ping every 10 s, give up after 5 s.
_CHANNEL_OPTIONS: Final = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_timeout_ms", 5_000),
)

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class EtcdClient:
    """A client of the etcd server at ``endpoint`` (``host:port`` of its client URL).

    Keys are text (UTF-8 on the wire), values bytes. Use as a context manager, or call
    :meth:`close`.
    """

    def __init__(self, endpoint: str, *, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
        self._endpoint = endpoint
        self._timeout_ms = timeout_ms
        self._channel = grpc.insecure_channel(endpoint, options=_CHANNEL_OPTIONS)
        self._kv = rpc_pb2_grpc.KVStub(self._channel)
        self._lease = rpc_pb2_grpc.LeaseStub(self._channel)
        self._watch = rpc_pb2_grpc.WatchStub(self._channel)
        self._closed = False

    @property
    def endpoint(self) -> str:
        """The ``host:port`` this client calls."""
        return self._endpoint

    @property
    def timeout_ms(self) -> int:
        """The deadline of a call that names none."""
        return self._timeout_ms

    def close(self) -> None:
        """Close the channel: calls in flight fail, watch and keep-alive threads end."""
        self._closed = True
        self._channel.close()

    def __enter__(self) -> EtcdClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- key-value ---------------------------------------------------------------------------

    def get(self, key: str, *, timeout_ms: int | None = None) -> KeyValue | None:
        """The key, or None when it does not exist."""
        request = rpc_pb2.RangeRequest(key=encode_key(key))
        response = self._call("Range", self._kv.Range, request, timeout_ms, key=key)
        return KeyValue.from_proto(response.kvs[0]) if response.kvs else None

    def get_prefix(self, prefix: str, *, timeout_ms: int | None = None) -> RangeResult:
        """Every key that starts with ``prefix``, sorted by key, and the revision read at."""
        start = encode_key(prefix)
        request = rpc_pb2.RangeRequest(key=start, range_end=prefix_range_end(start))
        response = self._call("Range", self._kv.Range, request, timeout_ms, prefix=prefix)
        kvs = tuple(KeyValue.from_proto(kv) for kv in response.kvs)
        return RangeResult(kvs, response.header.revision)

    def put(
        self, key: str, value: bytes, *, lease_id: int = 0, timeout_ms: int | None = None
    ) -> int:
        """Put ``value`` at ``key`` (with ``lease_id``: deleted when the lease ends); returns the
        store revision of the put (the key's new ``mod_revision``)."""
        request = rpc_pb2.PutRequest(key=encode_key(key), value=value, lease=lease_id)
        response = self._call("Put", self._kv.Put, request, timeout_ms, key=key, lease_id=lease_id)
        return response.header.revision

    def delete(self, key: str, *, timeout_ms: int | None = None) -> int:
        """Delete ``key``; returns how many keys were deleted (0 or 1)."""
        request = rpc_pb2.DeleteRangeRequest(key=encode_key(key))
        response = self._call("DeleteRange", self._kv.DeleteRange, request, timeout_ms, key=key)
        return response.deleted

    def transaction(
        self,
        compares: Sequence[rpc_pb2.Compare],
        success: Sequence[rpc_pb2.RequestOp],
        failure: Sequence[rpc_pb2.RequestOp] = (),
        *,
        timeout_ms: int | None = None,
    ) -> TxnResult:
        """Run ``success`` if every compare holds, else ``failure``, atomically (build them with
        :func:`mod_revision_equals`, :func:`put_op`, ...)."""
        request = rpc_pb2.TxnRequest(compare=compares, success=success, failure=failure)
        keys = sorted({c.key.decode("utf-8", "surrogateescape") for c in compares})
        response = self._call("Txn", self._kv.Txn, request, timeout_ms, keys=keys)
        kvs = tuple(
            KeyValue.from_proto(kv)
            for op in response.responses
            if op.HasField("response_range")
            for kv in op.response_range.kvs
        )
        return TxnResult(response.succeeded, response.header.revision, kvs)

    def compare_and_swap(
        self,
        key: str,
        value: bytes,
        *,
        mod_revision: int,
        lease_id: int = 0,
        timeout_ms: int | None = None,
    ) -> TxnResult:
        """Put ``value`` at ``key`` only if the key was last changed at ``mod_revision`` (the
        revision the caller read); ``mod_revision=0`` puts only if the key does not exist
        (compare ``create_revision == 0``: created once). On failure :attr:`TxnResult.kvs`
        holds the key's current value, if any, so the caller need not read it again."""
        compare = (
            create_revision_equals(key, 0) if mod_revision == 0
            else mod_revision_equals(key, mod_revision)
        )  # fmt: skip
        return self.transaction(
            [compare], [put_op(key, value, lease_id)], [get_op(key)], timeout_ms=timeout_ms
        )

    # -- leases ------------------------------------------------------------------------------

    def grant_lease(self, ttl_s: int, *, timeout_ms: int | None = None) -> Lease:
        """A new lease of ``ttl_s`` seconds (etcd raises a TTL below its minimum to it): keys
        put with it vanish ``ttl_s`` after the last keep-alive."""
        sent_s = time.monotonic()
        request = rpc_pb2.LeaseGrantRequest(TTL=ttl_s)
        response = self._call(
            "LeaseGrant", self._lease.LeaseGrant, request, timeout_ms, ttl_s=ttl_s
        )
        if response.error:
            raise EtcdError(
                "etcd refused the lease",
                endpoint=self._endpoint,
                ttl_s=ttl_s,
                details=response.error,
            )
        return Lease(response.ID, response.TTL, sent_s + response.TTL)

    def keep_alive_once(self, lease_id: int, *, timeout_ms: int | None = None) -> Lease:
        """Renew the lease once; the answer's ``deadline_s`` is the send time plus the TTL (a
        bound that never passes etcd's own expiry). Raises :class:`EtcdLeaseNotFoundError` when
        the lease has already ended."""
        self._check_open("LeaseKeepAlive")
        request = rpc_pb2.LeaseKeepAliveRequest(ID=lease_id)
        sent_s = time.monotonic()
        try:
            # One request per stream: the stream ends once etcd answers it (no stream to keep
            # and repair across etcd restarts, and the deadline bounds the whole exchange).
            responses = self._lease.LeaseKeepAlive(
                iter((request,)), timeout=self._timeout_s(timeout_ms)
            )
            try:
                response = next(responses)
            finally:
                responses.cancel()
        except grpc.RpcError as exc:
            raise error_from_rpc(exc, "LeaseKeepAlive", self._endpoint, lease_id=lease_id) from exc
        except StopIteration:
            raise EtcdError(
                "etcd ended the keep-alive stream without an answer",
                endpoint=self._endpoint,
                operation="LeaseKeepAlive",
                lease_id=lease_id,
            ) from None
        if response.TTL <= 0:
            raise EtcdLeaseNotFoundError(
                "etcd lease not found",
                endpoint=self._endpoint,
                operation="LeaseKeepAlive",
                lease_id=lease_id,
            )
        return Lease(lease_id, response.TTL, sent_s + response.TTL)

    def revoke(self, lease_id: int, *, timeout_ms: int | None = None) -> None:
        """End the lease now: its keys are deleted. Raises :class:`EtcdLeaseNotFoundError` when
        it had already ended."""
        request = rpc_pb2.LeaseRevokeRequest(ID=lease_id)
        self._call("LeaseRevoke", self._lease.LeaseRevoke, request, timeout_ms, lease_id=lease_id)

    def time_to_live(
        self, lease_id: int, *, keys: bool = False, timeout_ms: int | None = None
    ) -> LeaseStatus:
        """etcd's view of the lease (``ttl_s`` -1 once it has ended), with its keys if ``keys``."""
        request = rpc_pb2.LeaseTimeToLiveRequest(ID=lease_id, keys=keys)
        response = self._call(
            "LeaseTimeToLive", self._lease.LeaseTimeToLive, request, timeout_ms, lease_id=lease_id
        )
        names = tuple(k.decode("utf-8", "surrogateescape") for k in response.keys)
        return LeaseStatus(lease_id, response.TTL, response.grantedTTL, names)

    def keep_lease_alive(
        self,
        lease: Lease,
        *,
        interval_ms: int | None = None,
        on_lost: Callable[[EtcdError], None] | None = None,
    ) -> LeaseKeeper:
        """Start a thread that renews ``lease`` every ``interval_ms`` (TTL/4 by default); see
        :class:`LeaseKeeper`. Stop it with :meth:`LeaseKeeper.stop`."""
        keeper = LeaseKeeper(self.keep_alive_once, lease, interval_ms=interval_ms, on_lost=on_lost)
        keeper.start()
        return keeper

    # -- watch -------------------------------------------------------------------------------

    def watch_prefix(
        self,
        prefix: str,
        callback: Callable[[Sequence[WatchEvent]], None],
        *,
        start_revision: int = 0,
        on_error: Callable[[Exception], None] | None = None,
    ) -> PrefixWatcher:
        """Start a thread that calls ``callback`` with the changes of keys under ``prefix`` from
        ``start_revision`` on (0: from now), in revision order; see :class:`PrefixWatcher`."""
        start = encode_key(prefix)
        request = rpc_pb2.WatchCreateRequest(key=start, range_end=prefix_range_end(start))
        watcher = PrefixWatcher(
            self._watch.Watch,
            request,
            callback,
            endpoint=self._endpoint,
            prefix=prefix,
            start_revision=start_revision,
            on_error=on_error,
        )
        watcher.start()
        return watcher

    # -- plumbing ----------------------------------------------------------------------------

    def _timeout_s(self, timeout_ms: int | None) -> float:
        return (self._timeout_ms if timeout_ms is None else timeout_ms) / 1000.0

    def _check_open(self, operation: str) -> None:
        if self._closed:
            raise BrokerStateError(
                "etcd client closed", endpoint=self._endpoint, operation=operation
            )

    def _call(
        self,
        operation: str,
        method: grpc.UnaryUnaryMultiCallable[_Request, _Response],
        request: _Request,
        timeout_ms: int | None,
        **values: object,
    ) -> _Response:
        self._check_open(operation)
        try:
            return method(request, timeout=self._timeout_s(timeout_ms))
        except grpc.RpcError as exc:
            raise error_from_rpc(exc, operation, self._endpoint, **values) from exc
