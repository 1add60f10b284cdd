"""The session agent's request dispatch: each whole ``TransportRequest`` polled from the
ingress goes to its session's processor, or is refused.

:meth:`RequestDispatch._on_fragment` is the ingress's fragment handler (a longer request's
fragments go through its fragment assembler, which hands the request back whole): it decodes the
request, finds its session (bound to the ingress image that carried
its CONNECT, one identity compare) and calls the send or pull processor with a completion
callback, answers a keepalive, or closes the session; a CONNECT goes to the session lifecycle.
A pull or a send of a live session from its own client is read without protobuf, by one native
call each (:func:`~common.read_pull_request`, then :func:`~common.read_send_request`); every
other request, and a pull or send that is refused, is parsed by protobuf. A send is ABORTed, left on the ingress for a later poll, while the store cannot
take more or its session's answers are backed up. With an ACL, each send and pull is checked once per session
and (permission, resource). Requests that cannot be served (malformed, of a closed or unknown
session, on another client's session) are counted and answered with an envelope-level error
where there is a route back (see ``broker.session._agent``).

A send taken within :data:`SEND_FIRST_WITHIN_NS` of the one before is answered as its answer
is made, before the held pulls its store releases (``_send_first``; ``broker.session._answers``,
"the consumer's answer first").

A poll's share: an image's poll reads the frames that arrive while it runs, up to the fragment
limit (64). One-at-a-time sends answered at once keep their producer's image's poll going (the
answer wakes the producer, whose next send lands before the handler returns), at 5,000 msgs/s
for up to 64 sends, 10-20 ms, while a consumer's next pull waits unread on its own image (up to
8.4 ms in a trace). So a one-message fast send taken more than :data:`POLL_SHARE_NS` into the
duty cycle ends its image's poll (``BREAK``): the subscription's round robin goes on to the other
images in the same cycle, and the next cycle comes back to this one. Batches (several messages
a send) and sends of a cycle's first 250 us keep the poll going, so a backlog of sends is read
64 at a time as before (``docs/latency.md``, "A poll's share").

Caller: ``SessionAgent`` (one of its roles, see ``broker.session._lifecycle``): the hot path, one
call per request, as before the agent was split.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial as _partial
from typing import Final

from google.protobuf.message import DecodeError

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import WakeCallback
from aeromq.broker.processor.send import SendDone, SendProcessor
from aeromq.broker.security._acl import Permission, ResourceKind
from aeromq.broker.session._answer_envelopes import error_envelope
from aeromq.broker.session._answers import AnswerWriter
from aeromq.broker.session._session import ServerSession
from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    SESSION_CLOSED_CODE,
    PullRequestFields,
    ResponseCode,
    SendRequestFields,
    encode_envelope,
    read_pull_request,
    read_send_request,
    retry_topic,
    salvage_envelope_ids,
)
from aeromq.proto import session_pb2
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer.controlled_fragment_assembler import ControlledFragmentAssembler
from aeromq.transport.logbuffer.frame_descriptor import FLAGS_FIELD_OFFSET, UNFRAGMENTED
from aeromq.transport.logbuffer.header import Header

__all__ = ["POLL_SHARE_NS", "SEND_FIRST_WITHIN_NS", "RequestDispatch"]

_log = logging.getLogger(__name__)

_Request = session_pb2.TransportRequest
_read_pull: Final = read_pull_request
_read_send: Final = read_send_request
_SEND: Final = RESPONSE_FIELD_NUMBERS["send"]
_PULL: Final = RESPONSE_FIELD_NUMBERS["pull"]
_KEEPALIVE: Final = RESPONSE_FIELD_NUMBERS["keepalive"]
_KEEPALIVE_BODY: Final = session_pb2.KeepAliveResponse().SerializeToString()
SEND_FIRST_WITHIN_NS: Final = 500_000
"""A send taken within this long of the one before (sends faster than 2,000 a second) is
answered before the held pulls its store releases; a slower one after them (see module)."""
POLL_SHARE_NS: Final = 250_000
"""A one-message send taken this long into its duty cycle ends the poll of its image (see
module: a poll's share)."""
_ABORT: Final = Action.ABORT
_BREAK: Final = Action.BREAK
_COMMIT: Final = Action.COMMIT
_CONTINUE: Final = Action.CONTINUE
_PUB_TOPIC: Final = (ResourceKind.TOPIC, Permission.PUB)
_SUB_TOPIC: Final = (ResourceKind.TOPIC, Permission.SUB)
_SUB_GROUP: Final = (ResourceKind.GROUP, Permission.SUB)


class RequestDispatch(AnswerWriter):
    """The requests' dispatch, for ``SessionAgent`` (see module)."""

    _send: SendProcessor
    _pull: PullProcessor
    _abort_backlog: int  # a send is ABORTed while its session's backlog is this long
    _aborted: bool  # a send left on the ingress this cycle: retry without a ring
    _fragment_failed: bool  # a request's handling raised this cycle (see _on_fragment)
    _cycle_stored: bool  # a send was taken this cycle: its pull answers go out at once
    _pulls_awaited: int  # pulls answered whose next pulls were not read yet (``_agent``)
    _last_send_ns: int  # the cycle clock of the last send taken (``_send_first``)
    _send_gap_ns: int  # the time from the send before it to that one (``_answers``' yield)
    _clock_ns: Callable[[], int]  # the agent's clock (a poll's share, see module)
    _held_wakes: list[WakeCallback]  # (``_send_first``'s, reused)
    _sends_at_once: bool  # in ``_send_first``: a stored send's answer goes out as it is made
    _assembler: ControlledFragmentAssembler  # the fragments of longer requests (_on_fragment)

    def _send_first(self, send: SendRequestFields, done: SendDone) -> None:
        """A send that came within :data:`SEND_FIRST_WITHIN_NS` of the one before: processed
        with the wakes of the held pulls its store releases put off (``defer_wakes``), its
        answer offered and its producer rung as it is made (``_sends_at_once``), then those
        pulls answered (see module)."""
        hold = self._pull.hold_service
        wakes = self._held_wakes
        hold.defer_wakes(wakes)
        self._sends_at_once = True  # its answer offered as it is made (``_answers``)
        try:
            self._send.process(send, done)
        finally:  # (whatever happened, the pulls released are answered)
            self._sends_at_once = False
            hold.defer_wakes(None)
            if wakes:
                self._answers_now()
                hold.wake_deferred(wakes)

    def _on_fragment(
        self, buffer: AtomicBuffer, offset: int, length: int, header: Header
    ) -> Action:
        # the whole dispatch in a try, which costs nothing unless it raises: a raise ends the
        # image's poll at this fragment (the image reports it), leaving later ones unread, so
        # the cycle must not settle (see SessionAgent: a cycle that settled)
        try:
            # polled with this method: a fragment of a longer request goes to the assembler,
            # which hands the request back here whole (its header then says unfragmented); a
            # Python call fewer a request than polling with the assembler
            flags = header.buffer.get_uint8(header.offset + FLAGS_FIELD_OFFSET)  # header.flags
            if flags & UNFRAGMENTED != UNFRAGMENTED:
                return self._assembler(buffer, offset, length, header)
            data = buffer.get_bytes(offset, length)
            pull = _read_pull(data)  # one native call, None for anything but a pull
            if pull is not None:
                session = self._table.get(pull.session_id)
                # a pull of a live session from its own client: the common case, without protobuf;
                # any other goes the protobuf way below, which refuses it with the words it had
                if session is not None and not session.farewell and header.context is session.image:
                    session.last_activity_ns = self._now_ns
                    self.counters.requests += 1
                    correlation_id = pull.correlation_id
                    if self._acl is not None and self._forbidden(session, correlation_id, pull):
                        return _CONTINUE
                    if session.pulls_awaited:  # the next pull of one answered (``_agent``)
                        session.pulls_awaited -= 1
                        self._pulls_awaited -= 1
                    elif session.pulls_at_once:
                        session.pulls_at_once -= 1
                    self._pull.process(
                        pull,
                        _partial(self._complete, session, correlation_id, _PULL),
                        local=session.local_reads and pull.local_read,
                    )
                    return _CONTINUE
            else:
                send = _read_send(data)  # one native call more, None for anything but a send
                if send is not None:
                    session = self._table.get(send.session_id)
                    # a send of a live session from its own client: the common case, as the pull's
                    if (
                        session is not None
                        and not session.farewell
                        and header.context is session.image
                    ):
                        session.last_activity_ns = self._now_ns
                        if (
                            len(session.backlog) >= self._abort_backlog
                            or not self._send.can_accept()
                        ):
                            self.counters.aborted += 1
                            self._aborted = True
                            return _ABORT
                        self.counters.requests += 1
                        correlation_id = send.correlation_id
                        if self._acl is not None and self._forbidden(session, correlation_id, send):
                            return _COMMIT
                        self._cycle_stored = True  # (the cycle's pull answers: at once)
                        done = _partial(self._complete, session, correlation_id, _SEND)
                        now_ns = self._now_ns
                        self._send_gap_ns = gap_ns = now_ns - self._last_send_ns
                        self._last_send_ns = now_ns
                        if gap_ns < SEND_FIRST_WITHIN_NS:
                            processor = self._send
                            stored = processor.messages_stored
                            self._send_first(send, done)
                            # (see module: a poll's share) the other images' turn, after a
                            # one-message send taken this far into the cycle
                            if (
                                processor.messages_stored == stored + 1
                                and self._clock_ns() - now_ns > POLL_SHARE_NS
                            ):
                                return _BREAK
                        else:
                            self._send.process(send, done)
                        return _COMMIT
            try:
                request = _Request.FromString(data)
            except DecodeError:
                return self._malformed(data, header, "bytes that are not a TransportRequest")
            kind = request.WhichOneof("body")
            if kind != "send" and kind != "pull":  # the others are rare: tested after them
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
                self._cycle_stored = True
                now_ns = self._now_ns  # (the send clock, as above: the rule is not applied)
                self._send_gap_ns = now_ns - self._last_send_ns
                self._last_send_ns = now_ns
                self._send.process(
                    request.send, _partial(self._complete, session, correlation_id, _SEND)
                )
                return _COMMIT
            self.counters.requests += 1
            if kind == "pull":
                if self._acl is not None and self._forbidden(session, correlation_id, request):
                    return _CONTINUE
                if session.pulls_awaited:  # (as above)
                    session.pulls_awaited -= 1
                    self._pulls_awaited -= 1
                elif session.pulls_at_once:
                    session.pulls_at_once -= 1
                self._pull.process(
                    request.pull,
                    _partial(self._complete, session, correlation_id, _PULL),
                    local=session.local_reads and request.pull.local_read,
                )
            elif kind == "keepalive":
                data = encode_envelope(
                    correlation_id, session.session_id, _KEEPALIVE, _KEEPALIVE_BODY
                )
                self._respond(session, data, self._now_ns)
            else:  # close
                self._close(session, "closed by the client", self._now_ns, notify=False)
            return _CONTINUE
        except BaseException:
            self._fragment_failed = True
            raise

    def _forbidden(
        self,
        session: ServerSession,
        correlation_id: int,
        request: session_pb2.TransportRequest | PullRequestFields | SendRequestFields,
    ) -> bool:
        """Whether the session's user may not make this send or pull (then answered FORBIDDEN).
        A pull needs ``sub`` on its group and its topic; ``sub`` on the group covers the group's
        retry topic (as RocketMQ's ACL, and the gRPC side's send-back). Each (permission,
        resource) is decided once per session and remembered."""
        if isinstance(request, PullRequestFields):
            group, topic = request.consumer_group, request.topic
        elif isinstance(request, SendRequestFields):
            group, topic = None, request.topic
        elif request.HasField("send"):
            group, topic = None, request.send.topic
        else:
            group, topic = request.pull.consumer_group, request.pull.topic
        if group is None:  # a send
            needs = [(_PUB_TOPIC, topic)]
        else:
            needs = [(_SUB_GROUP, group)]
            if topic != retry_topic(group):
                needs.append((_SUB_TOPIC, topic))
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
                envelope = error_envelope(correlation_id, session.session_id, code, why)
                self._respond(session, envelope, self._now_ns)
                return True
        return False

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
                error_envelope(correlation_id, session_id or session.session_id, code, text),
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
        envelope = error_envelope(request.correlation_id, request.session_id, code, text)
        self._respond(live, envelope, self._now_ns)
