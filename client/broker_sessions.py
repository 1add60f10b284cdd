"""``BrokerSessions``: one open transport session per broker, for producers and consumers.

For a broker on this host (:func:`is_local`: same host name, and its ``aeron_dir`` holds a
``cnc.dat``) the session goes over IPC through the broker's own media driver; otherwise over UDP
through a local driver (``aeron_dir``, or one embedded in this process, started on first use)
with the answers coming back on a UDP endpoint of ``udp_response_host``. A session that failed
(the broker closed it or went away) is replaced on the next use; so is a dead Aeron client.

Sessions are kept per :class:`~client.route.BrokerKey` (the broker's name and the endpoints it
was looked up through): two clusters' brokers of the same name, both used by one process, get a
session each. A key may be a group of members (``client.failover``): the session of a key is
with the member the caller's route names. When a caller names another member (the leader moved,
or another broker now answers at the address: another ``broker_id``), a session with it replaces
the key's session; the one with the old member stays open while
it may be used (a caller with an older route still names it: it answers NOT_LEADER), and is
closed once idle for :data:`FORMER_SESSION_LINGER_MS` (or failed).

Callers say how long a request and a back-pressured offer may wait: the producer its
``send_timeout_ms`` and ``offer_timeout_ms``, the consumer its
``consumer_timeout_ms_when_suspend`` (a pull may be held that long) and ``offer_timeout_ms``.
"""

from __future__ import annotations

import logging
import threading
import time

from aeromq.client._conductor_idle import conductor_idle_strategy, expect_news
from aeromq.client._security import Credentials
from aeromq.client.route import BrokerKey, BrokerRoute
from aeromq.client.session import (
    DEFAULT_BACK_TO_BACK_SPIN_US,
    DRIVER_SILENT_MS,
    ClientSession,
    SessionConfig,
    default_idle_strategy,
)
from aeromq.common import BrokerUnavailableError, IllegalArgumentError, IllegalStateError
from aeromq.transport import TransportError
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.idle_strategy import IdleStrategy
from aeromq.transport.driver import MediaDriver, MediaDriverContext, event_driven_context
from aeromq.transport.driver.aeron_dir import driver_heartbeat_age_ms, has_cnc_file

__all__ = ["FORMER_SESSION_LINGER_MS", "BrokerSessions", "is_local"]

FORMER_SESSION_LINGER_MS = 5_000
"""How long a session with a broker name's former member stays open, idle, after another
member's took its place (callers with older routes may use it meanwhile)."""


_log = logging.getLogger(__name__)


def is_local(broker: BrokerRoute) -> bool:
    """Whether the broker runs on this host with a media driver we can map."""
    return bool(broker.aeron_dir) and broker.is_same_host() and has_cnc_file(broker.aeron_dir)


