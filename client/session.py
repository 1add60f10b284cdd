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
rings the broker's after each request it offers, the broker rings the client's after each answer,
so a waiting side need not poll: a caller of :meth:`ClientSession.request` sleeps on the
session's doorbell until its answer is there (after polling briefly while answers come back
fast), and the poller thread may too (``idle_strategy`` ``doorbell:...``: the producer's
sessions, :data:`PRODUCER_SESSION_IDLE_STRATEGY`; the default,
:data:`DEFAULT_SESSION_IDLE_STRATEGY`, is the backoff, which measured faster for a consumer's
long pulls). Over UDP nothing rings: callers and the poller poll.

The envelope and its codec, shared with the broker, are in :mod:`common._envelope`
(:func:`~common.encode_envelope`): the body is serialised once and never copied into an
envelope object.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import random
import socket
import threading
import time
from concurrent.futures import Future, InvalidStateError
from concurrent.futures import TimeoutError as FutureTimeoutError
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar, overload

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from aeromq.client._answer_assembler import AnswerAssembler
from aeromq.client._security import Credentials
from aeromq.common import (
    DEFAULT_INGRESS_STREAM_ID,
    ENVELOPE_HEAD_MAX_LENGTH,
    REQUEST_FIELD_NUMBERS,
    SESSION_CLOSED_CODE,
    SESSION_PROTOCOL_VERSION,
    BrokerBusyError,
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    IllegalArgumentError,
    IllegalStateError,
    PullAnswer,
    RequestTimeoutError,
    encode_envelope,
    error_for_code,
    salvage_envelope_ids,
    split_raw_section,
    with_ipc_mtu,
)
from aeromq.proto import messages_pb2, session_pb2
from aeromq.transport import TransportError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.client import (
    ADMIN_ACTION,
    BACK_PRESSURED,
    Aeron,
    ExclusivePublication,
    Subscription,
)
from aeromq.transport.client.counter import Counter
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.doorbell import (
    DOORBELL_TYPE_ID,
    HAS_FUTEX,
    Doorbell,
    DoorbellIdleStrategy,
    idle_strategy_with_doorbell,
)
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    IdleStrategy,
    tighten_timer_slack,
)
from aeromq.transport.logbuffer.header import Header

