"""``BrokerLinks``: one transport session per broker, over the right media driver.

For a broker on this host (its ``hostname`` is ours and its ``aeron_dir`` holds a ``cnc.dat``)
the session goes over IPC through the broker's own driver; otherwise over UDP through a local
driver (``ProducerConfig.aeron_dir``, or one embedded in this process, started on first use),
with the answers coming back on a UDP endpoint of ``udp_response_host``. Sessions that failed
(the broker closed them, or went away) are replaced on the next use; a dead Aeron client (its
driver died) is replaced too.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

from client import BrokerUnavailableError, IllegalStateError
from client.route import BrokerRoute
from client.session import ClientSession, SessionConfig
from producer._config import ProducerConfig
from transport import TransportError
from transport.client import Aeron, AeronContext
from transport.driver import MediaDriver, MediaDriverContext

__all__ = ["BrokerLinks", "is_local"]

_log = logging.getLogger("producer")


def is_local(broker: BrokerRoute) -> bool:
    """Whether the broker runs on this host with a driver we can map."""
    return (
        bool(broker.aeron_dir and broker.ipc_channel)
        and broker.hostname in ("", socket.gethostname())
        and os.path.exists(os.path.join(broker.aeron_dir, "cnc.dat"))
    )


class BrokerLinks:
    """Sessions by broker name (see module); thread-safe."""

    def __init__(self, config: ProducerConfig, client_id: str) -> None:
        self._config = config
        self._client_id = client_id
        self._lock = threading.Lock()
        self._sessions: dict[str, ClientSession] = {}
        self._clients: dict[str, Aeron] = {}
        self._driver: MediaDriver | None = None
        self._closed = False

    def session(self, broker: BrokerRoute) -> ClientSession:
        """The open session with ``broker``, connecting one if needed."""
        broker_name = broker.broker_name
        session = self._sessions.get(broker_name)
        if session is not None and session.is_open:
            return session
        with self._lock:
            if self._closed:
                raise IllegalStateError("producer is shut down")
            session = self._sessions.get(broker_name)
            if session is not None and session.is_open:
                return session
            if session is not None:
                session.close()
            session = self._connect(broker)
            self._sessions[broker_name] = session
            return session

    def _connect(self, endpoints: BrokerRoute) -> ClientSession:
        config = self._config
        broker_name = endpoints.broker_name
        use_ipc = config.transport == "ipc" or (config.transport == "auto" and is_local(endpoints))
        if use_ipc:
            aeron_dir = endpoints.aeron_dir
            session_config = SessionConfig(
                ingress_channel=endpoints.ipc_channel,
                ingress_stream_id=endpoints.ipc_stream_id,
                client_id=self._client_id,
                request_timeout_ms=config.send_timeout_ms,
                offer_timeout_ms=config.offer_timeout_ms,
            )
        else:
            if not endpoints.udp_channel:
                raise BrokerUnavailableError(
                    "the broker has no UDP ingress and is not on this host", broker=broker_name
                )
            aeron_dir = self._local_driver_dir()
            session_config = SessionConfig(
                ingress_channel=endpoints.udp_channel,
                ingress_stream_id=endpoints.udp_stream_id,
                response_channel=f"aeron:udp?endpoint={config.udp_response_host}:0",
                client_id=self._client_id,
                request_timeout_ms=config.send_timeout_ms,
                offer_timeout_ms=config.offer_timeout_ms,
            )
        aeron = self._client(aeron_dir)
        try:
            return ClientSession.connect(aeron, session_config)
        except BrokerUnavailableError:
            raise
        except TransportError as exc:
            raise BrokerUnavailableError(
                "cannot reach the broker", broker=broker_name, cause=str(exc)
            ) from exc

    def _client(self, aeron_dir: str) -> Aeron:
        aeron = self._clients.get(aeron_dir)
        if aeron is not None and not aeron.is_closed:
            return aeron
        if aeron is not None:
            aeron.close()
        try:
            aeron = Aeron.connect(AeronContext(aeron_dir=aeron_dir, error_handler=_log_error))
        except TransportError as exc:
            raise BrokerUnavailableError(
                "no media driver", aeron_dir=aeron_dir, cause=str(exc)
            ) from exc
        self._clients[aeron_dir] = aeron
        return aeron

    def _local_driver_dir(self) -> str:
        if self._config.aeron_dir is not None:
            return self._config.aeron_dir
        if self._driver is None:
            self._driver = MediaDriver.launch_embedded(
                MediaDriverContext.from_env(term_buffer_sparse_file=True)
            )
        return self._driver.aeron_dir

    def drop(self, broker_name: str) -> None:
        """Close the session with ``broker_name`` (after a failure); the next use reconnects."""
        with self._lock:
            session = self._sessions.pop(broker_name, None)
        if session is not None:
            session.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sessions, self._sessions = self._sessions, {}
            clients, self._clients = self._clients, {}
            driver, self._driver = self._driver, None
        for session in sessions.values():
            session.close()
        for aeron in clients.values():
            aeron.close()
        if driver is not None:
            driver.close()


def _log_error(error: BaseException) -> None:
    _log.warning("transport error: %s", error)
