"""The session agent's answers: the completions the processors queue, written to their
sessions in the order they completed, and the backlogs of sessions whose answers were back
pressured.

Only the holder of the agent's write lock (``_write_lock``) writes to a session: the agent's
thread holds it through each duty cycle. A processor completes a request on whichever thread
finishes it (inline, the flusher under SYNC flush, a broker group's replication as the high
watermark passes the send, the long-poll hold service) by calling the callback the dispatch
gave it (:meth:`AnswerWriter._complete`, bound to the request): on another thread that appends
to a queue and rings the agent's doorbell. Each duty cycle sends what completed
(:meth:`AnswerWriter._send_completions`) and retries backlogs
(:meth:`AnswerWriter._flush_backlogs`); a session whose answers back up past
``max_backlog_responses``, or stay stuck for the session timeout, is closed.

A send's or a pull's answer completed on another thread goes out from that thread instead,
when it can at once (:meth:`AnswerWriter._answer_from_here`): the write lock free (the agent
between cycles, asleep most often), no completion queued (answers of one session go in the
order they completed), its session connected with nothing backed up, the answer one frame, and
the offer taken. Its client is rung from there too. The agent is not woken for it: in a broker
group the replication's thread answers the sends a high watermark passes, and the pulls it
releases, where it had rung the agent, which woke only once that thread let go of the
interpreter (170-200 us a commit round, traced) and then spent its own cycle on them. Any other
case is queued as before.

The consumer's answer first: on the agent's thread, in a cycle that took a send, a pull's
answer is not queued but offered at once (:meth:`AnswerWriter._answer_at_once`), and its
client's doorbell rung at once, unless an answer of its session is queued before it (answers of
one session go in the order they completed) or it cannot go in one frame now. That is a held
pull the send's arrival released, answered on this thread inside the send's store (before the
send's answer is even made), or a pull read after the send in the same poll. At one message at a
time the consumer's wake-up, the longest hop of a message (120-360 us), then starts while the
agent makes, offers and rings the producer's answer, instead of after it. Every other answer
rings its client once, at the cycle's end (``broker.session._agent``).

After a quiet while, the consumer gets the CPU too: when that ring woke a sleeping consumer and
the cycle's send came at least ``QUIET_YIELD_NS`` (0.9 ms) after the send before it (fewer than
about 1,100 one-at-a-time sends a second; the send clock of ``_dispatch``, which the send-first
rule below reads too), the agent calls ``sched_yield()`` right after the ring (``quiet_yields``
counts them). On a VM that wakes a thread on its waker's CPU (this project's:
``docs/latency.md``, "Where a woken process runs") the woken consumer mostly preempts the agent
at once, but in about one wake-up in twelve at 10 msgs/s it waited until the agent had made,
offered and rung the producer's answer and gone to sleep, 100-250 us more; the yield lets it run
first (traced, such wake-ups fell from 7.8% to 3.3%: the rest do not look like a wait for this
CPU). The producer's answer then comes after the consumer's turn (its ``send()`` 5-110 us
longer); up to 1,000 msgs/s the message gains more than that (the p50 23-39 us lower at 200 to
1,000 msgs/s, though 65-130 us more at the p99 at 200 and 500), but at a few thousand sends a
second the round trip is the producer's whole budget: a send 0.5-0.9 ms after the one before
has the consumer rung first without the yield, and a faster one goes first itself (below).

But when sends come fast (one within ``SEND_FIRST_WITHIN_NS``, 0.5 ms, of the one before:
``_dispatch``), the send goes first: the wakes of the held pulls its store releases are put off
(``PullHoldService.defer_wakes``), its answer is offered and its producer rung as the answer is
made, in the send's own completion (:meth:`AnswerWriter._answer_send_at_once`: before the send
processor's meter and before the rest of the cycle), and only then are those pulls answered,
at once as above. At those rates a one-at-a-time producer's schedule is what falls behind (its
round trip carried the pull's answer and the consumer's ring, 40-60 us of a 200 us budget at
5,000 msgs/s), and a consumer kept busy loses less by waiting for it. A producer sending back
to back reads that answer while the agent finishes its cycle: the 5-6 us that the rest of the
fragment's poll and the cycle's completions took before the answer went out (traced) are off
its round trip. A send's answer goes out so only when nothing of its session is queued before
it, the session is neither closed nor backed up and the offer is taken; otherwise it is queued
as any other. A UDP client's answers
ring the broker's driver at the cycle's end whatever they are: it is a thread of this process,
which a ring in mid-cycle would have contend for the GIL with the agent.

An answer in pieces (a pull's envelope around its stored batches) that fits one frame is
joined before it is offered: the copy of a few hundred bytes costs less than the vectored
offer's dozen Python calls, and the one-frame offer is one native call
(``transport/logbuffer/_term_io.c``); a longer one is offered vectored, its batches not copied
first.

Caller: ``SessionAgent`` (one of its roles, see ``broker.session._lifecycle``), and its request
dispatch (``_dispatch``), which answers keepalives and refusals through
:meth:`AnswerWriter._respond`.
"""

