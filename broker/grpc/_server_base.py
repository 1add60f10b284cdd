"""One gRPC server process-side: a thread-pool ``grpc.server`` with its servicers, gRPC health
checking (``grpc.health.v1.Health``) and server reflection, bound on ``host:port`` (port 0: any
free port, read back from ``port``).

Used by the broker's server and the name server's. Health reports SERVING for the overall
server ("") and each registered service from ``start`` until ``stop``, then NOT_SERVING while
in-flight calls finish within the grace period.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # type: ignore[import-untyped]
from grpc_reflection.v1alpha import reflection  # type: ignore[import-untyped]

from aeromq.broker._errors import BrokerError, IllegalStateError

__all__ = ["DEFAULT_MAX_WORKERS", "GrpcServerBase", "Registrar"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_WORKERS = 32
"""Threads serving calls; each open membership stream holds one for its life."""

Registrar = Callable[[grpc.Server], None]
"""``register(server)``: adds one servicer, e.g. ``add_BrokerAdminServicer_to_server``."""


class GrpcServerBase:
    """A gRPC server on ``host:port`` serving ``services`` (full name -> registrar)."""

    def __init__(
        self,
        host: str,
        port: int,
        services: dict[str, Registrar],
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        name: str = "aeromq-grpc",
    ) -> None:
        self.host = host
        self._requested_port = port
        self._services = dict(services)
        self._max_workers = max_workers
        self._name = name
        self._server: grpc.Server | None = None
        self._health = health.HealthServicer()
        self._port = 0

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        return self._port

    @property
    def address(self) -> str:
        """``host:port`` as bound (after ``start``)."""
        return f"{self.host}:{self._port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> int:
        """Bind, start serving and report SERVING; returns the bound port."""
        if self._server is not None:
            raise IllegalStateError("gRPC server already started", address=self.address)
        executor = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix=self._name)
        server = grpc.server(executor)
        for register in self._services.values():
            register(server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        names = [*self._services, health.SERVICE_NAME, reflection.SERVICE_NAME]
        reflection.enable_server_reflection(names, server)
        target = f"{self.host}:{self._requested_port}"
        try:
            port = server.add_insecure_port(target)
        except RuntimeError as exc:
            server.stop(None)
            raise BrokerError("cannot bind the gRPC server", address=target) from exc
        if port == 0:
            server.stop(None)
            raise BrokerError("cannot bind the gRPC server", address=target)
        server.start()
        self._server = server
        self._port = port
        for service in ["", *self._services]:
            self._health.set(service, health_pb2.HealthCheckResponse.SERVING)
        _log.info(
            "gRPC server listening: address=%s services=%s", self.address, sorted(self._services)
        )
        return port

    def stop(self, grace_s: float = 1.0) -> None:
        """Report NOT_SERVING, stop taking calls, and wait up to ``grace_s`` for those in
        flight. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        self._health.enter_graceful_shutdown()
        self.before_stop()
        server.stop(grace_s).wait(grace_s + 5.0)
        _log.info("gRPC server stopped: address=%s", self.address)

    def before_stop(self) -> None:
        """Hook for subclasses: end long-lived calls (streams) so the grace period suffices."""
