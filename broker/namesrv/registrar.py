"""The broker's side of the name server: register with every topic, heartbeat, re-register
when topics change or the name server asks, unregister at shutdown (RocketMQ's
``BrokerOuterAPI.registerBrokerAll`` on its 30 s timer, here every ``interval_ms``).

A name server that is down is retried on the next beat; the broker keeps serving (its own
``QueryRoute`` still answers). The name server drops a broker silent for
``heartbeat_timeout_ms`` (three intervals by default).

Caller: the broker (``start`` after its ports are bound and endpoints published, ``stop``
at shutdown).

It calls the name server through the generated stub (``proto/namesrv_pb2_grpc.py``), not
through the client's ``GrpcClient``: the broker sits beside the clients, not above them. A
failed call (gRPC error, or a response whose status is not SUCCESS) is a
:class:`NameServerCallError`, logged and retried on the next beat.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import grpc

from aeromq.broker._errors import BrokerError
from aeromq.broker.processor.admin import ControlPlane
from aeromq.common import ResponseCode
from aeromq.proto import common_pb2, namesrv_pb2, namesrv_pb2_grpc

__all__ = ["NameServerCallError", "NameServerRegistrar"]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")

_log = logging.getLogger(__name__)


class NameServerRegistrar:
    """Keeps this broker registered with the name server at ``namesrv_address``."""

    def __init__(
        self,
        control: ControlPlane,
        namesrv_address: str,
        interval_ms: int,
        *,
        heartbeat_timeout_ms: int | None = None,
        timeout_s: float = 3.0,
    ) -> None:
        self._control = control
        self._interval_s = interval_ms / 1000.0
        self._heartbeat_timeout_ms = heartbeat_timeout_ms or 3 * interval_ms
        self._address = namesrv_address
        self._timeout_s = timeout_s
        self._channel = grpc.insecure_channel(namesrv_address)
        self._stub = namesrv_pb2_grpc.NameServerStub(self._channel)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._registered_version: int | None = None
        self.registrations = 0
        control.topics.add_listener(self._on_topic_change)

    @property
    def namesrv_address(self) -> str:
        """The name server's ``host:port`` this broker registers with."""
        return self._address

    def start(self) -> None:
        """Register now (failures are retried on the timer) and start beating."""
        if self._thread is not None:
            return
        self._beat(force_register=True)
        self._thread = threading.Thread(target=self._run, name="aeromq-namesrv-beat", daemon=True)
        self._thread.start()

    def stop(self, unregister: bool = True) -> None:
        """Stop beating and (by default) unregister, so routes stop naming this broker."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        if unregister:
            identity = self._control.identity
            request = namesrv_pb2.UnregisterBrokerRequest(
                cluster_name=identity.cluster_name, broker_name=identity.broker_name
            )
            try:
                self._call("UnregisterBroker", self._stub.UnregisterBroker, request)
            except NameServerCallError as exc:
                _log.warning("unregister from the name server failed: %s", exc)
        self._channel.close()

    def _on_topic_change(self, topic: str) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval_s)
            self._wake.clear()
            if self._stop.is_set():
                return
            self._beat(force_register=False)

    def _data_version(self) -> int:
        return self._control.store.topic_config.data_version[1]

    def _beat(self, force_register: bool) -> None:
        identity = self._control.identity
        version = self._data_version()
        try:
            register = force_register or version != self._registered_version
            if not register:
                request = namesrv_pb2.BrokerHeartbeatRequest(
                    cluster_name=identity.cluster_name,
                    broker_name=identity.broker_name,
                    data_version=version,
                )
                answer = self._call("BrokerHeartbeat", self._stub.BrokerHeartbeat, request)
                register = answer.registration_required
            if register:
                self._register(version)
        except NameServerCallError as exc:
            self._registered_version = None
            _log.warning("name server unreachable: address=%s %s", self._address, exc)

    def _register(self, version: int) -> None:
        identity = self._control.identity
        request = namesrv_pb2.RegisterBrokerRequest(
            cluster_name=identity.cluster_name,
            broker_name=identity.broker_name,
            endpoints=identity.endpoints,
            topics=self._control.routes.topic_configs(),
            data_version=version,
            heartbeat_timeout_ms=self._heartbeat_timeout_ms,
        )
        self._call("RegisterBroker", self._stub.RegisterBroker, request)
        self._registered_version = version
        self.registrations += 1
        _log.info(
            "registered with the name server: address=%s topics=%d version=%d",
            self._address,
            len(request.topics),
            version,
        )

    def list_clusters(self) -> list[common_pb2.ClusterInfo]:
        """Every cluster and broker the name server knows (the web console's cluster page).
        Raises NameServerCallError when it cannot answer."""
        answer = self._call(
            "ListClusters", self._stub.ListClusters, common_pb2.ListClustersRequest()
        )
        return list(answer.clusters)

    def _call(self, rpc: str, stub: Callable[..., _Response], request: _Request) -> _Response:
        """One unary call; a gRPC failure or a non-SUCCESS status raises NameServerCallError."""
        try:
            response = stub(request, timeout=self._timeout_s)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
            raise NameServerCallError(
                "name server call failed", rpc=rpc, address=self._address, grpc_code=code.name
            ) from exc
        status: common_pb2.Status = getattr(response, "status")  # noqa: B009
        if status.code != ResponseCode.SUCCESS:
            raise NameServerCallError(
                "name server refused",
                rpc=rpc,
                address=self._address,
                status_code=status.code,
                detail=status.message,
            )
        return response


class NameServerCallError(BrokerError):
    """A call to the name server failed (unreachable, timed out, or refused). Retriable: the
    registrar tries again on its next beat."""

    retriable = True
    code = ResponseCode.SERVICE_NOT_AVAILABLE
