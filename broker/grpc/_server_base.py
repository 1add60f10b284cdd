"""One gRPC server process-side: a ``grpc.aio`` server on its own event-loop thread, with its
servicers, gRPC health checking (``grpc.health.v1.Health``) and server reflection, bound on
``host:port`` (port 0: any free port, read back from ``port``).

Used by the broker's server and the name server's. Unary handlers are plain functions run on a
thread pool of ``max_workers``; a streaming handler written as an ``async`` generator (the
consumers' membership stream) runs on the event loop and holds no thread, so open streams never
starve the unary calls, however many consumers there are.

The port is bound without ``SO_REUSEPORT``: a second server on a taken port fails to start
(:class:`BrokerError` naming the address) instead of sharing the requests at random. With
``tls`` the port takes TLS only (and a client certificate when ``tls.client_ca_file`` is set).
A bad call (a request that does not decode, a handler that raised) logs one line; its
traceback only when gRPC's logger is enabled for DEBUG (:class:`OneLineCallErrors`).

Health reports SERVING for the overall server ("") and each registered service from ``start``
until ``stop``, then NOT_SERVING while in-flight calls finish within the grace period.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc  # type: ignore[import-untyped]  # grpcio-health-checking ships no types
from grpc_reflection.v1alpha import reflection  # type: ignore[import-untyped]  # grpcio-reflection ships no types

from aeromq.broker._errors import BrokerError, BrokerStateError
from aeromq.broker.grpc._tls import TlsConfig, server_credentials

__all__ = ["DEFAULT_MAX_WORKERS", "GrpcServerBase", "OneLineCallErrors", "Registrar"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_WORKERS = 32
"""Threads serving unary calls (membership streams hold none)."""

_START_TIMEOUT_S: Final = 10.0
_GRPC_LOGGERS: Final = ("grpc._cython.cygrpc", "grpc._server", "grpc.aio._server")

Registrar = Callable[[grpc.aio.Server], None]
"""``register(server)``: adds one servicer to a ``grpc.aio.Server``, e.g.
``add_BrokerAdminServicer_to_server``."""


class OneLineCallErrors(logging.Filter):
    """On gRPC's own loggers: a failed call's record keeps its message (one line) and loses
    its traceback unless the logger is enabled for DEBUG, where the full record is kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not logging.getLogger(record.name).isEnabledFor(logging.DEBUG):
            kind = record.exc_info[1]
            record.msg = f"{record.getMessage()} error={kind!r} (traceback at DEBUG)"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


_ONE_LINE = OneLineCallErrors()


def _install_one_line_filter() -> None:
    for name in _GRPC_LOGGERS:
        logger = logging.getLogger(name)
        if _ONE_LINE not in logger.filters:
            logger.addFilter(_ONE_LINE)


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
        tls: TlsConfig | None = None,
        interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    ) -> None:
        self.host = host
        self._requested_port = port
        self._services = dict(services)
        self._max_workers = max_workers
        self._name = name
        self._tls = tls
        self._interceptors = list(interceptors)
        self._server: grpc.aio.Server | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._executor: ThreadPoolExecutor | None = None
        # the asyncio servicer: the sync one's Watch blocks an executor thread until a callback
        # that grpc.aio never calls, and a process with a watcher gone then never exits
        self._health = health.aio.HealthServicer()
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
        """Whether the server is serving: from ``start`` until ``stop``."""
        return self._server is not None

    @property
    def tls(self) -> TlsConfig | None:
        """The port's TLS settings; None when it takes plain text."""
        return self._tls

    def start(self) -> int:
        """Bind, start serving and report SERVING; returns the bound port."""
        if self._server is not None:
            raise BrokerStateError("gRPC server already started", address=self.address)
        _install_one_line_filter()
        loop = asyncio.new_event_loop()
        executor = ThreadPoolExecutor(max_workers=self._max_workers, thread_name_prefix=self._name)
        loop.set_default_executor(executor)  # handlers an async interceptor wraps run here too
        thread = threading.Thread(target=loop.run_forever, name=f"{self._name}-loop", daemon=True)
        thread.start()
        target = f"{self.host}:{self._requested_port}"
        try:
            server, port = asyncio.run_coroutine_threadsafe(
                self._bind(executor, target), loop
            ).result(_START_TIMEOUT_S)
        except BaseException:
            _stop_loop(loop, thread)
            executor.shutdown(wait=False)
            raise
        self._server, self._loop, self._loop_thread, self._executor = (
            server,
            loop,
            thread,
            executor,
        )
        self._port = port
        asyncio.run_coroutine_threadsafe(self._report_serving(), loop).result(_START_TIMEOUT_S)
        _log.info(
            "gRPC server listening: address=%s tls=%s services=%s",
            self.address,
            "off" if self._tls is None else self._tls.describe(),
            sorted(self._services),
        )
        return port

    async def _report_serving(self) -> None:
        for service in ["", *self._services]:
            await self._health.set(service, health_pb2.HealthCheckResponse.SERVING)

    async def _bind(self, executor: ThreadPoolExecutor, target: str) -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server(
            migration_thread_pool=executor,
            interceptors=self._interceptors,
            options=[("grpc.so_reuseport", 0)],
        )
        for register in self._services.values():
            register(server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        names = [*self._services, health.SERVICE_NAME, reflection.SERVICE_NAME]
        reflection.enable_server_reflection(names, server)
        try:
            if self._tls is None:
                port = server.add_insecure_port(target)
            else:
                port = server.add_secure_port(target, server_credentials(self._tls))
        except RuntimeError as exc:
            await server.stop(None)
            raise BrokerError(
                "cannot bind the gRPC server (is another broker or name server on this port?)",
                address=target,
            ) from exc
        if port == 0:
            await server.stop(None)
            raise BrokerError("cannot bind the gRPC server", address=target)
        await server.start()
        return server, port

    def stop(self, grace_s: float = 1.0) -> None:
        """Report NOT_SERVING, stop taking calls, and wait up to ``grace_s`` for those in
        flight. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        loop, thread, executor = self._loop, self._loop_thread, self._executor
        assert loop is not None and thread is not None and executor is not None
        try:
            asyncio.run_coroutine_threadsafe(self._health.enter_graceful_shutdown(), loop).result(
                grace_s + 5.0
            )
            self.before_stop()
            asyncio.run_coroutine_threadsafe(server.stop(grace_s), loop).result(grace_s + 5.0)
        finally:
            _stop_loop(loop, thread)
            executor.shutdown(wait=False, cancel_futures=True)
            self._loop = self._loop_thread = self._executor = None
        _log.info("gRPC server stopped: address=%s", self.address)

    def call_soon(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` on the server's event loop (from any thread); nothing when stopped."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(callback)

    def before_stop(self) -> None:
        """Hook for subclasses: end long-lived calls (streams) so the grace period suffices."""


def _stop_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=5.0)
    if not thread.is_alive():
        loop.close()