from __future__ import annotations

import os
from collections import deque
from threading import Lock, get_ident
from typing import Final

from google.protobuf.message import Message as ProtoMessage

from aeromq.broker.session._answer_envelopes import answer_envelope, error_envelope
from aeromq.broker.session._lifecycle import SessionLifecycle
from aeromq.broker.session._session import ServerSession, SessionState
from aeromq.common import (
    ANSWER_TOO_LONG,
    RESPONSE_FIELD_NUMBERS,
    PullAnswer,
    ResponseCode,
    StoredSendAnswer,
    stored_send_envelope,
)
from aeromq.transport.client import ExclusivePublication

__all__ = ["AnswerWriter", "Completion"]

_MS: Final = 1_000_000
_PULL: Final = RESPONSE_FIELD_NUMBERS["pull"]
_FROM_ANY_THREAD: Final = frozenset((RESPONSE_FIELD_NUMBERS["send"], _PULL))
"""The answers a completing thread may offer itself (:meth:`AnswerWriter._answer_from_here`)."""
_stored_send: Final = stored_send_envelope
_sched_yield: Final = os.sched_yield
QUIET_YIELD_NS: Final = 900_000
"""A consumer rung at once in a cycle that stored a send is given the agent's CPU
(``sched_yield()``) when that send came at least this long after the send before it (see
module)."""

Answer = ProtoMessage | PullAnswer | StoredSendAnswer
"""A processor's answer to a request (a stored send's and a found pull's written natively)."""
Completion = tuple[ServerSession, int, int, Answer]
"""An answer to send: (session, correlation id, response field number, response)."""


