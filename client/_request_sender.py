"""``RequestSender``: puts a client session's requests in flight, as Aeron Archive's
``ArchiveProxy`` does: a correlation id and a future each in the pending-request table, the
envelope offered on the broker's ingress, back pressure waited out (or not), the broker's doorbell
rung after each, but for a pull sent from the thread that is reading the session's answers (the
pull task's next pull, sent from the previous one's answer): its ring is held back
(``SessionState.ring_held``) until the poll that ran the callback returns
(:meth:`RequestSender.release_ring`), so that the pulls of one poll's answers ring once, after
their messages were cached (a ring that wakes the broker may take the ringer's core). Held no
longer: until the thread waited again, as first tried, a consumer draining its cache left the
broker's agent asleep on its next pulls for its 25 ms park (``bench consumer``'s drains).
A *lazy* pull (``submit(..., lazy=True)``: a caught-up consumer's next pull,
``consumer.pull_task``) rings nothing: it waits on the ingress until something else wakes the
broker's agent (the next send's ring, or the agent's idle park's end, at most 100 ms), which then
reads it in the same duty cycle as the send that answers it; but while the agent's doorbell's
flag word asks for rings (a send was stored before the pulls it answered came back,
``broker.session._agent``), it rings as any pull.

Caller: ``ClientSession`` (``request``, ``request_async``, ``send_oneway``, ``close``) and the
liveness checks (keepalives), on any thread; offers are serialised by the offer lock. Affects:
the pending table (a future and a deadline per request), ``SessionState.last_sent_ns``, and
the session's failure when the ingress is gone.
"""

from __future__ import annotations

import heapq
import threading
import time
from concurrent.futures import Future
from threading import get_ident
from typing import Final, TypeAlias, TypeVar

from google.protobuf.message import Message as ProtoMessage

from aeromq.client._pending_requests import Answer, PendingRequests, reject
from aeromq.client._session_config import SessionConfig
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import AnswerCallback, CallbackAnswer, Completion, SyncAnswer
from aeromq.common import (
    REQUEST_FIELD_NUMBERS,
    RINGS_WANTED_FLAG,
    BrokerBusyError,
    BrokerUnavailableError,
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    PullRequestBody,
    SendRequest,
    encode_envelope,
    encode_pull_request,
    encode_send_request,
)
from aeromq.proto import messages_pb2, session_pb2
from aeromq.transport.client import ADMIN_ACTION, BACK_PRESSURED, ExclusivePublication
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy

__all__ = ["BackPressuredError", "Request", "RequestSender"]

Request: TypeAlias = ProtoMessage | SendRequest | PullRequestBody
"""What a session sends: a request body, or a send's attempt or a consumer's pull, each encoded
with its envelope in one native call (``common/_send_envelope.py``,
``common/_pull_envelope.py``)."""

_C = TypeVar("_C", bound=Completion[Answer])

_PULL: Final = REQUEST_FIELD_NUMBERS["pull"]
_PullRequest: Final = messages_pb2.PullMessageRequest
_TransportRequest: Final = session_pb2.TransportRequest
_I64: Final = 1 << 63
_SEND: Final = REQUEST_FIELD_NUMBERS["send"]
_BODY_FIELDS: Final[dict[type[ProtoMessage], int]] = {
    session_pb2.ConnectRequest: REQUEST_FIELD_NUMBERS["connect"],
    session_pb2.CloseSessionRequest: REQUEST_FIELD_NUMBERS["close"],
    session_pb2.KeepAliveRequest: REQUEST_FIELD_NUMBERS["keepalive"],
    messages_pb2.SendMessageRequest: REQUEST_FIELD_NUMBERS["send"],
    messages_pb2.PullMessageRequest: REQUEST_FIELD_NUMBERS["pull"],
}


class BackPressuredError(BrokerBusyError):
    """The broker's ingress stayed back-pressured for the offer timeout: nothing was sent.
    Retriable: the broker (or its store) is slower than the senders for now."""


