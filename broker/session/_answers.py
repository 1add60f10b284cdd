"""The session agent's answers: the completions the processors queue, written to their
sessions in the order they completed, and the backlogs of sessions whose answers were back
pressured.

Only the agent's thread writes to a session. A processor completes a request on whichever thread
finishes it (inline, the flusher under SYNC flush, the long-poll hold service) by calling the
callback :meth:`AnswerWriter._completion` gave it: that appends to a queue and, from another
thread, rings the agent's doorbell. Each duty cycle sends what completed
(:meth:`AnswerWriter._send_completions`) and retries backlogs
(:meth:`AnswerWriter._flush_backlogs`); a session whose answers back up past
``max_backlog_responses``, or stay stuck for the session timeout, is closed.

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

import threading
from collections import deque
from collections.abc import Callable
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

__all__ = ["AnswerWriter", "Completion"]

_MS: Final = 1_000_000
_PULL: Final = RESPONSE_FIELD_NUMBERS["pull"]
_stored_send: Final = stored_send_envelope

Answer = ProtoMessage | PullAnswer | StoredSendAnswer
"""A processor's answer to a request (a stored send's and a found pull's written natively)."""
Completion = tuple[ServerSession, int, int, Answer]
"""An answer to send: (session, correlation id, response field number, response)."""


class AnswerWriter(SessionLifecycle):
    """The answers' writing, for ``SessionAgent`` (see module)."""

    _completions: deque[Completion]
    _thread_ident: int  # the agent's thread: a completion from another rings the doorbell
    _pulls_awaited: int  # pulls answered whose next pulls were not read yet (``_agent``)

    def _completion(
        self, session: ServerSession, correlation_id: int, field: int
    ) -> Callable[[Answer], None]:
        append = self._completions.append
        bell = self.doorbell
        if bell is None:

            def complete(response: Answer) -> None:
                append((session, correlation_id, field, response))

            return complete
        ring = bell.ring
        get_ident = threading.get_ident

        def complete_and_ring(response: Answer) -> None:
            append((session, correlation_id, field, response))
            if get_ident() != self._thread_ident:  # another thread: the agent may sleep
                ring()

        return complete_and_ring

    def _send_completions(self, now_ns: int) -> int:
        completions = self._completions
        sent = 0
        while completions:
            session, correlation_id, field, response = completions.popleft()
            if session.state is SessionState.CLOSED:
                continue
            if type(response) is StoredSendAnswer:  # a stored send's: tens of bytes, one C call
                stored = _stored_send(correlation_id, session.session_id, response)
                self._respond(session, stored, now_ns)
                sent += 1
                continue
            data, length = answer_envelope(correlation_id, session.session_id, field, response)
            publication = session.publication
            if (
                type(data) is list
                and publication is not None
                and length <= publication.max_payload_length
            ):  # one frame: joined (see module)
                data = b"".join(data)
            if publication is not None and length > publication.max_message_length:
                self.counters.errors_by_code[ResponseCode.SYSTEM_ERROR] += 1
                text = (
                    f"{ANSWER_TOO_LONG}: length={length} "
                    f"max_message_length={publication.max_message_length} "
                    f"channel={session.response_channel!r}"
                )
                data = error_envelope(
                    correlation_id, session.session_id, ResponseCode.SYSTEM_ERROR, text
                )
            self._respond(session, data, now_ns)
            sent += 1
            if field == _PULL:  # its consumer's next pull may come lazy (``_agent``)
                self._pulls_awaited += 1
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