__all__ = [
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

_log = logging.getLogger(__name__)
_T = TypeVar("_T")

DEFAULT_UDP_TERM_LENGTH: Final = 64 * 1024 * 1024
"""UDP session channels get this term length unless theirs names one: a term takes messages of
an eighth of it, and a 4 MiB message plus its envelope needs more than the 16 MiB default's."""

_Response = session_pb2.TransportResponse
_BODY_FIELDS: Final[dict[type[ProtoMessage], int]] = {
    session_pb2.ConnectRequest: REQUEST_FIELD_NUMBERS["connect"],
    session_pb2.CloseSessionRequest: REQUEST_FIELD_NUMBERS["close"],
    session_pb2.KeepAliveRequest: REQUEST_FIELD_NUMBERS["keepalive"],
    messages_pb2.SendMessageRequest: REQUEST_FIELD_NUMBERS["send"],
    messages_pb2.PullMessageRequest: REQUEST_FIELD_NUMBERS["pull"],
}
_CALLER_POLL_NS: Final = 1_000_000
_CALLER_WAIT_NS: Final = 20_000_000
_CALLER_WATCH_S: Final = 0.001
_CALLER_SPIN_NS: Final = 200_000
_COMPACT_MIN_ENTRIES: Final = 1_024
"""Deadline entries past which, when most are of answered requests, the poller drops those."""
_HOUSEKEEPING_S: Final = 0.01
"""With ``caller_reads``, how often the poller thread keeps the session (deadlines, keepalives)."""
_CALLER_READ_GRACE_NS: Final = 100_000_000
"""With ``caller_reads``, how long after a caller last read the poller drains unread answers."""

DEFAULT_SESSION_IDLE_STRATEGY: Final = "backoff:10,5,1000,1000000"
"""How a session's poller thread waits for answers: Agrona's backoff (10 spins, 5 yields, parks
from 1 us to 1 ms). ``doorbell:0,0,1000,1000000`` sleeps on the session's doorbell instead,
which the broker rings after each answer. For a consumer's long pulls the backoff measured
faster end to end (``python -m bench consumer``: answers come back-to-back while a consumer
catches up, and a thread asleep on the doorbell takes a wake-up for each); a caller waiting for
its answer sleeps on the doorbell either way. ``AEROMQ_CLIENT_SESSION_IDLE_STRATEGY`` overrides
it (and :data:`PRODUCER_SESSION_IDLE_STRATEGY`), to compare strategies."""
PRODUCER_SESSION_IDLE_STRATEGY: Final = "doorbell:0,0,1000,1000000"
"""The producer's sessions' (``producer.Producer``): asleep on the doorbell between answers.
End to end with a consumer (alternating runs, 2 cores) it measured 202k against 193k msgs/s:
the backoff's yields and short sleeps took the cores from the consumer and the broker
(consumer CPU 2.59 against 2.83 us a message); the producer's own CPU was the same or lower
(``python -m bench broker``, produce: 2.8-3.0 against 3.3-3.4 us a message)."""
IDLE_STRATEGY_ENV: Final = "AEROMQ_CLIENT_SESSION_IDLE_STRATEGY"


def default_idle_strategy(role_default: str = DEFAULT_SESSION_IDLE_STRATEGY) -> str:
    """``role_default``, unless ``AEROMQ_CLIENT_SESSION_IDLE_STRATEGY`` names another."""
    return os.environ.get(IDLE_STRATEGY_ENV) or role_default


_DRIVER_CHECK_INTERVAL_NS: Final = 100_000_000
DRIVER_SILENT_MS: Final = 1_000
"""A driver stamps its heartbeat on every duty cycle (at least every few ms); silent for 1 s it
is dead or hung. Over IPC it is the broker's own driver: the session fails at once, so the
client refreshes the broker's route (a restarted broker has a new driver directory) instead of
waiting for its cached route to expire or the driver timeout (10 s)."""


class BackPressuredError(BrokerBusyError):
    """The broker's ingress stayed back-pressured for the offer timeout: nothing was sent.
    Retriable: the broker (or its store) is slower than the senders for now."""


@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """How a :class:`ClientSession` reaches a broker and how long it waits.

    ``response_stream_id`` 0 takes a stream id unique among the driver's clients; a UDP
    ``response_channel`` with port 0 takes a free local port. ``keepalive_interval_ms`` 0 is a
    third of the session timeout the broker announces. UDP channels without a ``term-length``
    get ``udp_term_length`` (0: the driver's default), both ways. ``credentials`` go in the
    CONNECT, for a broker with access control (refused: ``AuthenticationError``).
    ``idle_strategy`` is the poller thread's (see module; an idle strategy name, ``doorbell``
    or one of ``transport.concurrent.idle_strategy_from_name``'s).

    ``caller_reads`` True: the threads that wait for answers (:meth:`ClientSession.wait`,
    :meth:`ClientSession.request`) read them, sleeping on the doorbell between polls (IPC) or
    parking briefly (UDP); the poller thread keeps the session (deadlines, keepalives, failure
    checks) every 10 ms and reads only answers nobody waited for in the last 100 ms. For a
    caller that pipelines large answers and waits for each in turn (the Spark reader,
    ``pipeline/_reader_sessions.py``): no thread spins, no answer is handed between threads, and
    its copy out of the transport is allocated and freed on the same thread (large buffers
    allocated on one thread and freed on another fault their pages in anew, measured here).

    ``local_reads`` True (IPC only): the CONNECT asks the broker for local reads; when granted,
    :attr:`ClientSession.local_read_dir` names its commit log's directory (with its length of a
    file and the directory's device and inode), and pulls that set
    ``local_read`` are answered with where their batches are in it (``local_ranges``) instead
    of the batches (the Spark reader, ``pipeline/_local_reads.py``).
    """

    ingress_channel: str = "aeron:ipc"
    ingress_stream_id: int = DEFAULT_INGRESS_STREAM_ID
    response_channel: str = "aeron:ipc"
    response_stream_id: int = 0
    client_id: str = ""
    connect_timeout_ms: int = 5_000
    request_timeout_ms: int = 3_000
    offer_timeout_ms: int = 1_000
    keepalive_interval_ms: int = 0
    udp_term_length: int = DEFAULT_UDP_TERM_LENGTH
    credentials: Credentials | None = None
    idle_strategy: str = field(default_factory=default_idle_strategy)
    caller_reads: bool = False
    local_reads: bool = False

    def __post_init__(self) -> None:
        for name in ("connect_timeout_ms", "request_timeout_ms", "offer_timeout_ms"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise IllegalArgumentError(f"{name} must be a positive int", value=value)
        if self.keepalive_interval_ms < 0:
            raise IllegalArgumentError(
                "keepalive_interval_ms must be >= 0", value=self.keepalive_interval_ms
            )
        for name in ("ingress_channel", "response_channel"):
            if not getattr(self, name).startswith("aeron:"):
                raise IllegalArgumentError(
                    f"{name} must be an aeron channel URI", value=getattr(self, name)
                )
        try:
            idle_strategy_with_doorbell(self.idle_strategy, None)
        except TransportError as exc:
            raise IllegalArgumentError(
                "idle_strategy is not an idle strategy name", value=self.idle_strategy
            ) from exc


class ClientSession:
    """A connected session with one broker (see module). Make it with :meth:`connect`; it
    uses ``aeron`` (not closed with the session). Thread-safe."""

    def __init__(self, aeron: Aeron, config: SessionConfig | None = None) -> None:
        self.config = config or SessionConfig()
        self._aeron = aeron
        self._offer_lock = threading.Lock()
        self._poll_lock = threading.Lock()  # the subscription and assembler: one reader at once
        self._state_lock = threading.Lock()
        self._pending: dict[int, Future[ProtoMessage]] = {}
        # (deadline ns, correlation id) of requests sent, soonest first; an answered request's
        # entry stays until its deadline or a compaction (_housekeeping), but holds no reference to
        # its future: an answered future, its callbacks and what they hold (a send's
        # messages) are freed at once, not kept for the request timeout
        self._deadlines: list[tuple[int, int]] = []
        self._correlation = itertools.count(random.getrandbits(30) << 32)
        self._publication: ExclusivePublication | None = None
        self._subscription: Subscription | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._closed = False
        self._failure: ClientError | None = None
        self._last_sent_ns = 0
        self._last_heard_ns = 0
        self._next_driver_check_ns = 0
        self._assembler = AnswerAssembler(self._on_fragment, self._on_answer, self._malformed)
        self._doorbell_counter: Counter | None = None
        self._doorbell: Doorbell | None = None  # ours: the broker rings it after each answer
        self._broker_doorbell: Doorbell | None = None  # the broker agent's: rung per request
        self._idle_strategy: IdleStrategy | None = None
        self._rung = False  # the broker rings our doorbell after each answer
        self._callers_waiting = 0  # callers asleep on the doorbell (they read the answers)
        self._callers_lock = threading.Lock()
        self._spin_score = 3  # 1 or more: callers' answers mostly came within _CALLER_SPIN_NS
        self._caller_waits = 0
        self._last_read_ns = 0  # caller_reads: when a caller last read answers
        self.session_id = 0
        self.broker_name = ""
        self.session_timeout_ms = 0
        self.max_message_size = 0
        self.local_read_dir = ""  # granted local reads: the broker's commit log directory
        self.local_read_file_bytes = 0  # and the length of each of its files
        self.local_read_dir_id = (0, 0)  # and its (device, inode) on the broker's host
        self.response_channel = ""
        self.response_stream_id = 0
        self.keepalive_interval_ms = 0
        self.foreign_responses = 0
        self.unmatched_responses = 0

    # -- lifecycle -----------------------------------------------------------------------

    @classmethod
    def connect(cls, aeron: Aeron, config: SessionConfig | None = None) -> ClientSession:
        """Open the channels, CONNECT and wait for the broker's answer (``connect_timeout_ms``).

        Raises :class:`~client.BrokerUnavailableError` when no broker listens on the ingress
        or none answers in time."""
        session = cls(aeron, config)
        try:
            session._connect()
        except BaseException:
            session._release()
            raise
        return session

    def _connect(self) -> None:
        config = self.config
        deadline_ns = time.monotonic_ns() + config.connect_timeout_ms * 1_000_000
        term_length = config.udp_term_length
        channel = _with_term_length(_resolve_response_channel(config.response_channel), term_length)
        stream_id = config.response_stream_id or _unique_stream_id(self._aeron)
        self.response_channel, self.response_stream_id = channel, stream_id
        try:
            self._subscription = self._aeron.add_subscription(channel, stream_id)
            self._publication = self._aeron.add_exclusive_publication(
                with_ipc_mtu(_with_term_length(config.ingress_channel, term_length)),
                config.ingress_stream_id,
            )
        except TransportError as exc:
            raise BrokerUnavailableError(
                "cannot open the session's channels",
                ingress_channel=config.ingress_channel,
                response_channel=channel,
                cause=str(exc),
            ) from exc
        publication = self._publication
        ipc = _is_ipc(config.ingress_channel)
        if ipc:
            self._open_doorbell(stream_id)
        idle = BackoffIdleStrategy(max_park_period_ns=1_000_000)
        while not publication.is_connected:
            if time.monotonic_ns() > deadline_ns:
                raise BrokerUnavailableError(
                    "no broker on the ingress",
                    ingress_channel=config.ingress_channel,
                    ingress_stream_id=config.ingress_stream_id,
                    connect_timeout_ms=config.connect_timeout_ms,
                )
            idle.idle(0)
        self._idle_strategy = idle_strategy_with_doorbell(config.idle_strategy, self._doorbell)
        self._running = True
        self._last_heard_ns = time.monotonic_ns()
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-session-{stream_id}", daemon=True
        )
        self._thread.start()
        connect = session_pb2.ConnectRequest(
            response_channel=channel,
            response_stream_id=stream_id,
            client_id=config.client_id or f"{socket.gethostname()}@{os.getpid()}",
            version=SESSION_PROTOCOL_VERSION,
        )
        if config.credentials is not None:
            connect.user, connect.secret = config.credentials.user, config.credentials.secret
        if self._doorbell is not None:
            connect.doorbell_counter_id = self._doorbell.counter_id
        if ipc and config.local_reads:
            connect.local_reads = True
        remaining_ms = max(1, (deadline_ns - time.monotonic_ns()) // 1_000_000)
        try:
            answer = self.request(connect, remaining_ms)
        except RequestTimeoutError as exc:
            raise BrokerUnavailableError(
                "the broker did not answer CONNECT",
                ingress_channel=config.ingress_channel,
                response_channel=channel,
                response_stream_id=stream_id,
                connect_timeout_ms=config.connect_timeout_ms,
            ) from exc
        self.broker_name = answer.broker_name
        self.session_timeout_ms = answer.session_timeout_ms
        self.max_message_size = answer.max_message_size
        self.local_read_dir = answer.local_read_dir
        self.local_read_file_bytes = answer.local_read_file_bytes
        self.local_read_dir_id = (answer.local_read_dir_device, answer.local_read_dir_inode)
        interval = config.keepalive_interval_ms or max(1, answer.session_timeout_ms // 3)
        self.keepalive_interval_ms = interval
        self._rung = self._doorbell is not None and answer.rings_client_doorbell
        if isinstance(self._idle_strategy, DoorbellIdleStrategy):
            self._idle_strategy.all_rung = self._all_rung
        if self._doorbell is not None and answer.HasField("doorbell_counter_id"):
            counters = self._aeron.counters_reader
            if Doorbell.is_doorbell_counter(counters, answer.doorbell_counter_id):
                self._broker_doorbell = Doorbell.for_counter(counters, answer.doorbell_counter_id)

    def _all_rung(self) -> bool:
        """For the poller's doorbell strategy: every answer rings (the broker said so), so it
        may sleep until rung (its housekeeping runs at each park's end, at most 1 ms apart)."""
        return self._rung

    def _open_doorbell(self, stream_id: int) -> None:
        """Allocate this session's doorbell, a counter of the (shared) driver."""
        if not HAS_FUTEX:
            return
        try:
            counter = self._doorbell_counter = self._aeron.add_counter(
                DOORBELL_TYPE_ID, label=f"doorbell: session {stream_id}"
            )
            self._doorbell = Doorbell.for_counter(self._aeron.counters_reader, counter.id)
        except TransportError as exc:
            _log.debug("no doorbell for the session (its poller polls): %s", exc)

    def close(self) -> None:
        """Tell the broker (best effort), fail what is pending, release the channels;
        idempotent."""
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
        if self.session_id and self._failure is None:
            with contextlib.suppress(ClientError):
                self._offer(session_pb2.CloseSessionRequest(), next(self._correlation))
        self._fail_all(IllegalStateError("session closed", session_id=self.session_id))
        self._release()

    def _release(self) -> None:
        self._running = False
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(5.0)
        self._broker_doorbell = None
        for resource in (self._publication, self._subscription, self._doorbell_counter):
            if resource is not None:
                try:
                    resource.close()
                except TransportError as exc:  # the client is already closing
                    _log.debug("releasing a session channel: %s", exc)

    def __enter__(self) -> ClientSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        """Connected and neither closed nor failed."""
        return self.session_id != 0 and not self._closed and self._failure is None

    @property
    def max_request_length(self) -> int:
        """The longest envelope the ingress publication takes (its max message length)."""
        return self._publication.max_message_length if self._publication is not None else 0

    @property
    def rung_by_broker(self) -> bool:
        """Whether the broker rings this session's doorbell after each answer (IPC, a broker
        with doorbells): its poller and waiting callers then sleep until rung."""
        return self._rung

    @property
    def rings_broker(self) -> bool:
        """Whether this session rings the broker's session agent after each request."""
        return self._broker_doorbell is not None

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    # -- requests ------------------------------------------------------------------------

    @overload
    def request(
        self, body: messages_pb2.SendMessageRequest, timeout_ms: int | None = None
    ) -> messages_pb2.SendMessageResponse: ...
    @overload
    def request(
        self, body: messages_pb2.PullMessageRequest, timeout_ms: int | None = None
    ) -> PullAnswer: ...
    @overload
    def request(
        self, body: session_pb2.ConnectRequest, timeout_ms: int | None = None
    ) -> session_pb2.ConnectResponse: ...
    @overload
    def request(
        self, body: session_pb2.KeepAliveRequest, timeout_ms: int | None = None
    ) -> session_pb2.KeepAliveResponse: ...

    def request(self, body: ProtoMessage, timeout_ms: int | None = None) -> Any:
        """Send ``body`` and wait for its answer (``timeout_ms``, default the config's)."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        return self.wait(self._submit(body, timeout), timeout)

    def wait(self, future: Future[_T], timeout_ms: int | None = None) -> _T:
        """The answer of ``future`` (from :meth:`request_async`), waiting up to ``timeout_ms``
        (default the config's request timeout) as :meth:`request` waits: reading answers on
        this thread (always with ``caller_reads``, else briefly); raises what the future holds
        or :class:`~client.RequestTimeoutError`."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        if self.config.caller_reads:
            self._read_until(future, time.monotonic_ns() + timeout * 1_000_000)
            if not future.done():
                raise RequestTimeoutError(
                    "no answer in time", session_id=self.session_id, timeout_ms=timeout
                )
        else:
            self._poll_while_waiting(future)
        try:
            return future.result(timeout / 1000 + 1.0)
        except FutureTimeoutError as exc:  # the poller is late: it would have failed it
            raise RequestTimeoutError(
                "no answer in time", session_id=self.session_id, timeout_ms=timeout
            ) from exc

    @overload
    def request_async(
        self,
        body: messages_pb2.SendMessageRequest,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
    ) -> Future[messages_pb2.SendMessageResponse]: ...
    @overload
    def request_async(
        self,
        body: messages_pb2.PullMessageRequest,
        timeout_ms: int | None = None,
        *,
        wait_offer: bool = True,
    ) -> Future[PullAnswer]: ...

    def request_async(
        self, body: ProtoMessage, timeout_ms: int | None = None, *, wait_offer: bool = True
    ) -> Future[Any]:
        """Send ``body`` now and return a future of its answer, completed on the poller
        thread (or failed with the errors of the module). Offer failures raise here; with
        ``wait_offer`` False a back-pressured ingress raises :class:`BackPressuredError` at
        once (for a thread that must not block, such as one completing answers)."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        return self._submit(body, timeout, wait_offer)

    def send_oneway(self, body: messages_pb2.SendMessageRequest) -> None:
        """Send without waiting: the answer is read and dropped."""
        self._offer(body, next(self._correlation))

    def _submit(
        self, body: ProtoMessage, timeout_ms: int, wait_offer: bool = True
    ) -> Future[ProtoMessage]:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise IllegalStateError("session closed", session_id=self.session_id)
        correlation_id = next(self._correlation)
        future: Future[ProtoMessage] = Future()
        self._pending[correlation_id] = future
        with self._state_lock:
            deadline_ns = time.monotonic_ns() + timeout_ms * 1_000_000
            heapq.heappush(self._deadlines, (deadline_ns, correlation_id))
        try:
            self._offer(body, correlation_id, wait_offer)
        except BaseException:
            self._pending.pop(correlation_id, None)
            raise
        failure = self._failure
        if failure is not None and not future.done():
            self._pending.pop(correlation_id, None)
            _reject(future, failure)  # failed while we registered: _fail_all missed it
        return future

    def _offer(self, body: ProtoMessage, correlation_id: int, wait: bool = True) -> None:
        """Offer one envelope, retrying ADMIN_ACTION at once and BACK_PRESSURED until the
        offer timeout (without ``wait``: not at all)."""
        publication = self._publication
        if publication is None:
            raise IllegalStateError("session not connected")
        field_number = _BODY_FIELDS.get(type(body))
        if field_number is None:
            raise IllegalArgumentError("not a session request body", type=type(body).__name__)
        data = encode_envelope(
            correlation_id, self.session_id, field_number, body.SerializeToString()
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
                    self._last_sent_ns = time.monotonic_ns()
                    bell = self._broker_doorbell
                    if bell is not None:
                        bell.ring()
                    return
                if result == ADMIN_ACTION:
                    continue
                if result != BACK_PRESSURED:
                    raise self._unavailable(result)
                now_ns = time.monotonic_ns()
                if not wait:
                    raise BackPressuredError(
                        "the broker's ingress is back-pressured", session_id=self.session_id
                    )
                if not deadline_ns:
                    deadline_ns = now_ns + self.config.offer_timeout_ms * 1_000_000
                    idle = BackoffIdleStrategy(max_park_period_ns=1_000_000)
                elif now_ns > deadline_ns:
                    raise BackPressuredError(
                        "the broker's ingress stayed back-pressured",
                        session_id=self.session_id,
                        offer_timeout_ms=self.config.offer_timeout_ms,
                    )
                assert idle is not None
                idle.idle(0)

    def _unavailable(self, result: int) -> ClientError:
        error = BrokerUnavailableError(
            "the broker's ingress is gone",
            session_id=self.session_id,
            offer_result=result,
            ingress_channel=self.config.ingress_channel,
        )
        self._fail(error)
        return error

    # -- the poller thread ---------------------------------------------------------------

    def _poll_while_waiting(self, future: Future[Any]) -> None:
        """A waiting caller reads answers itself for a short while when the poller thread is
        not reading (no hand-over between threads for a quick answer), then leaves it to the
        poller and blocks. With a doorbell it sleeps on it between its polls."""
        subscription = self._subscription
        if subscription is None:
            return
        bell = self._doorbell
        if self._rung and bell is not None:
            self._wait_on_doorbell(future, bell, subscription)
            return
        self._poll_until(future, subscription, time.monotonic_ns() + _CALLER_POLL_NS)

    def _poll_until(self, future: Future[Any], subscription: Subscription, until_ns: int) -> None:
        """Poll for answers while ``future`` is not done, until ``until_ns`` (monotonic): read
        them when the poller thread is not reading, else yield to it."""
        lock = self._poll_lock
        poll = subscription.poll
        assembler = self._assembler
        while not future.done() and time.monotonic_ns() < until_ns:
            if lock.acquire(blocking=False):
                try:
                    poll(assembler, 64)
                finally:
                    lock.release()
            else:
                os.sched_yield()

    def _wait_on_doorbell(
        self, future: Future[Any], bell: Doorbell, subscription: Subscription
    ) -> None:
        """The caller's side of :meth:`_poll_while_waiting` with a doorbell: poll when the poller
        is not reading, else leave the answer to it; between polls sleep until the broker rings
        (an answer came) or someone fails the future (they ring too), for up to 20 ms. While
        answers have mostly come back within 200 us (a saturating count, and one wait in 64
        probes, as the doorbell idle strategy's spin window), it polls without sleeping for that
        long first: a wake-up from the futex costs more latency than such an answer waits.
        Meanwhile the poller thread does not sleep on the doorbell (one thread woken per answer,
        not two): it checks deadlines every millisecond, and an answer the caller does not wait
        for is read by the caller's polls."""
        lock = self._poll_lock
        poll = subscription.poll
        assembler = self._assembler
        monotonic_ns = time.monotonic_ns
        started_ns = monotonic_ns()
        self._caller_waits += 1
        probe = not self._caller_waits & 63  # a wait that slept is measured late: probe anew
        spin = self._spin_score >= 1 or probe
        deadline_ns = started_ns + _CALLER_WAIT_NS
        with self._callers_lock:
            self._callers_waiting += 1
        try:
            if spin:
                self._poll_until(future, subscription, started_ns + _CALLER_SPIN_NS)
            while not future.done():
                observed = bell.prepare()
                if not lock.acquire(blocking=False):
                    return  # the poller is reading: it completes the future
                try:
                    poll(assembler, 64)
                finally:
                    lock.release()
                if future.done():
                    return
                remaining_ns = deadline_ns - monotonic_ns()
                if remaining_ns <= 0:
                    return
                bell.await_ring(observed, remaining_ns)
        finally:
            with self._callers_lock:
                self._callers_waiting -= 1
            quick = future.done() and monotonic_ns() - started_ns < _CALLER_SPIN_NS
            self._spin_score = min(3, max(0, self._spin_score + (1 if quick else -1)))

    def _read_until(self, future: Future[Any], deadline_ns: int) -> None:
        """``caller_reads``: read answers on this thread until ``future`` is done or
        ``deadline_ns`` (monotonic); between empty polls sleep until the broker rings (it does
        after each answer; up to 20 ms a sleep, as failures and timeouts ring too), or without
        a doorbell park briefly."""
        subscription = self._subscription
        if subscription is None:
            return
        lock = self._poll_lock
        poll = subscription.poll
        assembler = self._assembler
        monotonic_ns = time.monotonic_ns
        bell = self._doorbell if self._rung else None
        idle = BackoffIdleStrategy(max_park_period_ns=100_000)
        with self._callers_lock:
            self._callers_waiting += 1
        try:
            while not future.done():
                observed = bell.prepare() if bell is not None else 0
                with lock:
                    work = poll(assembler, 64)
                remaining_ns = deadline_ns - monotonic_ns()
                if future.done() or remaining_ns <= 0:
                    return
                if work:
                    idle.reset()
                elif bell is not None:
                    bell.await_ring(observed, min(remaining_ns, _CALLER_WAIT_NS))
                else:
                    idle.idle(0)
        finally:
            self._last_read_ns = monotonic_ns()
            with self._callers_lock:
                self._callers_waiting -= 1

    def _run(self) -> None:
        tighten_timer_slack()  # parks of the poller end when asked, not 50 us later
        subscription = self._subscription
        assert subscription is not None
        poll = subscription.poll
        assembler = self._assembler
        lock = self._poll_lock
        idle = self._idle_strategy
        assert idle is not None
        caller_reads = self.config.caller_reads
        next_check_ns = 0
        while self._running:
            try:
                if caller_reads and (
                    self._callers_waiting
                    or time.monotonic_ns() - self._last_read_ns < _CALLER_READ_GRACE_NS
                ):
                    work = 0  # the callers read the answers
                else:
                    with lock:
                        work = poll(assembler, 64)
                now_ns = time.monotonic_ns()
                if now_ns >= next_check_ns:
                    next_check_ns = now_ns + 1_000_000
                    work += self._housekeeping(now_ns)
            except Exception:  # keep the poller alive: one bad answer must not stop it
                _log.exception("session poller error: session_id=%s", self.session_id)
                work = 0
            if caller_reads and not work:
                time.sleep(_HOUSEKEEPING_S)
                continue
            if self._callers_waiting and not work:
                # a caller asleep on the doorbell reads every answer a ring brings: the poller
                # keeps out of its wake-ups and only checks deadlines meanwhile
                time.sleep(_CALLER_WATCH_S)
                continue
            idle.idle(work)

    def _housekeeping(self, now_ns: int) -> int:
        work = 0
        deadlines = self._deadlines
        pending = self._pending
        if len(deadlines) > _COMPACT_MIN_ENTRIES and len(deadlines) > 2 * len(pending):
            with self._state_lock:  # most entries are of answered requests: drop them
                deadlines[:] = [entry for entry in deadlines if entry[1] in pending]
                heapq.heapify(deadlines)
        if deadlines and deadlines[0][0] <= now_ns:
            expired = []
            with self._state_lock:
                while deadlines and deadlines[0][0] <= now_ns:
                    expired.append(heapq.heappop(deadlines)[1])
            for correlation_id in expired:
                future = pending.pop(correlation_id, None)
                if future is not None and not future.done():
                    _reject(
                        future,
                        RequestTimeoutError(
                            "no answer in time",
                            session_id=self.session_id,
                            correlation_id=correlation_id,
                        ),
                    )
                    work += 1
            if work and self._doorbell is not None:
                self._doorbell.ring()
        if self.session_id and self._failure is None and not self._closed:
            timeout_ns = self.session_timeout_ms * 1_000_000
            subscription = self._subscription
            if now_ns >= self._next_driver_check_ns:
                self._next_driver_check_ns = now_ns + _DRIVER_CHECK_INTERVAL_NS
                bell = self._broker_doorbell
                if bell is not None and not bell.still_allocated(self._aeron.counters_reader):
                    self._broker_doorbell = None  # freed: its id may go to another counter
                silent_ms = self._driver_silent_ms()
                if silent_ms > DRIVER_SILENT_MS:
                    self._fail(  # the broker's driver died (over IPC: the broker with it)
                        BrokerUnavailableError(
                            "the media driver stopped",
                            session_id=self.session_id,
                            silent_ms=silent_ms,
                        )
                    )
                    return work
            if subscription is not None and subscription.has_no_images:
                self._fail(  # the broker closed our response stream (or its driver did)
                    BrokerUnavailableError(
                        "the broker's response stream ended", session_id=self.session_id
                    )
                )
            elif timeout_ns and now_ns - self._last_heard_ns > timeout_ns:
                self._fail(
                    BrokerUnavailableError(
                        "the broker stopped answering",
                        session_id=self.session_id,
                        session_timeout_ms=self.session_timeout_ms,
                    )
                )
            elif now_ns - self._last_sent_ns > self.keepalive_interval_ms * 1_000_000:
                try:
                    self._offer(session_pb2.KeepAliveRequest(), next(self._correlation))
                except ClientError as exc:
                    _log.debug("keepalive not sent: %s", exc)
                work += 1
        return work

    def _driver_silent_ms(self) -> int:
        """How long the session's media driver has not stamped its heartbeat (a shut-down
        driver: forever)."""
        heartbeat_ms = self._aeron.cnc.driver_heartbeat_ms()
        if heartbeat_ms <= 0:
            return 1 << 62
        return max(0, int(time.time() * 1000) - heartbeat_ms)

    def _on_fragment(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        # A pull answer's batches come as the envelope's raw section (common._envelope): copied
        # out once, the rest parsed without them. (A fragmented answer's raw section is copied
        # straight out of its fragments: _answer_assembler.)
        head = buffer.get_bytes(offset, min(length, ENVELOPE_HEAD_MAX_LENGTH))
        raw: bytes | None = None
        try:
            section = split_raw_section(head, length)
        except CorruptMessageError as exc:
            self._malformed(head, exc)
            return
        if section is not None:
            raw = buffer.get_bytes(offset + section.offset, section.length)
            end = section.offset + section.length
            data = head[: section.tag_offset] + buffer.get_bytes(offset + end, length - end)
        else:
            data = head if length <= len(head) else buffer.get_bytes(offset, length)
        self._on_answer(data, raw, length)

    def _on_answer(self, data: bytes, raw: bytes | None, length: int) -> None:
        """A whole message: ``data`` without its raw section ``raw`` (if any), ``length``
        bytes in all."""
        try:
            response = _Response.FromString(data)
        except DecodeError:
            _log.warning("malformed response on the session: length=%d", length)
            return
        self._last_heard_ns = time.monotonic_ns()
        kind = response.WhichOneof("body")
        if kind == "connect":
            future = self._pending.pop(response.correlation_id, None)
            if future is not None and not self.session_id:
                self.session_id = response.session_id
                _resolve(future, response.connect)
            return
        if response.session_id != self.session_id:
            self.foreign_responses += 1
            return
        future = self._pending.pop(response.correlation_id, None)
        if kind == "error":
            status = response.error
            error = error_for_code(
                status.code,
                status.message,
                session_id=self.session_id,
                correlation_id=response.correlation_id,
            )
            if status.code == SESSION_CLOSED_CODE:
                self._fail(error)
            if future is not None:
                _reject(future, error)
            return
        if future is None:
            if kind != "keepalive":
                self.unmatched_responses += 1
            return
        if kind == "send":
            _resolve(future, response.send)
        elif kind == "pull":
            _resolve(future, PullAnswer(response.pull, raw))
        elif kind == "keepalive":
            _resolve(future, response.keepalive)
        else:
            _reject(
                future,
                IllegalStateError(
                    "an answer without a body", correlation_id=response.correlation_id
                ),
            )

    def _malformed(self, head: bytes, error: CorruptMessageError) -> None:
        """An answer whose raw section does not fit it: its request fails with ``error``."""
        _log.warning("malformed response on the session: %s", error)
        correlation_id, session_id = salvage_envelope_ids(head)
        if session_id != self.session_id:
            return
        future = self._pending.pop(correlation_id, None)
        if future is not None:
            _reject(future, error)

    def _fail(self, error: ClientError) -> None:
        """The session is unusable: remember why and fail everything pending."""
        if self._failure is None:
            self._failure = error
            _log.info("session failed: %s", error)
        self._fail_all(error)

    def _fail_all(self, error: ClientError) -> None:
        pending = self._pending
        for correlation_id in list(pending):
            future = pending.pop(correlation_id, None)
            if future is not None and not future.done():
                _reject(future, error)
        if self._doorbell is not None:
            self._doorbell.ring()  # callers asleep on it see their failed futures


def _resolve(future: Future[Any], value: ProtoMessage | PullAnswer) -> None:
    with contextlib.suppress(InvalidStateError):  # timed out or failed meanwhile
        future.set_result(value)


def _reject(future: Future[ProtoMessage], error: BaseException) -> None:
    with contextlib.suppress(InvalidStateError):
        future.set_exception(error)


def _is_ipc(channel: str) -> bool:
    try:
        return ChannelUri.parse(channel).is_ipc
    except TransportError:
        return False


def _unique_stream_id(aeron: Aeron) -> int:
    """A response stream id no other client of the driver picks (from its correlation ids)."""
    return 0x4000_0000 | (aeron.next_correlation_id() & 0x3FFF_FFFF)


def _with_term_length(channel: str, term_length: int) -> str:
    """A UDP channel with ``term-length`` set (unless it has one, or ``term_length`` is 0)."""
    if not term_length or not channel.startswith("aeron:udp") or "term-length=" in channel:
        return channel
    return f"{channel}{'|' if '?' in channel else '?'}term-length={term_length}"


def _resolve_response_channel(channel: str) -> str:
    """A UDP response channel with port 0 gets a free local port (bound and let go)."""
    marker = "endpoint="
    if not channel.startswith("aeron:udp") or marker not in channel:
        return channel
    start = channel.index(marker) + len(marker)
    end = channel.find("|", start)
    endpoint = channel[start:] if end < 0 else channel[start:end]
    host, _, port = endpoint.rpartition(":")
    if port != "0":
        return channel
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((host, 0))
        free_port = probe.getsockname()[1]
    resolved = f"{host}:{free_port}"
    return channel[:start] + resolved + ("" if end < 0 else channel[end:])