class RequestSender:
    """Submits and offers a session's requests (see module). ``publication`` and
    ``broker_doorbell`` are set by the session's set-up; until then an offer raises
    :class:`~client.IllegalStateError` (not connected)."""

    __slots__ = (
        "_config",
        "_correlation",
        "_deadline_lock",
        "_deadlines",
        "_futures",
        "_offer_lock",
        "_pending",
        "_state",
        "broker_doorbell",
        "publication",
    )

    def __init__(
        self, config: SessionConfig, state: SessionState, pending: PendingRequests
    ) -> None:
        self.publication: ExclusivePublication | None = None
        self.broker_doorbell: Doorbell | None = None
        """The broker agent's doorbell, rung after each request (IPC, a broker with one)."""
        self._config = config
        self._state = state
        self._pending = pending
        # the table's ids, futures and deadline heap themselves: submit fills them inline (no
        # call into the table per request)
        self._correlation = pending.correlation
        self._futures = pending.futures
        self._deadlines = pending.deadlines
        self._deadline_lock = pending.lock
        self._offer_lock = threading.Lock()

    def submit(
        self, body: Request, timeout_ms: int, wait_offer: bool = True, lazy: bool = False
    ) -> Future[Answer]:
        """Put ``body`` in flight: a correlation id, a future in the pending table with a
        deadline ``timeout_ms`` from now, the envelope offered (:meth:`offer`; ``lazy``: the
        broker not rung); returns the future. Raises the session's failure, or
        :class:`~client.IllegalStateError` once closed, or what the offer raises (the request
        is then forgotten)."""
        return self._register(body, timeout_ms, wait_offer, Future(), lazy)

    def submit_sync(self, body: Request, timeout_ms: int) -> SyncAnswer[Answer]:
        """:meth:`submit` for a caller that waits for the answer: a ``SyncAnswer``
        (``_sync_answer.py``), not a future."""
        return self._register(body, timeout_ms, True, SyncAnswer())

    def submit_callback(
        self,
        body: Request,
        timeout_ms: int,
        callback: AnswerCallback[Answer],
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> None:
        """:meth:`submit` for a request whose outcome goes to ``callback`` (a
        ``CallbackAnswer``, ``_sync_answer.py``: no future), called on the thread that reads
        the answer (or here, when the session failed meanwhile). Raises as :meth:`submit`."""
        answer: CallbackAnswer[Answer] = CallbackAnswer(callback)
        self._register(body, timeout_ms, wait_offer, answer, lazy)

    def _register(
        self, body: Request, timeout_ms: int, wait_offer: bool, future: _C, lazy: bool = False
    ) -> _C:
        state = self._state
        if state.failure is not None:
            raise state.failure
        if state.closed:
            raise IllegalStateError("session closed", session_id=state.session_id)
        correlation_id = next(self._correlation)
        self._futures[correlation_id] = future
        deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000
        try:
            self.offer(body, correlation_id, wait_offer, lazy)
        except BaseException:
            self._futures.pop(correlation_id, None)
            raise
        # its deadline pushed after the offer, while the broker works on it (an answer read
        # before that leaves the entry stale, as every answered request's: ``_pending``)
        with self._deadline_lock:
            heapq.heappush(self._deadlines, (deadline_ns, correlation_id))
        failure = state.failure
        if failure is not None and not future.done():
            self._futures.pop(correlation_id, None)
            reject(future, failure)  # failed while we registered: fail_all missed it
        call_reader = self._pending.call_reader
        if call_reader is not None:  # no thread would read its answer: wake the poller
            call_reader()
        return future

    def offer(
        self, body: Request, correlation_id: int, wait: bool = True, lazy: bool = False
    ) -> None:
        """Offer one envelope, retrying ADMIN_ACTION at once and BACK_PRESSURED until the
        offer timeout (without ``wait``: not at all, :class:`BackPressuredError` at once);
        then ring the broker, but for a ``lazy`` request, and a held one (see module).
        An ingress that is gone fails the session (:class:`~client.BrokerUnavailableError`).
        A :class:`~common.SendRequest` is encoded, envelope and stamp, in one native call, and
        so is a :class:`~common.PullRequestBody`."""
        publication = self.publication
        if publication is None:
            raise IllegalStateError("session not connected")
        state = self._state
        if isinstance(body, SendRequest):
            field_number = _SEND
            data = encode_send_request(correlation_id, state.session_id, *body)
        elif isinstance(body, PullRequestBody):  # a consumer's pull: one native call
            field_number = _PULL
            data = encode_pull_request(correlation_id, state.session_id, body)
        elif (
            type(body) is _PullRequest and 0 < correlation_id < _I64 and 0 < state.session_id < _I64
        ):
            # the same bytes as encode_envelope's (fields 1, 2 and the body, in order; both ids
            # positive int64s: protobuf leaves a 0 out and takes no larger), made in C: a pull
            # a message keeping up, four Python calls fewer and no slower (1.6 against 1.8 us)
            field_number = _PULL
            data = _TransportRequest(
                correlation_id=correlation_id, session_id=state.session_id, pull=body
            ).SerializeToString()
        else:
            field_number = _BODY_FIELDS.get(type(body), 0)
            if not field_number:
                raise IllegalArgumentError("not a session request body", type=type(body).__name__)
            data = encode_envelope(
                correlation_id, state.session_id, field_number, body.SerializeToString()
            )
        if len(data) > publication.max_message_length:
            raise IllegalArgumentError(
                "request longer than the ingress takes",
                length=len(data),
                max_message_length=publication.max_message_length,
            )
        deadline_ns = 0
        idle: BackoffIdleStrategy | None = None
        with self._offer_lock:
            while True:
                result = publication.offer(data)
                if result > 0:
                    state.last_sent_ns = time.monotonic_ns()
                    bell = self.broker_doorbell
                    if bell is not None and (not lazy or bell.flag() & RINGS_WANTED_FLAG):
                        if field_number == _PULL and state.polling_thread == get_ident():
                            state.ring_held = True  # rung when the reading thread waits
                        else:
                            bell.ring()
                    return
                if result == ADMIN_ACTION:
                    continue
                if result != BACK_PRESSURED:
                    raise self._unavailable(result)
                now_ns = time.monotonic_ns()
                if not wait:
                    raise BackPressuredError(
                        "the broker's ingress is back-pressured", session_id=state.session_id
                    )
                if not deadline_ns:
                    deadline_ns = now_ns + self._config.offer_timeout_ms * 1_000_000
                    idle = BackoffIdleStrategy(max_park_period_ns=1_000_000)
                elif now_ns > deadline_ns:
                    raise BackPressuredError(
                        "the broker's ingress stayed back-pressured",
                        session_id=state.session_id,
                        offer_timeout_ms=self._config.offer_timeout_ms,
                    )
                assert idle is not None
                idle.idle(0)

    def release_ring(self) -> None:
        """Ring the broker for the pulls whose ring was held back (see module), if any."""
        state = self._state
        if state.ring_held:
            state.ring_held = False
            bell = self.broker_doorbell
            if bell is not None:
                bell.ring()

    def _unavailable(self, result: int) -> ClientError:
        error = BrokerUnavailableError(
            "the broker's ingress is gone",
            session_id=self._state.session_id,
            offer_result=result,
            ingress_channel=self._config.ingress_channel,
        )
        self._pending.fail(error)
        return error
