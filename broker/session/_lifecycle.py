"""The session agent's session lifecycle: opening sessions on CONNECT, connecting their
response publications, farewells, the periodic sweep and closing.

A CONNECT is checked (its response channel must point back at its own source, the protocol
version, the ACL's authentication, ``max_sessions``, the client's own limits and its response
channel's term, ``_client_limits.py``) and refused with a farewell (an answer on a publication of
a small term opened for it, closed once delivered) or opens a session: its response publication
is added asynchronously and polled by :meth:`SessionLifecycle._progress_connecting` until
connected, when the CONNECT answer goes first in its backlog. A response publication the driver
refuses (no room: ``STORAGE_SPACE``) is answered with a farewell too (``SYSTEM_BUSY``, the
driver's reason in its text), never with silence. Every 100 ms the sweep closes
sessions idle for the session timeout and sessions whose client is gone, and stops ringing
client doorbells that were freed. :meth:`SessionLifecycle._close` is where every session ends.

Caller: ``SessionAgent`` (``broker.session._agent``), whose methods are stacked by role, one
class per module, each calling those below it: ``SessionLifecycle`` <
``AnswerWriter`` (``_answers``) < ``RequestDispatch`` (``_dispatch``) < ``SessionAgent``. They
are one object, so the hot path makes the same calls as one class would; the state they share
is declared here and set by ``SessionAgent.__init__``.
"""

from __future__ import annotations

import logging
from functools import cached_property
from typing import Final

from aeromq.broker.security._acl import Acl
from aeromq.broker.session._answer_envelopes import error_envelope
from aeromq.broker.session._client_limits import (
    client_key,
    farewell_channel,
    limit_refusal,
    response_term_length,
    session_log_bytes,
)
from aeromq.broker.session._config import LocalReadGrant, SessionServerConfig
from aeromq.broker.session._counters import SessionCounters
from aeromq.broker.session._route_check import IPC_SOURCE, route_refusal
from aeromq.broker.session._session import ServerSession, SessionState
from aeromq.broker.session._table import SessionTable
from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    SESSION_CLOSED_CODE,
    SESSION_PROTOCOL_VERSION,
    ResponseCode,
    encode_envelope,
    with_ipc_mtu,
)
from aeromq.proto import session_pb2
from aeromq.transport import TransportError
from aeromq.transport.client import Aeron, Image
from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell, Ringable
from aeromq.transport.driver.refusal_log import RefusalLog
from aeromq.transport.logbuffer.header import Header

__all__ = ["SessionLifecycle"]

_log = logging.getLogger(__name__)

_CONNECT: Final = RESPONSE_FIELD_NUMBERS["connect"]
_UDP: Final = "aeron:udp"
_MS: Final = 1_000_000
REFUSAL_LOG_INTERVAL_NS: Final = 10_000_000_000
"""A client's refused CONNECTs are logged at most once per this interval (10 s)."""


