"""``AnswerDispatcher``: turns the broker's answers into the outcomes of a client session's
pending requests.

Each answer (a ``TransportResponse`` envelope, :func:`~common.encode_envelope`) comes whole: an
unfragmented one straight from the session's poll (:meth:`~AnswerDispatcher.on_fragment`, the
poll's handler, which splits its raw section out), the fragments of a longer one through the
session's :class:`~client._answer_assembler.AnswerAssembler`, which hands it back to
``on_fragment`` whole, or already split when it is a pull answer
(:meth:`~AnswerDispatcher.on_answer`), a malformed one with its first bytes
(:meth:`~AnswerDispatcher.on_malformed`). The dispatcher pops the request's future from
the pending table by correlation id and completes it: the CONNECT answer with the session's id
(which it records), a stored send's with a :class:`~common.SendAnswer` read in one native
call without protobuf, another send's or a keepalive's with its body, a pull's with a
:class:`~common.PullAnswer` (its control fields beside its raw batches; a
:class:`~common.PulledAnswer`, read in one native call, unless it is a refusal), an envelope-level
error with the error of its code (``SESSION_CLOSED_CODE`` also fails the session).

Caller: the thread that reads the session's answers, holding the readers' poll lock
(``_answer_readers.py``): one at a time. Affects: the pending table,
``SessionState.session_id`` (once) and ``last_heard_ns``, the session's failure.
"""

from __future__ import annotations

import time
from concurrent.futures import InvalidStateError
from typing import Final

from google.protobuf.message import DecodeError

from aeromq.client._answer_assembler import AnswerAssembler
from aeromq.client._pending_requests import PendingRequests, reject, resolve
from aeromq.client._session_state import SESSION_LOG, SessionState
from aeromq.client.failover import error_for_status
from aeromq.common import (
    ENVELOPE_HEAD_MAX_LENGTH,
    SESSION_CLOSED_CODE,
    CorruptMessageError,
    IllegalStateError,
    PullAnswer,
    PulledAnswer,
    read_pulled_answer,
    read_send_answer,
    salvage_envelope_ids,
    split_raw_section,
)
from aeromq.proto import session_pb2
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header
from aeromq.transport.logbuffer.frame_descriptor import FLAGS_FIELD_OFFSET, UNFRAGMENTED

__all__ = ["SEND_ANSWER_MAX_LENGTH", "AnswerDispatcher"]

_Response = session_pb2.TransportResponse
SEND_ANSWER_MAX_LENGTH: Final = 512
"""Answers up to this long are first tried as a stored send's (a send's answer is about 60
bytes: its ids, offsets, store host and broker name); longer ones are read by protobuf at once."""


