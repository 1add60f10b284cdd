"""``BrokerSessions``: one transport session per broker for the consumer's pulls.

For a broker on this host (same hostname, its ``aeron_dir`` holds a ``cnc.dat``) the session
goes over IPC through the broker's own media driver; otherwise over UDP through a local driver
(``LitePullConsumerConfig.aeron_dir``, or one embedded in this process, started on first use)
with answers coming back on a UDP endpoint of ``udp_response_host``. A session that failed (the
broker closed it or went away) is replaced on the next use; so is a dead Aeron client.

The same job as the producer's ``aeromq.producer._links.BrokerLinks``; both belong in ``client/``
once one shared implementation takes endpoints and timeouts as parameters.
"""

from __future__ import annotations

import logging
import os
import threading

from aeromq.client import BrokerUnavailableError, IllegalStateError
from aeromq.client.route import BrokerRoute
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.transport import TransportError
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.driver import MediaDriver, MediaDriverContext

__all__ = ["BrokerSessions", "is_local"]

_log = logging.getLogger(__name__)


def is_local(broker: BrokerRoute) -> bool:
    """Whether the broker runs on this host with a media driver we can map."""
    return (
        bool(broker.aeron_dir)
        and broker.is_same_host()
        and os.path.exists(os.path.join(broker.aeron_dir, "cnc.dat"))
    )


class BrokerSessions:
    """Sessions by broker name (see the module doc). Thread-safe."""

    def __init__(
        self,
        *,
        client_id: str,
        transport: str = "auto",
        aeron_dir: str | None = None,
        udp_response_host: str = "127.0.0.1",
        request_timeout_ms: int = 30_000,
    ) -> None:
        self._client_id = client_id
        self._transport = transport
        self._aeron_dir = aeron_dir
        self._udp_response_host = udp_response_host
        self._request_timeout_ms = request_timeout_ms
        self._lock = threading.Lock()
        self._sessions: dict[str, ClientSession] = {}
        self._clients: dict[str, Aeron] = {}
        self._driver: MediaDriver | None = None
        self._closed = False

    def open_session(self, broker_name: str) -> ClientSession | None:
        """The open session with ``broker_name``, or None (without connecting)."""
        session = self._sessions.get(broker_name)
        return session if session is not None and session.is_open else None

    def session(self, broker: BrokerRoute) -> ClientSession:
        """The open session with ``broker``, connecting one if needed (this blocks up to the
        session's connect timeout; raises BrokerUnavailableError)."""
        session = self._sessions.get(broker.broker_name)
        if session is not None and session.is_open:
            return session
        with self._lock:
            if self._closed:
                raise IllegalStateError("the consumer's sessions are closed")
            session = self._sessions.get(broker.broker_name)
            if session is not None and session.is_open:
                return session
            if session is not None:
                session.close()
            session = self._connect(broker)
            self._sessions[broker.broker_name] = session
            return session

    def _connect(self, broker: BrokerRoute) -> ClientSession:
        use_ipc = self._transport == "ipc" or (self._transport == "auto" and is_local(broker))
        if use_ipc:
            aeron_dir = broker.aeron_dir
            config = SessionConfig(
                ingress_channel=broker.ipc_channel,
                ingress_stream_id=broker.ipc_stream_id,
                client_id=self._client_id,
                request_timeout_ms=self._request_timeout_ms,
            )
        else:
            if not broker.udp_channel:
                raise BrokerUnavailableError(
                    "the broker has no UDP ingress and is not on this host",
                    broker=broker.broker_name,
                )
            aeron_dir = self._local_driver_dir()
            config = SessionConfig(
                ingress_channel=broker.udp_channel,
                ingress_stream_id=broker.udp_stream_id,
                response_channel=f"aeron:udp?endpoint={self._udp_response_host}:0",
                client_id=self._client_id,
                request_timeout_ms=self._request_timeout_ms,
            )
        aeron = self._client(aeron_dir)
        try:
            return ClientSession.connect(aeron, config)
        except TransportError as exc:
            raise BrokerUnavailableError(
                "cannot reach the broker", broker=broker.broker_name, cause=str(exc)
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
        if self._aeron_dir is not None:
            return self._aeron_dir
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