class AnswerWriter(SessionLifecycle):
    """The answers' writing, for ``SessionAgent`` (see module)."""

    _completions: deque[Completion]
    _thread_ident: int  # the agent's thread: a completion from another rings the doorbell
    _write_lock: Lock  # held by whoever writes to a session (see module)
    _pulls_awaited: int  # pulls answered whose next pulls were not read yet (``_agent``)
    _at_once_sessions: list[ServerSession]  # sessions with pulls answered at once this cycle
    _cycle_stored: bool  # a send was taken this cycle (``_dispatch``)
    _send_gap_ns: int  # the time from the send before the last to it (``_dispatch``)
    _sends_at_once: bool  # a send is processed first (``_dispatch._send_first``): see module

    def _complete(
        self, session: ServerSession, correlation_id: int, field: int, response: Answer
    ) -> None:
        """A request's completion (the processors' ``on_done``, bound to its request with
        ``functools.partial`` by the dispatch: no closure made a request, and a call fewer):
        queue the answer; from another thread, ring the agent's doorbell (it may sleep). On the
        agent's thread, in a cycle that took a send, a pull's answer goes out at once and its
        client is rung at once (:meth:`_answer_at_once`, see module), unless an answer of its
        session is queued before it."""
        if self._thread_ident != get_ident():
            if field in _FROM_ANY_THREAD and self._answer_from_here(
                session, correlation_id, field, response
            ):
                return
            self._completions.append((session, correlation_id, field, response))
            bell = self.doorbell
            if bell is not None:
                bell.ring()
            return
        if self._sends_at_once and type(response) is StoredSendAnswer:
            if self._answer_send_at_once(session, correlation_id, response):
                return
        elif field == _PULL and self._cycle_stored:
            for queued in self._completions:  # (in order: none of its session before it)
                if queued[0] is session:
                    break
            else:
                if self._answer_at_once(session, correlation_id, response):
                    bell = session.doorbell
                    # its consumer wakes on another core meanwhile, or, after a quiet while,
                    # on this one, first (see module)
                    if bell is not None and bell.ring() and self._send_gap_ns >= QUIET_YIELD_NS:
                        self.counters.quiet_yields += 1
                        _sched_yield()  # (releases the interpreter too)
                    return
        self._completions.append((session, correlation_id, field, response))

    def _answers_now(self) -> None:
        """Offer the completions queued so far and ring their clients now, not at the cycle's
        end (a send answered before the pulls its store released: ``_dispatch``)."""
        if self._completions:
            self._send_completions(self._now_ns)
        if self._rings:
            self._ring_bells()

    def _ring_bells(self) -> None:
        """Ring each bell the answers so far gave work, once, in the order added, and forget
        them (the cycle's end, ``_answers_now``, the close)."""
        rings = self._rings
        for bell in rings.values():
            bell.ring()
        rings.clear()

    def _answer_from_here(
        self, session: ServerSession, correlation_id: int, field: int, response: Answer
    ) -> bool:
        """Offer a send's or a pull's answer on the completing thread (not the agent's) and
        ring its client (see module); False, with nothing offered, when it must be queued
        instead. A pull answered so counts among those whose next pulls are awaited
        (``_agent``), as one the agent's cycle answered."""
        lock = self._write_lock
        if not lock.acquire(blocking=False):  # the agent is in a cycle: it will take it
            return False
        try:
            publication = session.publication
            if (
                publication is None
                or self._completions
                or session.backlog
                or session.state is not SessionState.CONNECTED
                or not _offer_one_frame(
                    publication, session.session_id, correlation_id, field, response
                )
            ):
                return False
            self.counters.responses += 1
            if field == _PULL:
                session.pulls_awaited += 1
                self._pulls_awaited += 1
        finally:
            lock.release()
        bell = session.doorbell or session.network_bell
        if bell is not None:
            bell.ring()
        return True

    def _answer_at_once(
        self, session: ServerSession, correlation_id: int, response: Answer
    ) -> bool:
        """Offer a pull's answer at once (see module; the caller rings its client's doorbell at
        once too, a UDP client's network bell rings at the cycle's end); False, with nothing
        offered, when it cannot go in one frame now (its session closed, connecting or backed
        up, an answer longer than a frame, back pressure): it is then queued as any other."""
        publication = session.publication
        if publication is None or session.backlog or session.state is SessionState.CLOSED:
            return False
        if not _offer_one_frame(publication, session.session_id, correlation_id, _PULL, response):
            return False
        self.counters.responses += 1
        if not session.pulls_at_once:  # counted into the awaited after the cycle's polls
            self._at_once_sessions.append(session)
        session.pulls_at_once += 1
        if session.doorbell is None:
            bell = session.network_bell  # the broker's driver: at the cycle's end (see module)
            if bell is not None:
                session.ring(bell)
        return True

    def _answer_send_at_once(
        self, session: ServerSession, correlation_id: int, response: StoredSendAnswer
    ) -> bool:
        """Offer a stored send's answer at once, in the fragment's handler, and ring its IPC
        client's doorbell at once (a UDP client's network bell at the cycle's end, see module);
        False, with nothing offered, when it must be queued instead: an answer of its session
        queued before it, the session closed, connecting or backed up, or the offer refused."""
        completions = self._completions
        if completions:
            for queued in completions:  # (in order: none of its session before it)
                if queued[0] is session:
                    return False
        publication = session.publication
        if (
            publication is None
            or session.backlog
            or session.state is SessionState.CLOSED
            or publication.offer(_stored_send(correlation_id, session.session_id, response)) <= 0
        ):
            return False
        self.counters.responses += 1
        bell = session.doorbell
        if bell is not None:
            bell.ring()
        elif session.network_bell is not None:
            session.ring(session.network_bell)
        return True

    def _send_completions(self, now_ns: int) -> int:
        completions = self._completions
        sent = 0
        counters = self.counters
        while completions:
            session, correlation_id, field, response = completions.popleft()
            if session.state is SessionState.CLOSED:
                continue
            publication = session.publication
            if type(response) is StoredSendAnswer:  # a stored send's: tens of bytes, one C call
                data: bytes | list[bytes | memoryview] = _stored_send(
                    correlation_id, session.session_id, response
                )
            else:
                data, length = answer_envelope(correlation_id, session.session_id, field, response)
                if (
                    type(data) is list
                    and publication is not None
                    and length <= publication.max_payload_length
                ):  # one frame: joined (see module)
                    data = b"".join(data)
                if publication is not None and length > publication.max_message_length:
                    counters.errors_by_code[ResponseCode.SYSTEM_ERROR] += 1
                    text = (
                        f"{ANSWER_TOO_LONG}: length={length} "
                        f"max_message_length={publication.max_message_length} "
                        f"channel={session.response_channel!r}"
                    )
                    data = error_envelope(
                        correlation_id, session.session_id, ResponseCode.SYSTEM_ERROR, text
                    )
                if field == _PULL:  # its consumer's next pull may come lazy (``_agent``)
                    session.pulls_awaited += 1
                    self._pulls_awaited += 1
            sent += 1
            # _respond's and the session's send written out for the common case, a frame
            # offered at once with nothing backed up (two calls fewer an answer); any other
            # case (back pressure, a closed stream, a vectored answer) goes through them
            if (
                type(data) is bytes
                and publication is not None
                and not session.backlog
                and publication.offer(data) > 0
            ):
                counters.responses += 1
                bell = session.doorbell or session.network_bell
                if bell is not None:
                    rings = session.rings
                    if rings is None:
                        bell.ring()
                    else:
                        rings[id(bell)] = bell
                continue
            self._respond(session, data, now_ns)
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


def _offer_one_frame(
    publication: ExclusivePublication,
    session_id: int,
    correlation_id: int,
    field: int,
    response: Answer,
) -> bool:
    """Offer the answer ``response`` in one frame now; False, with nothing offered, when it is
    longer than a frame or the offer is refused (back pressure, a closed stream). A stored
    send's is tens of bytes, one native call; an answer in pieces is joined (see module)."""
    if type(response) is StoredSendAnswer:
        data: bytes | list[bytes | memoryview] = _stored_send(correlation_id, session_id, response)
    else:
        data, length = answer_envelope(correlation_id, session_id, field, response)
        if length > publication.max_payload_length:
            return False
        if type(data) is list:
            data = b"".join(data)
    return publication.offer(data) > 0  # type: ignore[arg-type]  # bytes by now