class SessionLifecycle:
    """The sessions' lifecycle, for ``SessionAgent`` (see module)."""

    config: SessionServerConfig
    counters: SessionCounters
    broker_name: str
    max_message_size: int
    local_reads: LocalReadGrant | None
    doorbell: Doorbell | None
    network_bell: Ringable | None  # the embedded driver's network wake (UDP answers ring it)
    _rings: dict[int, Ringable]  # the bells the cycle's answers ring, at its end (by id)
    _aeron: Aeron
    _acl: Acl | None
    _table: SessionTable
    _connecting: set[ServerSession]  # sessions whose response publication is not connected
    _backlogged: set[ServerSession]  # sessions with answers held up (AnswerWriter's)
    _farewells: dict[tuple[str, int], ServerSession]
    _unrung_sessions: int  # live sessions whose requests ring nothing
    _now_ns: int  # the time of this duty cycle

    @cached_property
    def _refusals(self) -> RefusalLog:
        """Refused clients' CONNECTs, logged once per client and interval."""
        return RefusalLog(_log, REFUSAL_LOG_INTERVAL_NS)

    def _on_connect(self, request: session_pb2.TransportRequest, header: Header) -> None:
        connect = request.connect
        route = (connect.response_channel, connect.response_stream_id)
        now_ns = self._now_ns
        image = header.context
        source = image.source_identity if isinstance(image, Image) else IPC_SOURCE
        refusal = route_refusal(connect.response_channel, source)
        if refusal is not None:  # answers go back to the requester, nowhere else
            self.counters.connects_refused += 1
            self.counters.routes_refused += 1
            self._unanswerable(
                f"response channel refused: {refusal}: client_id={connect.client_id!r} "
                f"channel={connect.response_channel!r}",
                header,
            )
            return
        if connect.version != SESSION_PROTOCOL_VERSION:
            self.counters.connects_refused += 1
            self._farewell(
                route,
                request.correlation_id,
                0,
                ResponseCode.VERSION_NOT_SUPPORTED,
                f"session protocol version not supported: version={connect.version} "
                f"supported={SESSION_PROTOCOL_VERSION}",
            )
            return
        acl = self._acl
        why = None if acl is None else acl.authenticate(connect.user, connect.secret)
        if why is not None:
            self.counters.connects_refused += 1
            self.counters.errors_by_code[ResponseCode.UNAUTHORIZED] += 1
            _log.warning("session refused: %s client_id=%s", why, connect.client_id)
            self._farewell(route, request.correlation_id, 0, ResponseCode.UNAUTHORIZED, why)
            return
        if self._table.live_count >= self.config.max_sessions:
            self.counters.connects_refused += 1
            self._farewell(
                route,
                request.correlation_id,
                0,
                ResponseCode.SYSTEM_BUSY,
                f"too many sessions: max_sessions={self.config.max_sessions}",
            )
            return
        key = client_key(source, connect.client_id)
        ingress_term = image.term_buffer_length if isinstance(image, Image) else 0
        response_term = response_term_length(connect.response_channel, ingress_term)
        log_bytes = session_log_bytes(ingress_term, response_term)
        limited = self._client_refusal(key, response_term, log_bytes)
        if limited is not None:
            code, text = limited
            self.counters.connects_refused += 1
            self.counters.client_limits_refused += 1
            self._refusals.refused(key, now_ns, f"session refused: {text}")
            self._farewell(route, request.correlation_id, 0, code, text)
            return
        session = ServerSession(
            self._table.new_id(),
            connect.client_id,
            connect.response_channel,
            connect.response_stream_id,
            header.session_id,
            request.correlation_id,
            now_ns,
            image=image,
        )
        session.user = connect.user
        if source == IPC_SOURCE and connect.HasField("doorbell_counter_id"):
            session.doorbell = self._client_doorbell(connect.doorbell_counter_id)
            session.rings = self._rings
        elif self.network_bell is not None and connect.response_channel.startswith(_UDP):
            session.network_bell = self.network_bell  # answers end the driver's park
            session.rings = self._rings
        if source == IPC_SOURCE and connect.local_reads and self.local_reads is not None:
            session.local_reads = True  # the client shares this host: see ConnectResponse
        if not self._open_publication(session):
            return
        self._table.add(session, key, log_bytes)
        self._connecting.add(session)
        if _unrung(session) or self.doorbell is None:
            self._unrung_sessions += 1
        self.counters.sessions_opened += 1
        _log.debug("session connecting: %r", session)

    def _client_doorbell(self, counter_id: int) -> Doorbell | None:
        """The doorbell an IPC client named, if the counter is one (else it is not rung)."""
        counters = self._aeron.counters_reader
        if not HAS_FUTEX or not Doorbell.is_doorbell_counter(counters, counter_id):
            self.counters.doorbells_refused += 1
            return None
        return Doorbell.for_counter(counters, counter_id)

    def _client_refusal(
        self, key: str, response_term: int, log_bytes: int
    ) -> tuple[int, str] | None:
        """The code and text refusing a CONNECT of the client ``key`` (``_client_limits.py``)."""
        limit = self.config.max_response_term_length
        if response_term > limit:
            return (
                ResponseCode.INVALID_PARAMETER,
                f"the response channel's term is longer than the broker takes: "
                f"term_length={response_term} max_response_term_length={limit}",
            )
        sessions, held = self._table.client_holds(key)
        why = limit_refusal(self.config, sessions, held, log_bytes)
        return None if why is None else (ResponseCode.SYSTEM_BUSY, f"{why} client={key}")

    def _open_publication(self, session: ServerSession) -> bool:
        """Ask for the session's response publication (a farewell's of a small term); a refusal
        is answered with a farewell (a farewell's only logged)."""
        channel = session.response_channel
        try:
            session.registration_id = self._aeron.async_add_exclusive_publication(
                with_ipc_mtu(farewell_channel(channel) if session.farewell else channel),
                session.response_stream_id,
            )
        except TransportError as exc:
            self._response_refused(session, exc)
            return False
        return True

    def _response_refused(self, session: ServerSession, exc: TransportError) -> None:
        """The driver refused the session's response publication (no room, a bad channel):
        answer the CONNECT with the reason on a farewell (counted, logged)."""
        self.counters.connects_refused += 1
        self.counters.response_streams_refused += 1
        _log.warning(
            "cannot open a response publication: client_id=%s channel=%s stream_id=%s: %s",
            session.client_id,
            session.response_channel,
            session.response_stream_id,
            exc,
        )
        if not session.farewell:
            self._farewell(
                session.route,
                session.connect_correlation_id,
                0,
                ResponseCode.SYSTEM_BUSY,
                f"the broker cannot open the session's response stream: {exc}",
            )

    def _farewell(
        self, route: tuple[str, int], correlation_id: int, session_id: int, code: int, text: str
    ) -> None:
        """Answer on ``route`` through a publication opened for it, closed once delivered."""
        envelope = error_envelope(correlation_id, session_id, code, text)
        farewell = self._farewells.get(route)
        if farewell is not None and farewell.state is not SessionState.CLOSED:
            farewell.send(envelope, self._now_ns)
            return
        farewell = ServerSession(
            self._table.new_id(), "", route[0], route[1], 0, 0, self._now_ns, farewell=True
        )
        farewell.send(envelope, self._now_ns)
        if not self._open_publication(farewell):
            return
        self._table.add(farewell)
        self._farewells[route] = farewell
        self._connecting.add(farewell)

    def _unanswerable(self, text: str, header: Header) -> None:
        self.counters.unanswerable += 1
        count = self.counters.unanswerable
        if count <= 10 or count % 1000 == 0:
            _log.warning(
                "cannot answer (no route back): %s image_session_id=%s count=%d",
                text,
                header.session_id,
                count,
            )

    def _progress_connecting(self, now_ns: int) -> int:
        work = 0
        timeout_ns = self.config.connect_timeout_ms * _MS
        for session in list(self._connecting):
            publication = session.publication
            if publication is None:
                try:
                    publication = self._aeron.get_exclusive_publication(session.registration_id)
                except TransportError as exc:
                    self._close(session, f"response channel refused: {exc}", now_ns, False)
                    self._response_refused(session, exc)
                    continue
                session.publication = publication
            if publication is not None and publication.is_connected:
                self._connecting.discard(session)
                session.state = SessionState.CONNECTED
                if not session.farewell:
                    session.backlog.appendleft(self._connect_answer(session))
                    _log.info("session connected: %r", session)
                self._backlogged.add(session)
                work += 1
            elif now_ns - session.created_ns > timeout_ns:
                self._close(session, "response stream did not connect in time", now_ns, False)
        return work

    def _connect_answer(self, session: ServerSession) -> bytes:
        answer = session_pb2.ConnectResponse(
            broker_name=self.broker_name,
            version=SESSION_PROTOCOL_VERSION,
            session_timeout_ms=self.config.session_timeout_ms,
            max_message_size=self.max_message_size,
        )
        grant = self.local_reads
        if session.local_reads and grant is not None:
            answer.local_read_dir = grant.directory
            answer.local_read_file_bytes = grant.file_bytes
            answer.local_read_dir_device = grant.device
            answer.local_read_dir_inode = grant.inode
        if session.doorbell is not None:
            answer.rings_client_doorbell = True
            if self.doorbell is not None:
                answer.doorbell_counter_id = self.doorbell.counter_id
        return encode_envelope(
            session.connect_correlation_id,
            session.session_id,
            _CONNECT,
            answer.SerializeToString(),
        )

    def _sweep(self, now_ns: int) -> None:
        timeout_ns = self.config.session_timeout_ms * _MS
        counters = self._aeron.counters_reader
        for session in self._table:
            if session.state is not SessionState.CONNECTED or session.farewell:
                continue
            bell = session.doorbell
            if bell is not None and not bell.still_allocated(counters):
                session.doorbell = None  # the client freed it: the id may go to another
                self._unrung_sessions += 1 if self.doorbell is not None else 0
            if now_ns - session.last_activity_ns > timeout_ns:
                self.counters.sessions_timed_out += 1
                self._close(session, "idle for the session timeout", now_ns, notify=True)
            elif session.publication is not None and not session.publication.is_connected:
                self._close(session, "the client is gone (no subscriber)", now_ns, False)
        self._table.expire_tombstones(now_ns)

    def _close(self, session: ServerSession, reason: str, now_ns: int, notify: bool) -> None:
        if session.state is SessionState.CLOSED:
            return
        if notify and session.publication is not None and session.publication.is_connected:
            text = f"session closed: session_id={session.session_id} reason={reason!r}"
            session.send(error_envelope(0, session.session_id, SESSION_CLOSED_CODE, text), now_ns)
            session.flush_backlog(now_ns)
        session.close(reason)
        self._connecting.discard(session)
        self._backlogged.discard(session)
        self._table.remove(session, now_ns)
        if not session.farewell and (_unrung(session) or self.doorbell is None):
            self._unrung_sessions -= 1
        if session.farewell:
            if self._farewells.get(session.route) is session:
                del self._farewells[session.route]
            return
        self.counters.sessions_closed += 1
        _log.info("session closed: %r reason=%s", session, reason)


def _unrung(session: ServerSession) -> bool:
    """Whether ``session``'s requests ring the agent's doorbell nobody: an IPC client rings it
    itself after each request (``doorbell``); a UDP client's requests land through the
    embedded media driver (``network_bell``: the broker's own driver, whose receiver rings the
    doorbell its ingress subscription names as they land)."""
    return session.doorbell is None and session.network_bell is None