class BrokerSessions:
    """One open :class:`ClientSession` per broker (see the module). Thread-safe.

    ``transport`` "ipc" or "udp" forces one; "auto" takes IPC for a broker on this host. The
    embedded driver (when ``aeron_dir`` is None and a UDP session is needed) uses sparse log
    files. ``request_timeout_ms`` is the default wait of a request (a call may pass its own),
    ``offer_timeout_ms`` how long a back-pressured ingress is retried: both are the caller's.
    ``ipc_response_term_length`` (0: the driver's IPC term) is the term of the broker's
    publication back to an IPC session: an answer takes up to an eighth of it (longer ones are
    refused, ``common.ANSWER_TOO_LONG``). ``caller_reads``, ``local_reads``,
    ``idle_strategy`` (None: the default) and ``back_to_back_spin_us`` are the sessions'
    (``SessionConfig``).
    """

    def __init__(
        self,
        *,
        client_id: str,
        transport: str = "auto",
        aeron_dir: str | None = None,
        udp_response_host: str = "127.0.0.1",
        request_timeout_ms: int,
        offer_timeout_ms: int,
        credentials: Credentials | None = None,
        ipc_response_term_length: int = 0,
        caller_reads: bool = False,
        idle_strategy: str | None = None,
        local_reads: bool = False,
        back_to_back_spin_us: int = DEFAULT_BACK_TO_BACK_SPIN_US,
    ) -> None:
        if transport not in ("auto", "ipc", "udp"):
            raise IllegalArgumentError("transport must be auto, ipc or udp", transport=transport)
        self._client_id = client_id
        self._transport = transport
        self._aeron_dir = aeron_dir
        self._udp_response_host = udp_response_host
        self._request_timeout_ms = request_timeout_ms
        self._offer_timeout_ms = offer_timeout_ms
        self._credentials = credentials
        self._ipc_response_channel = (
            f"aeron:ipc?term-length={ipc_response_term_length}"
            if ipc_response_term_length
            else "aeron:ipc"
        )
        self._caller_reads = caller_reads
        self._local_reads = local_reads
        self._idle_strategy = idle_strategy
        self._back_to_back_spin_us = back_to_back_spin_us
        self._lock = threading.Lock()
        self._sessions: dict[BrokerKey, tuple[ClientSession, BrokerRoute]] = {}
        """Each broker's session (by key), with the member it is with."""
        self._former: dict[BrokerRoute, tuple[ClientSession, int]] = {}
        """Sessions with members a name's session no longer is with, and since when (monotonic
        ms): closed once idle and old enough, or failed."""
        self._clients: dict[str, Aeron] = {}
        self._conductor_idles: dict[str, IdleStrategy] = {}
        """Each client's conductor's idle strategy (``client/_conductor_idle.py``), by driver."""
        self._driver: MediaDriver | None = None
        self._retired: list[tuple[Aeron | None, MediaDriver]] = []
        """Embedded drivers replaced by a new one (:meth:`_local_driver_dir`), with their
        clients: closed by :meth:`close`, after the sessions."""
        self._closed = False

    def open_session(self, broker: BrokerKey | str) -> ClientSession | None:
        """The open session with ``broker`` (a key, or a name: the first broker of that name
        from any origin), or None (without connecting)."""
        for key in self._keys(broker):
            entry = self._sessions.get(key)
            if entry is not None and entry[0].is_open:
                return entry[0]
        return None

    def _keys(self, broker: BrokerKey | str) -> list[BrokerKey]:
        """``broker`` itself, or every key of the name ``broker``."""
        if isinstance(broker, BrokerKey):
            return [broker]
        return [key for key in list(self._sessions) if key.broker_name == broker]

    def open_session_to(self, broker: BrokerRoute) -> ClientSession | None:
        """The open session with ``broker``'s key if it is with that member, or None
        (without connecting)."""
        entry = self._sessions.get(broker.key)
        if entry is None or not entry[0].is_open or (entry[1] is not broker and entry[1] != broker):
            return None
        return entry[0]

    def sole_session(self) -> ClientSession | None:
        """The open session when there is exactly one (one broker), else None: a consumer's
        ``poll()`` reads its answers on its own thread then (``ClientSession.read_until``).
        None too while a session with a name's former member lingers: its answers may still
        come."""
        sessions = self._sessions
        if len(sessions) != 1 or self._former:
            return None
        for session, _ in sessions.values():
            return session if session.is_open else None
        return None

    def session(self, broker: BrokerRoute) -> ClientSession:
        """The open session with ``broker`` (the member of its name that it names), connecting
        one if needed (this blocks up to the session's connect timeout; raises
        :class:`~common.BrokerUnavailableError`)."""
        entry = self._sessions.get(broker.key)
        if entry is not None and entry[1] is broker:  # (the route object the last call used)
            session = entry[0]
            if session.is_open:
                return session
        return self._session_of(broker)

    def _session_of(self, broker: BrokerRoute) -> ClientSession:
        """:meth:`session` when the key's session is not open or the caller's route is
        another object (refreshed, or another member: see the module)."""
        name = broker.key
        with self._lock:
            if self._closed:
                raise IllegalStateError("sessions closed", broker=broker.broker_name)
            entry = self._sessions.pop(name, None)
            now_ms = time.monotonic_ns() // 1_000_000
            if entry is not None:
                session, member = entry
                if member == broker and session.is_open:
                    self._sessions[name] = (session, broker)
                    if self._former:
                        self._close_former(now_ms)
                    return session
                if member != broker and session.is_open:
                    self._former[member] = (session, now_ms)  # a caller may still use it
                else:
                    session.close()
            former = self._former.pop(broker, None)  # a member named again
            if former is not None and former[0].is_open:
                session = former[0]
            else:
                if former is not None:
                    former[0].close()
                session = self._connect(broker)
            self._sessions[name] = (session, broker)
            self._close_former(now_ms)
            return session

    def _close_former(self, now_ms: int) -> None:
        """Close the sessions with former members that failed, or that no request waits on
        and that were replaced :data:`FORMER_SESSION_LINGER_MS` ago. Under the lock."""
        for member, (session, since_ms) in list(self._former.items()):
            if not session.is_open or (
                session.pending_count == 0 and now_ms - since_ms >= FORMER_SESSION_LINGER_MS
            ):
                del self._former[member]
                session.close()

    def _connect(self, broker: BrokerRoute) -> ClientSession:
        transport = self._transport
        if transport == "ipc" or (transport == "auto" and is_local(broker)):
            aeron_dir = broker.aeron_dir
            ingress, stream_id = broker.ipc_channel, broker.ipc_stream_id
            response = self._ipc_response_channel
        else:
            if not broker.udp_channel:
                raise BrokerUnavailableError(
                    "the broker has no UDP ingress and is not on this host",
                    broker=broker.broker_name,
                )
            aeron_dir = self._local_driver_dir()
            ingress, stream_id = broker.udp_channel, broker.udp_stream_id
            response = f"aeron:udp?endpoint={self._udp_response_host}:0"
        config = SessionConfig(
            ingress_channel=ingress,
            ingress_stream_id=stream_id,
            response_channel=response,
            client_id=self._client_id,
            request_timeout_ms=self._request_timeout_ms,
            offer_timeout_ms=self._offer_timeout_ms,
            credentials=self._credentials,
            caller_reads=self._caller_reads,
            local_reads=self._local_reads,
            idle_strategy=self._idle_strategy or default_idle_strategy(),
            back_to_back_spin_us=self._back_to_back_spin_us,
        )
        try:
            aeron = self._client(aeron_dir)
            expect_news(self._conductor_idles[aeron_dir])  # the session's response image
            return ClientSession.connect(aeron, config)
        except TransportError as exc:
            raise BrokerUnavailableError(
                "cannot reach the broker", broker=broker.broker_name, cause=str(exc)
            ) from exc

    def _client(self, aeron_dir: str) -> Aeron:
        age_ms = driver_heartbeat_age_ms(aeron_dir, int(time.time() * 1000))
        if age_ms is None or age_ms > DRIVER_SILENT_MS:
            # A dead driver (a broker killed or restarted elsewhere): fail now, so the caller
            # looks the broker up again, instead of blocking for the driver timeout (10 s).
            stale = self._clients.pop(aeron_dir, None)
            if stale is not None:
                self._close_sessions_on(stale)
                stale.close()
            raise BrokerUnavailableError(
                "the media driver is not running", aeron_dir=aeron_dir, heartbeat_age_ms=age_ms
            )
        aeron = self._clients.get(aeron_dir)
        if aeron is not None and not aeron.is_closed:
            return aeron
        if aeron is not None:
            aeron.close()
        idle = conductor_idle_strategy()
        try:
            aeron = Aeron.connect(
                AeronContext(aeron_dir=aeron_dir, error_handler=_log_error, idle_strategy=idle)
            )
        except TransportError as exc:
            raise BrokerUnavailableError(
                "no media driver", aeron_dir=aeron_dir, cause=str(exc)
            ) from exc
        self._clients[aeron_dir] = aeron
        self._conductor_idles[aeron_dir] = idle
        return aeron

    def _close_sessions_on(self, aeron: Aeron) -> None:
        """Close the sessions made on ``aeron``, which is about to be closed (a session rings
        its doorbell, in that client's mapped counters, as it closes). Under the lock."""
        for key, (session, _) in list(self._sessions.items()):
            if session.aeron is aeron:
                del self._sessions[key]
                session.close()
        for member, (session, _) in list(self._former.items()):
            if session.aeron is aeron:
                del self._former[member]
                session.close()

    def _local_driver_dir(self) -> str:
        """The directory of the driver UDP sessions go through: ``aeron_dir``, or the embedded
        driver's, launched on first use and again when the one before is gone (see
        :meth:`_embedded_driver_gone`). Under the lock."""
        if self._aeron_dir is not None:
            return self._aeron_dir
        driver = self._driver
        if driver is not None and (why := _embedded_driver_gone(driver)) is not None:
            _log.warning(
                "launching a new embedded media driver: aeron_dir=%s %s", driver.aeron_dir, why
            )
            # Kept running until close(): sessions made through it may still work (their files
            # are mapped) and close only when they fail or the owner closes.
            self._retired.append((self._clients.pop(driver.aeron_dir, None), driver))
            self._conductor_idles.pop(driver.aeron_dir, None)
            driver = self._driver = None
        if driver is None:
            driver = self._driver = MediaDriver.launch_embedded(  # woken by its work
                event_driven_context(MediaDriverContext.from_env(term_buffer_sparse_file=True))
            )
        return driver.aeron_dir

    def drop(self, broker: BrokerKey | str) -> None:
        """Close the sessions with ``broker``'s members (a key, or every broker of a name)
        after a failure; the next use reconnects."""
        with self._lock:
            keys = self._keys(broker)
            dropped = [entry[0] for key in keys if (entry := self._sessions.pop(key, None))]
            for member in [m for m in self._former if broker in (m.key, m.broker_name)]:
                dropped.append(self._former.pop(member)[0])
        for session in dropped:
            session.close()

    def close(self) -> None:
        """Close every session, Aeron client and the embedded driver; idempotent."""
        with self._lock:
            self._closed = True
            sessions = [entry[0] for entry in self._sessions.values()]
            sessions += [former[0] for former in self._former.values()]
            self._sessions, self._former = {}, {}
            clients, self._clients = self._clients, {}
            self._conductor_idles = {}
            driver, self._driver = self._driver, None
            retired, self._retired = self._retired, []
        for session in sessions:
            session.close()
        for aeron in clients.values():
            aeron.close()
        if driver is not None:
            driver.close()
        for old_aeron, old_driver in retired:
            if old_aeron is not None:
                old_aeron.close()
            old_driver.close()


def _embedded_driver_gone(driver: MediaDriver) -> str | None:
    """Why this process's embedded driver can serve no new session (``key=value`` words for
    the log line), or None when it can: closed, or its directory removed from under it (a
    clean-up of /dev/shm: its threads and mapped files live on, but no new log buffer can be
    made there and no client can connect). A driver that is only slow (a silent heartbeat) is
    kept: the sessions open through it may still work, and new ones fail until it answers."""
    if driver.is_closed:
        return "closed=true"
    if not has_cnc_file(driver.aeron_dir):
        return "cnc=missing"
    return None


def _log_error(error: BaseException) -> None:
    _log.warning("transport error: %s", error)