class AnswerDispatcher:
    """Completes a session's pending requests with the broker's answers (see module); counts
    the answers that match none: ``foreign_responses`` (of another session on the same
    stream), ``unmatched_responses`` (of a request no longer pending, keepalives aside)."""

    __slots__ = (
        "_futures",
        "_pending",
        "_state",
        "assembler",
        "foreign_responses",
        "unmatched_responses",
    )

    def __init__(self, state: SessionState, pending: PendingRequests) -> None:
        self._state = state
        self._pending = pending
        self._futures = pending.futures
        self.foreign_responses = 0
        self.unmatched_responses = 0
        self.assembler = AnswerAssembler(self.on_fragment, self.on_answer, self.on_malformed)
        """Where :meth:`on_fragment` (the handler the session's response subscription is polled
        with) sends the fragments of longer answers."""

    def on_fragment(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        """A whole answer in one fragment: a stored send's read by one native call
        (:func:`~common.read_send_answer`), a pull's (its batches and control fields, no
        refusal) by another (:func:`~common.read_pulled_answer`, straight from the log buffer,
        its batches copied out once), each request completed here (the common answers: no
        further Python call); any other's raw section copied out once and the rest parsed
        without it (:meth:`on_answer`)."""
        # in a try, which costs nothing unless it raises: a raise ends the poll at this
        # fragment, so the readers must not take it for one that read to the end
        # (SessionState.answer_failed)
        try:
            # The session polls with this method: a fragment of a longer answer goes to the
            # assembler, which hands the answer back here whole (its header then says
            # unfragmented), or with its raw section apart to on_answer. (A Python call fewer an
            # answer than polling with the assembler, which passes whole frames straight on.)
            flags = header.buffer.get_uint8(header.offset + FLAGS_FIELD_OFFSET)  # header.flags
            if flags & UNFRAGMENTED != UNFRAGMENTED:
                self.assembler(buffer, offset, length, header)
                return
            whole: bytes | None = None
            if length <= SEND_ANSWER_MAX_LENGTH:
                whole = buffer.get_bytes(offset, length)
                answer = read_send_answer(whole)
                if answer is not None:  # completes its request as on_answer does a send's
                    state = self._state
                    state.last_heard_ns = time.monotonic_ns()
                    if answer.session_id != state.session_id:
                        self.foreign_responses += 1
                        return
                    future = self._futures.pop(answer.correlation_id, None)
                    if future is None:
                        self.unmatched_responses += 1
                        return
                    try:  # resolve(), without its call
                        future.set_result(answer)
                    except InvalidStateError:  # timed out or failed meanwhile
                        return
                    return
            pulled = read_pulled_answer(buffer, offset, length)
            if pulled is not None:  # a pull's: completed as on_answer does, without protobuf
                state = self._state
                state.last_heard_ns = time.monotonic_ns()
                if pulled.session_id != state.session_id:
                    self.foreign_responses += 1
                    return
                future = self._futures.pop(pulled.correlation_id, None)
                if future is None:
                    self.unmatched_responses += 1
                    return
                try:  # resolve(), without its call: a pull a message keeping up
                    future.set_result(PulledAnswer(pulled))
                except InvalidStateError:  # timed out or failed meanwhile
                    return
                return
            if whole is not None:
                head = whole[:ENVELOPE_HEAD_MAX_LENGTH]
            else:
                head = buffer.get_bytes(offset, ENVELOPE_HEAD_MAX_LENGTH)
            raw: bytes | None = None
            try:
                section = split_raw_section(head, length)
            except CorruptMessageError as exc:
                self.on_malformed(head, exc)
                return
            if section is not None:
                raw = buffer.get_bytes(offset + section.offset, section.length)
                end = section.offset + section.length
                data = head[: section.tag_offset] + buffer.get_bytes(offset + end, length - end)
            else:
                data = whole if whole is not None else buffer.get_bytes(offset, length)
            self.on_answer(data, raw, length)
        except Exception:
            self._state.answer_failed = True
            raise

    def on_answer(self, data: bytes, raw: bytes | None, length: int) -> None:
        """A whole message: ``data`` without its raw section ``raw`` (if any), ``length``
        bytes in all; completes its request's future."""
        # (in a try: see on_fragment; a fragmented answer comes here from the assembler)
        try:
            try:
                response = _Response.FromString(data)
            except DecodeError:
                SESSION_LOG.warning("malformed response on the session: length=%d", length)
                return
            state = self._state
            state.last_heard_ns = time.monotonic_ns()
            kind = response.WhichOneof("body")
            if kind == "connect":
                future = self._futures.pop(response.correlation_id, None)
                if future is not None and not state.session_id:
                    state.session_id = response.session_id
                    resolve(future, response.connect)
                return
            if response.session_id != state.session_id:
                self.foreign_responses += 1
                return
            future = self._futures.pop(response.correlation_id, None)
            if kind == "error":
                status = response.error
                error = error_for_status(
                    status, session_id=state.session_id, correlation_id=response.correlation_id
                )
                if status.code == SESSION_CLOSED_CODE:
                    self._pending.fail(error)
                if future is not None:
                    reject(future, error)
                return
            if future is None:
                if kind != "keepalive":
                    self.unmatched_responses += 1
                return
            if kind == "send":
                resolve(future, response.send)
            elif kind == "pull":
                try:  # resolve(), without its call: a pull a message keeping up
                    future.set_result(PullAnswer(response.pull, raw))
                except InvalidStateError:  # timed out or failed meanwhile
                    return
            elif kind == "keepalive":
                resolve(future, response.keepalive)
            else:
                reject(
                    future,
                    IllegalStateError(
                        "an answer without a body", correlation_id=response.correlation_id
                    ),
                )
        except Exception:
            self._state.answer_failed = True
            raise

    def on_malformed(self, head: bytes, error: CorruptMessageError) -> None:
        """An answer whose raw section does not fit it: its request fails with ``error``."""
        SESSION_LOG.warning("malformed response on the session: %s", error)
        correlation_id, session_id = salvage_envelope_ids(head)
        if session_id != self._state.session_id:
            return
        future = self._futures.pop(correlation_id, None)
        if future is not None:
            reject(future, error)
