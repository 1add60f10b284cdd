"""Request/response sessions with a broker over the transport (Aeron Archive's control sessions).

A :class:`ClientSession` offers :mod:`proto.session_pb2` ``TransportRequest`` envelopes on the
broker's ingress (a channel and stream, ``aeron:ipc`` or ``aeron:udp?endpoint=...``) through an
exclusive publication of its own, and reads ``TransportResponse`` envelopes on a response
channel and stream of its own::

      client                                              broker
        |  CONNECT(response channel, stream, client id)     |
        |-------------------- ingress -------------------->|  opens a publication back
        |<------------------- response --------------------|  CONNECT(session id, limits)
        |  SEND / PULL / KEEPALIVE (correlation id, session id)
        |-------------------------------------------------->|
        |<--------------------------------------------------|  answer (same correlation id)

Requests are pipelined: :meth:`ClientSession.request_async` returns a future at once, and a
poller thread completes the futures as the answers come, in any order (a held long poll does
not delay a send behind it). :meth:`ClientSession.request` waits for one. Keepalives go out when
the session has been quiet for a third of the broker's session timeout; the broker closes a
session that stays silent for the whole timeout.

:class:`~client.broker_sessions.BrokerSessions` keeps one session per broker of a route (IPC on
the broker's host, else UDP through a local driver), for producers and consumers alike.

Failures, all :class:`~client.ClientError`:

- the ingress stays back-pressured for ``offer_timeout_ms`` (the broker cannot keep up):
  :class:`BackPressuredError`, retriable; nothing was sent;
- no broker on the ingress, the broker closed the session (or its response stream ended) or
  stopped answering: :class:`~client.BrokerUnavailableError`, retriable (make a new session);
- no answer within the request's timeout: :class:`~client.RequestTimeoutError`, retriable;
- the broker refused the request as a whole (a malformed envelope): the error of its code.

A refusal of the request's content (an unknown topic, a bad queue id) is not raised here: it
comes back in the response's ``status``, for the producer or consumer to interpret.

Doorbells (``transport/concurrent/doorbell.py``): over IPC the client and the broker share one
media driver, and each side has a doorbell in its counters. The session names its own in the
CONNECT; the broker names its agent's in the answer (when the agent sleeps on one). The client
rings the broker's after each request it offers, the broker rings the client's after the answers
of each of its duty cycles, so a waiting side need not poll: the thread that waits reads the
answers itself, asleep on the session's doorbell between polls (a caller of
:meth:`ClientSession.request` for its answer, after polling briefly while answers come back
fast; a consumer's ``poll()`` for its pulls' answers, :meth:`ClientSession.read_until`), and the
poller thread keeps out of its way, reading only answers nobody waits for
(``_answer_readers.py``). Over UDP the broker rings nothing, but the session's own media
driver rings its doorbell as each answer lands (``_session_setup.py``): the same readers.

The envelope and its codec, shared with the broker, are :mod:`common`'s
(:func:`~common.encode_envelope`): the body is serialised once and never copied into an
envelope object.

The session's parts, one role each (Aeron Archive's client splits the same way):

- ``_session_config.py``: :class:`SessionConfig` and the idle strategy defaults;
- ``_session_setup.py``: opening it (channels, doorbell, CONNECT, what the answer grants);
- ``_request_sender.py``: putting requests in flight (correlation ids, futures, the offer with
  back pressure, :class:`BackPressuredError`);
- ``_pending_requests.py``: the requests in flight, their deadlines, failing them all;
- ``_answer_readers.py``: who reads the answers and how a caller waits (the poller thread, the
  waiting callers: which thread may poll when); ``_answer_reader_kinds.py``: the two readers;
- ``_answer_dispatch.py``: completing the requests' futures with the answers;
- ``_session_liveness.py``: deadlines, keepalives and the checks that fail a dead session;
- ``_session_state.py``: the few facts more than one part reads (its id, its failure).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from typing import Any, TypeVar, overload

from google.protobuf.message import Message as ProtoMessage

from aeromq.client._answer_dispatch import AnswerDispatcher
from aeromq.client._answer_reader_kinds import reader_for
from aeromq.client._answer_readers import LINGER_NS
from aeromq.client._pending_requests import PendingRequests
from aeromq.client._request_sender import BackPressuredError, Request, RequestSender
from aeromq.client._session_config import (
    DEFAULT_BACK_TO_BACK_SPIN_US,
    DEFAULT_SESSION_IDLE_STRATEGY,
    DEFAULT_UDP_TERM_LENGTH,
    DRIVER_SILENT_MS,
    IDLE_STRATEGY_ENV,
    PRODUCER_SESSION_IDLE_STRATEGY,
    SessionConfig,
    default_idle_strategy,
)
from aeromq.client._session_liveness import SessionLiveness
from aeromq.client._session_setup import SessionChannels, SessionGrant, connect_request
from aeromq.client._session_state import SessionState
from aeromq.client._sync_answer import Completion
from aeromq.client._udp_liveness import UdpProbe
from aeromq.common import (
    BrokerUnavailableError,
    ClientError,
    IllegalStateError,
    PullAnswer,
    PullRequestBody,
    RequestTimeoutError,
    SendAnswer,
    SendRequest,
)
from aeromq.proto import messages_pb2, session_pb2
from aeromq.transport.client import Aeron
from aeromq.transport.concurrent.doorbell_idle_strategy import idle_strategy_with_doorbell

__all__ = [
    "DEFAULT_BACK_TO_BACK_SPIN_US",
    "DEFAULT_SESSION_IDLE_STRATEGY",
    "DEFAULT_UDP_TERM_LENGTH",
    "DRIVER_SILENT_MS",
    "IDLE_STRATEGY_ENV",
    "PRODUCER_SESSION_IDLE_STRATEGY",
    "BackPressuredError",
    "ClientSession",
    "SessionConfig",
    "default_idle_strategy",
]

_T = TypeVar("_T")


class ClientSession:
    """A connected session with one broker (see module). Make it with :meth:`connect`; it
    uses ``aeron`` (not closed with the session). Thread-safe."""

    def __init__(self, aeron: Aeron, config: SessionConfig | None = None) -> None:
        self.config = config or SessionConfig()
        self._aeron = aeron
        self._close_lock = threading.Lock()
        state = self._state = SessionState()
        pending = self._pending = PendingRequests(state)
        sender = self._sender = RequestSender(self.config, state, pending)
        self._answers = AnswerDispatcher(state, pending)
        self._liveness = SessionLiveness(aeron, state, pending, sender)
        liveness = self._liveness
        self._reader = reader_for(
            self.config,
            self._answers.on_fragment,
            state,
            pending,
            liveness.do_work,
            liveness.next_due_ns,
        )
        self._reader.release_ring = sender.release_ring
        self._channels = SessionChannels(aeron)
        self.broker_name = ""
        self.max_message_size = 0
        self.local_read_dir = ""  # granted local reads: the broker's commit log directory
        self.local_read_file_bytes = 0  # and the length of each of its files
        self.local_read_dir_id = (0, 0)  # and its (device, inode) on the broker's host

    # -- lifecycle -----------------------------------------------------------------------

    @classmethod
    def connect(cls, aeron: Aeron, config: SessionConfig | None = None) -> ClientSession:
        """Open the channels, CONNECT and wait for the broker's answer (``connect_timeout_ms``).

        Raises :class:`~client.BrokerUnavailableError` when no broker listens on the ingress
        or none answers in time."""
        session = cls(aeron, config)
        try:
            session._open()
        except BaseException:
            session._release()
            raise
        return session

    def _open(self) -> None:
        """The set-up's steps (``_session_setup.py``) with this session's parts: channels, the
        readers started, the CONNECT, and what its answer grants."""
        config = self.config
        deadline_ns = time.monotonic_ns() + config.connect_timeout_ms * 1_000_000
        channels = self._channels
        self._sender.publication = channels.open(config, deadline_ns)
        subscription, doorbell = channels.subscription, channels.doorbell
        assert subscription is not None
        self._pending.doorbell = doorbell
        self._liveness.subscription = subscription
        self._liveness.udp_probe = None if channels.ipc else UdpProbe()
        self._state.last_heard_ns = time.monotonic_ns()
        self._reader.start(
            subscription,
            doorbell,
            idle_strategy_with_doorbell(config.idle_strategy, doorbell),
            f"aeromq-session-{channels.response_stream_id}",
        )
        remaining_ms = max(1, (deadline_ns - time.monotonic_ns()) // 1_000_000)
        try:
            answer = self.request(connect_request(config, channels), remaining_ms)
        except RequestTimeoutError as exc:
            raise BrokerUnavailableError(
                "the broker did not answer CONNECT",
                ingress_channel=config.ingress_channel,
                response_channel=channels.response_channel,
                response_stream_id=channels.response_stream_id,
                connect_timeout_ms=config.connect_timeout_ms,
            ) from exc
        ipc_doorbell = doorbell if channels.ipc else None  # the broker's to ring: IPC only
        grant = SessionGrant.of(answer, config, ipc_doorbell, self._aeron.counters_reader)
        self.broker_name = grant.broker_name
        self.max_message_size = grant.max_message_size
        self.local_read_dir = grant.local_read_dir
        self.local_read_file_bytes = grant.local_read_file_bytes
        self.local_read_dir_id = grant.local_read_dir_id
        self._liveness.session_timeout_ms = grant.session_timeout_ms
        self._liveness.keepalive_interval_ms = grant.keepalive_interval_ms
        self._reader.on_connected(grant.rung or channels.locally_rung)
        self._sender.broker_doorbell = grant.broker_doorbell

    def close(self) -> None:
        """Tell the broker (best effort), fail what is pending, release the channels;
        idempotent."""
        state = self._state
        with self._close_lock:
            if state.closed:
                return
            state.closed = True
        if self._aeron.is_closed:
            # Its client was closed first: the channels and the doorbell were in the client's
            # mapped files, gone now. Nothing can be told to the broker (its session times out)
            # and no caller can be asleep on the doorbell any more.
            self._pending.doorbell = self._reader.doorbell = None
        elif state.session_id and state.failure is None:
            with contextlib.suppress(ClientError):
                self._sender.offer(
                    session_pb2.CloseSessionRequest(), next(self._pending.correlation)
                )
        # A session that failed first (the broker gone, a retriable error) fails what is still
        # pending with that failure, not with "closed": a caller racing the close then retries
        # as the failure allows instead of taking a non-retriable error.
        self._pending.fail_all(
            state.failure or IllegalStateError("session closed", session_id=state.session_id)
        )
        self._release()

    def _release(self) -> None:
        self._reader.stop()
        self._sender.broker_doorbell = None
        self._channels.close()

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the session knows ----------------------------------------------------------

    @property
    def session_id(self) -> int:
        """The broker's id of this session (0 until connected)."""
        return self._state.session_id

    @property
    def aeron(self) -> Aeron:
        """The Aeron client the session's channels are on (its doorbell is in that client's
        driver's counters: close the session before the client)."""
        return self._aeron

    @property
    def is_open(self) -> bool:
        """Connected and neither closed nor failed."""
        state = self._state  # (asked before each request by BrokerSessions: no call more)
        return state.session_id != 0 and not state.closed and state.failure is None

    @property
    def session_timeout_ms(self) -> int:
        """How long the broker keeps a silent session (from its CONNECT answer)."""
        return self._liveness.session_timeout_ms

    @property
    def keepalive_interval_ms(self) -> int:
        """How long the session may stay quiet before it sends a keepalive."""
        return self._liveness.keepalive_interval_ms

    @property
    def response_channel(self) -> str:
        """The channel the broker answers on (a UDP port 0 resolved to the one taken)."""
        return self._channels.response_channel

    @property
    def response_stream_id(self) -> int:
        """The stream id the broker answers on."""
        return self._channels.response_stream_id

    @property
    def max_request_length(self) -> int:
        """The longest envelope the ingress publication takes (its max message length)."""
        publication = self._sender.publication
        return publication.max_message_length if publication is not None else 0

    @property
    def rung_by_broker(self) -> bool:
        """Whether this session's doorbell is rung after each answer (IPC: by a broker with
        doorbells; UDP: by the session's own media driver as the answer lands): its poller and
        waiting callers then sleep until rung."""
        return self._reader.rung

    @property
    def rings_broker(self) -> bool:
        """Whether this session rings the broker's session agent after each request."""
        return self._sender.broker_doorbell is not None

    @property
    def pending_count(self) -> int:
        """How many requests wait for their answer."""
        return len(self._pending.futures)

    @property
    def foreign_responses(self) -> int:
        """Answers read that name another session (on the same response stream)."""
        return self._answers.foreign_responses

    @property
    def unmatched_responses(self) -> int:
        """Answers read to requests no longer pending (timed out or failed), keepalives aside."""
        return self._answers.unmatched_responses

    # -- requests ------------------------------------------------------------------------

    @overload
    def request(
        self, body: messages_pb2.SendMessageRequest, timeout_ms: int | None = None
    ) -> messages_pb2.SendMessageResponse | SendAnswer: ...
    @overload
    def request(
        self, body: SendRequest, timeout_ms: int | None = None
    ) -> messages_pb2.SendMessageResponse | SendAnswer: ...
    @overload
    def request(
        self, body: messages_pb2.PullMessageRequest | PullRequestBody, timeout_ms: int | None = None
    ) -> PullAnswer: ...
    @overload
    def request(
        self, body: session_pb2.ConnectRequest, timeout_ms: int | None = None
    ) -> session_pb2.ConnectResponse: ...
    @overload
    def request(
        self, body: session_pb2.KeepAliveRequest, timeout_ms: int | None = None
    ) -> session_pb2.KeepAliveResponse: ...

    def request(
        self, body: Request, timeout_ms: int | None = None
    ) -> ProtoMessage | PullAnswer | SendAnswer:
        """Send ``body`` and wait for its answer (``timeout_ms``, default the config's). A
        send's answer is a :class:`~common.SendAnswer` when it was stored (read without
        protobuf), else the ``SendMessageResponse``."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        future = self._reader.request(self._sender.submit_sync, body, timeout)
        try:  # _result(), without its call
            return future.result(timeout / 1000 + 1.0)
        except FutureTimeoutError as exc:  # the poller is late: it would have failed it
            raise self._late(timeout) from exc

    def wait(self, future: Future[_T], timeout_ms: int | None = None) -> _T:
        """The answer of ``future`` (from :meth:`request_async`), waiting up to ``timeout_ms``
        (default the config's request timeout) as :meth:`request` waits: reading answers on
        this thread (``_answer_readers.py``: asleep on the session's doorbell between polls,
        which the broker rings over IPC and the session's driver over UDP; else polling, always
        with ``caller_reads``, briefly without); raises what the future
        holds or :class:`~client.RequestTimeoutError`."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        self._reader.await_answer(future, timeout)
        return self._result(future, timeout)

    def read_until(
        self,
        done: Callable[[], bool],
        deadline_ns: int,
        before: Callable[[], None] | None = None,
    ) -> bool:
        """Read this session's answers on the calling thread (their futures' callbacks run
        here) until ``done()`` or ``deadline_ns`` (monotonic), asleep on the session's doorbell
        between polls: for a thread that waits for what the answers bring (a consumer's
        ``poll()``) and would otherwise be handed it by the poller thread. False at once when
        the session is not read that way (its doorbell not rung: a driver without futexes; or
        called from a callback of this session's answers). Another thread that makes ``done()`` true calls
        :meth:`wake_readers`. The poller thread keeps out of the way while this thread reads
        and for a second after (the caller is likely back). ``before`` is called first, once
        this thread counts as a reader: requests it submits are then read by this thread, not
        handed to the poller (a consumer's deferred pulls; not called when False is
        returned)."""
        return self._reader.read_until(done, deadline_ns, LINGER_NS, before)

    def wake_readers(self) -> None:
        """Wake the threads in :meth:`read_until` (and callers waiting for their answers) to
        look again at what they wait for: one ring of the session's doorbell."""
        self._reader.wake_readers()

    def _result(self, future: Completion[_T], timeout: int) -> _T:
        try:
            return future.result(timeout / 1000 + 1.0)
        except FutureTimeoutError as exc:  # the poller is late: it would have failed it
            raise self._late(timeout) from exc

    def _late(self, timeout: int) -> RequestTimeoutError:
        """The error of a request whose answer did not come within ``timeout`` ms."""
        return RequestTimeoutError(
            "no answer in time", session_id=self._state.session_id, timeout_ms=timeout
        )

    @overload
    def request_async(
        self,
        body: messages_pb2.SendMessageRequest | SendRequest,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
    ) -> Future[messages_pb2.SendMessageResponse | SendAnswer]: ...
    @overload
    def request_async(
        self,
        body: messages_pb2.PullMessageRequest | PullRequestBody,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> Future[PullAnswer]: ...

    def request_async(
        self,
        body: Request,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> Future[Any]:  # Any: the answer's type is the request's, as the overloads say
        """Send ``body`` now and return a future of its answer, completed on the thread that
        reads it (or failed with the errors of the module). Offer failures raise here; with
        ``wait_offer`` False a back-pressured ingress raises :class:`BackPressuredError` at
        once (for a thread that must not block, such as one completing answers). A ``lazy``
        pull does not ring the broker's doorbell: the broker reads it when something else
        wakes it, within its idle park (a caught-up consumer's next pull, which only waits
        for the next send; ``client._request_sender``)."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        return self._sender.submit(body, timeout, wait_offer, lazy)

    def request_callback(
        self,
        body: messages_pb2.PullMessageRequest | PullRequestBody,
        timeout_ms: int,
        callback: Callable[
            [ProtoMessage | PullAnswer | SendAnswer | None, BaseException | None], None
        ],
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> None:
        """:meth:`request_async` of a pull whose outcome goes to ``callback(answer, None)`` or
        ``callback(None, error)`` (the answer a :class:`~common.PullAnswer`), called once on the
        thread that reads the answer (or fails it), without a future (``_sync_answer.CallbackAnswer``: eleven Python calls fewer a
        pull). Offer failures raise here, as :meth:`request_async`'s."""
        self._sender.submit_callback(body, timeout_ms, callback, wait_offer, lazy)

    def send_oneway(self, body: messages_pb2.SendMessageRequest | SendRequest) -> None:
        """Send without waiting: the answer is read and dropped."""
        self._sender.offer(body, next(self._pending.correlation))
