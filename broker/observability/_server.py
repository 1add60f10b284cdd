"""``ObservabilityServer``: the broker's HTTP port, with ``/metrics`` and the web console.

Caller: :class:`~broker.Broker` (``start`` after the control plane is up, ``stop`` first at
shutdown). Affects: one listening socket and two threads of its own (the HTTP server, and the
console's history sampler when the console is on). ``/metrics`` is ``prometheus_client``'s own
WSGI application over a registry that holds only :class:`BrokerCollector` (no process-global
state, so two brokers in one process each serve their own); ``/console/...`` is
:class:`ConsoleApp`; ``/`` redirects to the console (or to ``/metrics`` without it).
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from aeromq.broker._errors import ConfigError
from aeromq.broker.observability._collector import BrokerCollector
from aeromq.broker.observability._console import ConsoleApp
from aeromq.broker.observability._history import History, Sample

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

    from aeromq.broker.broker import Broker

__all__ = ["ObservabilityServer"]

_SERVE_POLL_S = 5.0
"""How often the server's loop wakes to look for a shutdown when nobody connects (once every
5 s, not 5 times a second: an idle broker's wake-ups); ``stop`` ends that wait at once."""
_ANY_HOSTS = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}

_log = logging.getLogger(__name__)


class _QuietHandler(WSGIRequestHandler):
    """Requests logged at DEBUG through ``logging``, not on stderr."""

    def log_message(self, format: str, *args: object) -> None:
        _log.debug("%s " + format, self.address_string(), *args)


class ObservabilityServer:
    """``/metrics`` and (``console``) the console of ``broker`` on ``host:port`` (see module;
    port 0 takes a free one, read back in ``port``). ``ConfigError`` when it cannot listen
    there."""

    def __init__(self, broker: Broker, host: str, port: int, *, console: bool = True) -> None:
        self._broker = broker
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(BrokerCollector(broker))
        self._metrics_app = make_wsgi_app(self.registry)
        self.history: History | None = History(self._sample) if console else None
        self._console = ConsoleApp(broker, self.history) if self.history is not None else None
        try:
            self._server = make_server(
                host, port, self._app, server_class=ThreadingWSGIServer, handler_class=_QuietHandler
            )
        except OSError as exc:  # taken, or not an address of this host
            raise ConfigError(
                "cannot listen for /metrics and the console",
                metrics_host=host,
                metrics_port=port,
                reason=exc.strerror or str(exc),
            ) from exc
        self._thread: threading.Thread | None = None
        self.host = host
        self.port = int(self._server.server_address[1])

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"

    @property
    def console_url(self) -> str | None:
        """The console's address, None when it is off."""
        return None if self._console is None else f"http://{self.host}:{self.port}/console/"

    def start(self) -> None:
        if self.history is not None:
            self.history.start()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": _SERVE_POLL_S},
            name="observability-http",
            daemon=True,
        )
        self._thread.start()

    def _shut_down(self) -> None:
        """``shutdown()`` of the server, whose loop waits up to :data:`_SERVE_POLL_S` to see it:
        a connection of our own ends that wait (tried until the loop has stopped, 5 s at most)."""
        stopper = threading.Thread(
            target=self._server.shutdown, name="observability-stop", daemon=True
        )
        stopper.start()
        host = _ANY_HOSTS.get(self.host, self.host)
        deadline = time.monotonic() + 5.0
        while stopper.is_alive() and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                socket.create_connection((host, self.port), timeout=0.5).close()
            stopper.join(0.05)

    def stop(self) -> None:
        """Stop serving and close the socket; idempotent."""
        if self._thread is not None:
            self._shut_down()
            self._thread.join(timeout=5.0)
            self._thread = None
        self._server.server_close()
        if self.history is not None:
            self.history.stop()

    def _app(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = str(environ.get("PATH_INFO", ""))
        if path == "/metrics":
            result: Iterable[bytes] = self._metrics_app(environ, start_response)
            return result
        if self._console is not None and path.startswith("/console/"):
            return self._console(environ, start_response)
        if path in ("/", "/console"):
            target = "/console/" if self._console is not None else "/metrics"
            start_response("302 Found", [("Location", target), ("Content-Length", "0")])
            return [b""]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]

    def _sample(self) -> Sample:
        broker = self._broker
        control = broker.control_plane
        traffic = broker.meter.snapshot()
        messages_in = {t.topic: t.messages_in for t in traffic}
        messages_out = {t.topic: t.messages_out for t in traffic}
        lag: dict[str, int] = {}
        if control is not None:
            for group in control.offsets.known_groups():
                try:
                    lag[group] = control.offsets.consumer_progress(group).total_lag
                except Exception:  # gone meanwhile
                    continue
        return Sample(time.time(), messages_in, messages_out, lag)
