"""``SessionAgent``: the broker's ingress and its transport sessions, as one duty cycle.

Each ``do_work``:

1. polls every ingress subscription with ``controlled_poll`` through a fragment assembler;
   each whole ``TransportRequest`` goes to its session and processor. A send is ABORTed (left
   on the ingress, to come back on a later poll) while the store cannot take more
   (:meth:`~broker.processor.send.SendProcessor.can_accept`) or its session's answers are
   backed up; otherwise it is appended and the fragment COMMITted. Back pressure thus flows to
   the producer's publication as BACK_PRESSURED;
2. sends the answers the processors completed since, in the order they completed, whichever
   thread completed them (the flusher under SYNC flush, the long-poll hold service): they come
   through a queue, and only this thread writes to a session;
3. moves sessions on: connects response publications (answering CONNECT once connected),
   retries back-pressured answers, and every 100 ms closes sessions idle for the session
   timeout, sessions whose client is gone (the response publication lost its subscriber) and
   sessions whose answers stayed stuck for the session timeout.

Requests that cannot be served are answered with an envelope-level ``error`` when there is a
route back, and always counted (:class:`~broker.session.SessionCounters`): bytes that do not
parse or carry no body (INVALID_PARAMETER, answered on the sender's session when its ids or its
ingress image tell which), a request of a closed session (SERVICE_NOT_AVAILABLE, with the
reason, on a publication opened for the answer), of an unknown session (SERVICE_NOT_AVAILABLE,
answered when the ingress image has a live session), a request on another client's session
(NO_PERMISSION, answered only on the sender's own session: the victim's session is untouched),
a CONNECT past ``max_sessions`` (SYSTEM_BUSY) or of another protocol version
(VERSION_NOT_SUPPORTED). A CONNECT whose response channel does not point back at its own source
is dropped unanswered (``routes_refused``): the broker sends to no address a client names
but the one it sends from.

Doorbells (``transport/concurrent/doorbell.py``): with ``doorbell`` the agent has one (a counter
of the broker's media driver) and its idle strategy may sleep on it. Whatever gives the agent
work rings it: an IPC client after each request it offers (the CONNECT answer names the counter
to an IPC client that named its own), and the threads that complete answers (the flusher, the
long-poll hold service) after queueing them. Requests over UDP ring nothing: the agent finds them
by its polls, within its idle strategy's longest park. An IPC client's own doorbell, named in its
CONNECT, is rung after each answer offered to it; a counter that is freed or reused is no longer
rung (checked every 100 ms). :meth:`SessionAgent.all_rung` tells a doorbell idle strategy when
every source of work rings (no session that does not ring, none connecting, no answer held up by
back pressure, no send left on the ingress for the store to catch up): it may then sleep until
rung, else it must also poll.

Sessions are bound to their client: the id is random (63 bits) and every request must come on
the ingress image that carried the session's CONNECT, one identity compare per request
(``header.context is session.image``). Nothing a client sends stops the agent.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Final

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.security._acl import Acl, Permission, ResourceKind
from aeromq.broker.session._config import LocalReadGrant, SessionServerConfig
from aeromq.broker.session._counters import SessionCounters
from aeromq.broker.session._route_check import IPC_SOURCE, route_refusal
from aeromq.broker.session._session import ServerSession, SessionState
from aeromq.broker.session._table import SessionTable
from aeromq.common import (
    ANSWER_TOO_LONG,
    DEFAULT_MAX_MESSAGE_SIZE,
    RESPONSE_FIELD_NUMBERS,
    SESSION_CLOSED_CODE,
    SESSION_PROTOCOL_VERSION,
    PullAnswer,
    ResponseCode,
    encode_envelope,
    encode_envelope_around,
    salvage_envelope_ids,
    with_ipc_mtu,
)
from aeromq.proto import common_pb2, session_pb2
from aeromq.transport import TransportError
from aeromq.transport.client import Aeron, Image, Subscription
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.doorbell import HAS_FUTEX, Doorbell
from aeromq.transport.concurrent.idle_strategy import tighten_timer_slack
from aeromq.transport.logbuffer.controlled_fragment_assembler import ControlledFragmentAssembler
from aeromq.transport.logbuffer.header import Header

__all__ = ["SessionAgent"]

_log = logging.getLogger(__name__)

_Request = session_pb2.TransportRequest
_CONNECT: Final = RESPONSE_FIELD_NUMBERS["connect"]
_SEND: Final = RESPONSE_FIELD_NUMBERS["send"]
_PULL: Final = RESPONSE_FIELD_NUMBERS["pull"]
_ERROR: Final = RESPONSE_FIELD_NUMBERS["error"]
_KEEPALIVE: Final = RESPONSE_FIELD_NUMBERS["keepalive"]
_KEEPALIVE_BODY: Final = session_pb2.KeepAliveResponse().SerializeToString()
_ABORT: Final = Action.ABORT
_COMMIT: Final = Action.COMMIT
_CONTINUE: Final = Action.CONTINUE
_SWEEP_INTERVAL_NS: Final = 100_000_000
_PUB_TOPIC: Final = (ResourceKind.TOPIC, Permission.PUB)
_SUB_TOPIC: Final = (ResourceKind.TOPIC, Permission.SUB)
_SUB_GROUP: Final = (ResourceKind.GROUP, Permission.SUB)
_MS: Final = 1_000_000

Completion = tuple[ServerSession, int, int, ProtoMessage | PullAnswer]


class SessionAgent:
    """The session server's agent (see module); run it with an ``AgentRunner``.

    ``subscriptions`` are the ingress subscriptions (IPC, UDP), already added with ``aeron``,
    which also opens the response publications. ``clock_ns`` is monotonic. ``doorbell``, in
    ``aeron``'s counters, is the agent's own (see module); without it nothing rings the agent.
    """

    def __init__(
        self,
        aeron: Aeron,
        subscriptions: Sequence[Subscription],
        send: SendProcessor,
        pull: PullProcessor,
        broker_name: str,
        *,
        config: SessionServerConfig | None = None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        acl: Acl | None = None,
        doorbell: Doorbell | None = None,
        local_reads: LocalReadGrant | None = None,
    ) -> None:
        self.config = config or SessionServerConfig()
        self.local_reads = local_reads
        self._aeron = aeron
        self._subscriptions = tuple(subscriptions)
        self._send = send
        self._pull = pull
        self.broker_name = broker_name
        self.max_message_size = max_message_size
        self._clock_ns = clock_ns
        self._acl = acl
        self._table = SessionTable(self.config)
        self._completions: deque[Completion] = deque()
        self._connecting: set[ServerSession] = set()
        self._backlogged: set[ServerSession] = set()
        self._farewells: dict[tuple[str, int], ServerSession] = {}
        self._assembler = ControlledFragmentAssembler(self._on_fragment)
        self._ingress_open = True
        self._now_ns = clock_ns()
        self._next_sweep_ns = 0
        self._abort_backlog = self.config.max_backlog_responses // 2
        self.counters = SessionCounters()
        self.thread: threading.Thread | None = None
        self.doorbell = doorbell
        self._thread_ident = 0
        self._unrung_sessions = 0  # live sessions whose requests ring nothing
        self._aborted = False  # a send left on the ingress this cycle: retry without a ring

    @property
    def role_name(self) -> str:
        return "broker-sessions"

    @property
    def table(self) -> SessionTable:
        return self._table

    @property
    def idle(self) -> bool:
        """No answer waits to be sent (none completed but unsent, none backed up)."""
        return not self._completions and not self._backlogged

    def all_rung(self) -> bool:
        """Whether every source of the agent's work rings its doorbell now (see module)."""
        return (
            self.doorbell is not None
            and not self._unrung_sessions
            and not self._connecting
            and not self._backlogged
            and not self._aborted
        )

    def stop_ingress(self) -> None:
        """Stop reading the ingress (any thread): answers still go out. For a graceful stop."""
        self._ingress_open = False

    def on_start(self) -> None:
        self.thread = threading.current_thread()
        self._thread_ident = threading.get_ident()
        tighten_timer_slack()  # parks of this agent end when asked, not 50 us later

    # -- the duty cycle ------------------------------------------------------------------

    def do_work(self) -> int:
        now_ns = self._now_ns = self._clock_ns()
        work = 0
        self._aborted = False
        if self._ingress_open:
            assembler = self._assembler
            limit = self.config.fragment_limit
            for subscription in self._subscriptions:
                work += subscription.controlled_poll(assembler, limit)
        if self._completions:
            work += self._send_completions(now_ns)
        if self._connecting:
            work += self._progress_connecting(now_ns)
        if self._backlogged:
            work += self._flush_backlogs(now_ns)
        if now_ns >= self._next_sweep_ns:
            self._next_sweep_ns = now_ns + _SWEEP_INTERVAL_NS
            self._sweep(now_ns)
        return work

    def on_close(self) -> None:
        """Answer what completed, then close every session with a notice."""
        now_ns = self._clock_ns()
        self._send_completions(now_ns)
        for session in self._table:
            self._close(session, "the broker is shutting down", now_ns, notify=True)

    # -- ingress ---------------------------------------------------------------------------

    def _on_fragment(
        self, buffer: AtomicBuffer, offset: int, length: int, header: Header
    ) -> Action:
        data = buffer.get_bytes(offset, length)
        try:
            request = _Request.FromString(data)
        except DecodeError:
            return self._malformed(data, header, "bytes that are not a TransportRequest")
        kind = request.WhichOneof("body")
        if kind == "connect":
            self.counters.requests += 1
            self._on_connect(request, header)
            return _CONTINUE
        if kind is None:
            return self._malformed(data, header, "a request without a body")
        session = self._table.get(request.session_id)
        if session is None or session.farewell:
            self.counters.requests += 1
            self._no_session(request, header)
            return _CONTINUE
        if header.context is not session.image:  # not the client that opened the session
            self.counters.requests += 1
            self._foreign(request, header)
            return _CONTINUE
        session.last_activity_ns = self._now_ns
        correlation_id = request.correlation_id
        if kind == "send":
            if len(session.backlog) >= self._abort_backlog or not self._send.can_accept():
                self.counters.aborted += 1
                self._aborted = True
                return _ABORT
            self.counters.requests += 1
            if self._acl is not None and self._forbidden(session, correlation_id, request):
                return _COMMIT
            self._send.process(request.send, self._completion(session, correlation_id, _SEND))
            return _COMMIT
        self.counters.requests += 1
        if kind == "pull":
            if self._acl is not None and self._forbidden(session, correlation_id, request):
                return _CONTINUE
            self._pull.process(
                request.pull,
                self._completion(session, correlation_id, _PULL),
                local=session.local_reads and request.pull.local_read,
            )
        elif kind == "keepalive":
            data = encode_envelope(correlation_id, session.session_id, _KEEPALIVE, _KEEPALIVE_BODY)
            self._respond(session, data, self._now_ns)
        else:  # close
            self._close(session, "closed by the client", self._now_ns, notify=False)
        return _CONTINUE

    def _forbidden(
        self, session: ServerSession, correlation_id: int, request: session_pb2.TransportRequest
    ) -> bool:
        """Whether the session's user may not make this send or pull (then answered FORBIDDEN).
        Each (permission, resource) is decided once per session and remembered."""
        if request.HasField("send"):
            needs = [(_PUB_TOPIC, request.send.topic)]
        else:
            needs = [(_SUB_GROUP, request.pull.consumer_group), (_SUB_TOPIC, request.pull.topic)]
        for need, name in needs:
            key = (need, name)
            granted = session.granted
            if key in granted:
                why = granted[key]
            else:
                assert self._acl is not None
                why = granted[key] = self._acl.refusal(session.user, need[0], name, need[1])
            if why is not None:
                code = ResponseCode.FORBIDDEN
                self.counters.errors_by_code[code] += 1
                self.counters.forbidden += 1
                envelope = _error_envelope(correlation_id, session.session_id, code, why)
                self._respond(session, envelope, self._now_ns)
                return True
        return False

    def _completion(
        self, session: ServerSession, correlation_id: int, field: int
    ) -> Callable[[ProtoMessage | PullAnswer], None]:
        append = self._completions.append
        bell = self.doorbell
        if bell is None:

            def complete(response: ProtoMessage | PullAnswer) -> None:
                append((session, correlation_id, field, response))

            return complete
        ring = bell.ring
        get_ident = threading.get_ident

        def complete_and_ring(response: ProtoMessage | PullAnswer) -> None:
            append((session, correlation_id, field, response))
            if get_ident() != self._thread_ident:  # another thread: the agent may sleep
                ring()

        return complete_and_ring

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
        if source == IPC_SOURCE and connect.local_reads and self.local_reads is not None:
            session.local_reads = True  # the client shares this host: see ConnectResponse
        if not self._open_publication(session):
            return
        self._table.add(session)
        self._connecting.add(session)
        if session.doorbell is None or self.doorbell is None:
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

    def _open_publication(self, session: ServerSession) -> bool:
        try:
            session.registration_id = self._aeron.async_add_exclusive_publication(
                with_ipc_mtu(session.response_channel), session.response_stream_id
            )
        except TransportError as exc:
            self.counters.connects_refused += 1
            _log.warning(
                "cannot open a response publication: client_id=%s channel=%s stream_id=%s: %s",
                session.client_id,
                session.response_channel,
                session.response_stream_id,
                exc,
            )
            return False
        return True

    # -- requests that cannot be served ----------------------------------------------------

    def _malformed(self, data: bytes, header: Header, what: str) -> Action:
        counters = self.counters
        counters.requests += 1
        counters.malformed += 1
        code = ResponseCode.INVALID_PARAMETER
        counters.errors_by_code[code] += 1
        correlation_id, session_id = salvage_envelope_ids(data)
        session = self._table.get(session_id)
        if session is None or session.image is not header.context:
            session = self._table.by_image(header.context)
            session_id = 0
        text = f"malformed request: {what}: length={len(data)}"
        if session is None or session.farewell:
            self._unanswerable(text, header)
        else:
            self._respond(
                session,
                _error_envelope(correlation_id, session_id or session.session_id, code, text),
                self._now_ns,
            )
        return _CONTINUE

    def _no_session(self, request: session_pb2.TransportRequest, header: Header) -> None:
        session_id = request.session_id
        code = SESSION_CLOSED_CODE
        self.counters.errors_by_code[code] += 1
        tombstone = self._table.tombstone(session_id)
        if tombstone is not None and tombstone.image is header.context:
            self.counters.closed_session += 1
            text = f"session closed: session_id={session_id} reason={tombstone.reason!r}"
            self._farewell(tombstone.route, request.correlation_id, session_id, code, text)
            return
        self.counters.unknown_session += 1
        text = f"unknown session: session_id={session_id}"
        self._answer_requester(request, header, code, text)

    def _foreign(self, request: session_pb2.TransportRequest, header: Header) -> None:
        """A request on a live session from another client than the one that opened it: the
        session is left alone; the sender hears NO_PERMISSION on its own session, if any."""
        code = ResponseCode.NO_PERMISSION
        self.counters.errors_by_code[code] += 1
        self.counters.foreign_session += 1
        count = self.counters.foreign_session
        if count <= 10 or count % 1000 == 0:
            _log.warning(
                "request refused: the session is another client's: session_id=%s "
                "image_session_id=%s count=%d",
                request.session_id,
                header.session_id,
                count,
            )
        text = f"session not opened by this client: session_id={request.session_id}"
        self._answer_requester(request, header, code, text)

    def _answer_requester(
        self, request: session_pb2.TransportRequest, header: Header, code: int, text: str
    ) -> None:
        """Answer an envelope-level error on the live session of the request's own image."""
        live = self._table.by_image(header.context)
        if live is None:
            self._unanswerable(text, header)
            return
        envelope = _error_envelope(request.correlation_id, request.session_id, code, text)
        self._respond(live, envelope, self._now_ns)

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

    def _farewell(
        self, route: tuple[str, int], correlation_id: int, session_id: int, code: int, text: str
    ) -> None:
        """Answer on ``route`` through a publication opened for it, closed once delivered."""
        envelope = _error_envelope(correlation_id, session_id, code, text)
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

    # -- answers ---------------------------------------------------------------------------

    def _send_completions(self, now_ns: int) -> int:
        completions = self._completions
        sent = 0
        while completions:
            session, correlation_id, field, response = completions.popleft()
            if session.state is SessionState.CLOSED:
                continue
            data, length = _answer_envelope(correlation_id, session.session_id, field, response)
            publication = session.publication
            if publication is not None and length > publication.max_message_length:
                self.counters.errors_by_code[ResponseCode.SYSTEM_ERROR] += 1
                text = (
                    f"{ANSWER_TOO_LONG}: length={length} "
                    f"max_message_length={publication.max_message_length} "
                    f"channel={session.response_channel!r}"
                )
                data = _error_envelope(
                    correlation_id, session.session_id, ResponseCode.SYSTEM_ERROR, text
                )
            self._respond(session, data, now_ns)
            sent += 1
        return sent

    def _respond(
        self, session: ServerSession, data: bytes | list[bytes | memoryview], now_ns: int
    ) -> None:
        self.counters.responses += 1
        if not session.send(data, now_ns):
            self._close(session, "the client is gone (response stream lost)", now_ns, notify=False)
            return
        backlog = len(session.backlog)
        if backlog and session.state is SessionState.CONNECTED:
            if session not in self._backlogged:
                self.counters.response_back_pressure += 1
                self._backlogged.add(session)
            if backlog > self.config.max_backlog_responses:
                self._close(session, "answers backed up past the limit", now_ns, notify=False)

    def _flush_backlogs(self, now_ns: int) -> int:
        work = 0
        timeout_ns = self.config.session_timeout_ms * _MS
        for session in list(self._backlogged):
            sent = session.flush_backlog(now_ns)
            if sent < 0:
                self._close(session, "the client is gone (response stream lost)", now_ns, False)
                continue
            work += sent
            if not session.backlog:
                self._backlogged.discard(session)
                if session.farewell:
                    self._close(session, "farewell delivered", now_ns, notify=False)
            elif now_ns - session.backlog_since_ns > timeout_ns:
                self._close(session, "answers stuck for the session timeout", now_ns, False)
        return work

    # -- session life cycle ----------------------------------------------------------------

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
            session.send(_error_envelope(0, session.session_id, SESSION_CLOSED_CODE, text), now_ns)
            session.flush_backlog(now_ns)
        session.close(reason)
        self._connecting.discard(session)
        self._backlogged.discard(session)
        self._table.remove(session, now_ns)
        if not session.farewell and (session.doorbell is None or self.doorbell is None):
            self._unrung_sessions -= 1
        if session.farewell:
            if self._farewells.get(session.route) is session:
                del self._farewells[session.route]
            return
        self.counters.sessions_closed += 1
        _log.info("session closed: %r reason=%s", session, reason)


def _answer_envelope(
    correlation_id: int, session_id: int, field: int, response: ProtoMessage | PullAnswer
) -> tuple[bytes | list[bytes | memoryview], int]:
    """The envelope of an answer and its length: a pull's batches as its raw section, in
    pieces for one vectored offer (:mod:`common._envelope`), else one serialised envelope."""
    if isinstance(response, PullAnswer):
        body = response.response.SerializeToString()
        pieces = response.pieces
        if pieces:  # the store's views (one per batch, ~170 in a bulk pull): nbytes at hand
            size = sum(
                piece.nbytes if type(piece) is memoryview else memoryview(piece).nbytes
                for piece in pieces
            )
            head, tail = encode_envelope_around(correlation_id, session_id, field, body, size)
            return [head, *pieces, tail], len(head) + size + len(tail)
        data = encode_envelope(correlation_id, session_id, field, body)
    else:
        data = encode_envelope(correlation_id, session_id, field, response.SerializeToString())
    return data, len(data)


def _error_envelope(correlation_id: int, session_id: int, code: int, text: str) -> bytes:
    body = common_pb2.Status(code=code, message=text).SerializeToString()
    return encode_envelope(correlation_id, session_id, _ERROR, body)
