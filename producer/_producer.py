"""``Producer``: sends messages to a topic's queues over the transport (RocketMQ's
``DefaultMQProducer``).

::

    with Producer("my-group", "127.0.0.1:8081") as producer:      # a broker's gRPC address
        result = producer.send(Message("orders", b"...", tags="created", keys="order-42"))
        future = producer.send_async(Message("orders", b"..."))   # pipelined
        producer.send_batch([Message("orders", b"1"), Message("orders", b"2")])
        producer.send_oneway(Message("orders", b"fire and forget"))

The route of a topic (its writable queues, and how to reach each broker) comes from
``QueryRoute`` on the endpoints (brokers, or name servers with ``namesrv=True``), or from a
:class:`~producer.StaticRoute` given as ``route``. A send picks a queue (round robin by
default; a selector, or an explicit queue), gives each message a unique id (``UNIQ_KEY``, also
set on the ``Message``), and sends one ``SendMessageRequest`` on the broker's transport session.

Retries (RocketMQ's): a send that fails with a retriable error (back pressure, no broker, no
answer in time) or a broker-side SYSTEM_ERROR / SERVICE_NOT_AVAILABLE (or TOPIC_NOT_EXIST /
NO_PERMISSION when another broker serves the topic) is tried again on the next queue, avoiding
the broker that failed when another one has queues, up to ``retry_times_when_send_failed``
more times, all within ``send_timeout_ms``. A send to an explicit queue or through a selector is
not retried elsewhere. Errors are the ``client`` tree: the broker's refusal of the content
raises the error of its code (``TopicNotFoundError``, ``MessageIllegalError``, ...); a body, or
a batch's bodies together, over ``max_message_size`` raises
:class:`~client.MessageTooLargeError` before anything is sent.

Values (kafka-python's ``value_serializer``): ``Producer(..., value_serializer=json_bytes)``
and ``producer.send_value("orders", {"id": 42}, tags="created")`` sends the serialized value as
the body; without a serializer the value must be bytes.

Async sends complete their future (and call ``callback(result, error)``) on the session's
poller thread: keep callbacks short. Their retries run on a producer thread. With
``async_requests_in_flight`` (default 1; 0 turns it off), an async send to no queue in
particular, made while its topic has that many requests in flight (per broker), waits for one
of them to be answered, then goes with the others that waited as one request of one record batch
(``producer/_coalesce.py``, Kafka's record accumulator): one envelope and one wake-up of the
broker and of this client per request, not per send. Each send keeps its own future, message
ids, queue offsets and retries; a merged request the broker refuses for its content is sent
again send by send, so each gets its own answer.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future, InvalidStateError, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, Final

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageQueue,
    MessageTooLargeError,
    MetricsServer,
    RequestTimeoutError,
    ResponseCode,
    TopicNotFoundError,
    UniqueMessageIdGenerator,
    call_hooks,
    error_for_code,
    serve_metrics,
)
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.route import RouteResolver, TopicRoute
from aeromq.client.session import (
    PRODUCER_SESSION_IDLE_STRATEGY,
    BackPressuredError,
    default_idle_strategy,
)
from aeromq.common import MAX_FRAMING_BYTES, check_body, merge_batches
from aeromq.producer._batch import SendResults, encode_messages, pack_born_host
from aeromq.producer._coalesce import SendCoalescer
from aeromq.producer._config import ProducerConfig, check_producer_group
from aeromq.producer._hooks import SendMessageContext, SendMessageHook, SendMode
from aeromq.producer._metrics import ProducerMeter, ProducerMetrics
from aeromq.producer._route import RouteSource
from aeromq.producer._selector import (
    LeastSentSelector,
    QueueSelector,
    RoundRobinSelector,
    select_avoiding,
)
from aeromq.producer._send_result import SendResult, SendStatus
from aeromq.proto import messages_pb2

__all__ = ["Producer", "SendCallback"]

_log = logging.getLogger(__name__)

SendCallback = Callable[[Any, BaseException | None], object]
"""``callback(result, None)`` on success (a ``SendResult``, or a list for a batch),
``callback(None, error)`` on failure."""

_SEND_STATUS: Final = {
    messages_pb2.SEND_OK: SendStatus.SEND_OK,
    messages_pb2.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    messages_pb2.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    messages_pb2.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_STORED_CODES: Final = (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT)
_RETRY_CODES: Final = frozenset((ResponseCode.SYSTEM_ERROR, ResponseCode.SERVICE_NOT_AVAILABLE))
_RETRY_ELSEWHERE_CODES: Final = frozenset(
    (ResponseCode.TOPIC_NOT_EXIST, ResponseCode.NO_PERMISSION)
)


class _Attempt:
    """One send's retry state (sync or async), with its record batch, encoded once."""

    __slots__ = (
        "attempts_left",
        "batch",
        "deadline_ns",
        "last_broker",
        "messages",
        "queue",
        "selector",
        "unique_ids",
    )

    def __init__(
        self,
        messages: Sequence[Message],
        batch: bytes,
        unique_ids: list[str],
        deadline_ns: int,
        attempts: int,
        queue: MessageQueue | None,
        selector: Callable[[Sequence[MessageQueue]], MessageQueue] | None,
    ) -> None:
        self.messages = messages
        self.batch = batch
        self.unique_ids = unique_ids
        self.deadline_ns = deadline_ns
        self.attempts_left = attempts
        self.queue = queue
        self.selector = selector
        self.last_broker: str | None = None


_Waiting = tuple[_Attempt, "Future[Any]", bool]
"""An async send that may wait to go with others: its attempt, its future, one message."""


def _batch_bytes(item: _Waiting) -> int:
    return len(item[0].batch)


class Producer:
    """A producer of group ``group`` (see module). ``endpoints``: gRPC addresses of brokers
    (or of name servers, with ``namesrv``); or give a ``route`` instead."""

    def __init__(
        self,
        group: str,
        endpoints: str | Sequence[str] | None = None,
        *,
        route: RouteSource | None = None,
        namesrv: bool = False,
        config: ProducerConfig | None = None,
        queue_selector: QueueSelector | None = None,
        client_id: str | None = None,
        value_serializer: Callable[[Any], bytes] | None = None,
    ) -> None:
        check_producer_group(group)
        self.value_serializer = value_serializer
        if route is None and not endpoints:
            raise IllegalArgumentError("a producer needs endpoints or a route", group=group)
        self.group = group
        self.config = config or ProducerConfig()
        self._endpoints = [endpoints] if isinstance(endpoints, str) else list(endpoints or ())
        self._namesrv = namesrv
        self._routes = route
        self._selector = queue_selector
        self._round_robin = RoundRobinSelector()
        self._least_sent: dict[str, LeastSentSelector] = {}
        self.client_id = client_id or (
            f"{socket.gethostname()}@{os.getpid()}@{random.getrandbits(32):08x}"
        )
        self._ids = UniqueMessageIdGenerator()
        self._born_host = pack_born_host(f"{self.config.udp_response_host}:0")
        self._sessions: BrokerSessions | None = None
        self._queue_cache: dict[str, tuple[TopicRoute, list[MessageQueue]]] = {}
        self._retry_executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._running = False
        self._meter = ProducerMeter()
        self._send_hooks: list[SendMessageHook] = []
        self._coalescer: SendCoalescer[_Waiting] | None = (
            SendCoalescer(self.config.max_message_size, _batch_bytes)
            if self.config.async_requests_in_flight
            else None
        )

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Producer:
        """Get ready to send (sessions connect on first use); idempotent."""
        with self._lock:
            if self._running:
                return self
            if self._routes is None:
                self._routes = RouteResolver(
                    self._endpoints,
                    kind="namesrv" if self._namesrv else "auto",
                    ttl_ms=self.config.route_refresh_interval_ms,
                    credentials=self.config.credentials,
                    tls=self.config.tls,
                )
            config = self.config
            self._sessions = BrokerSessions(
                client_id=self.client_id,
                transport=config.transport,
                aeron_dir=config.aeron_dir,
                udp_response_host=config.udp_response_host,
                request_timeout_ms=config.send_timeout_ms,
                offer_timeout_ms=config.offer_timeout_ms,
                credentials=config.credentials,
                idle_strategy=default_idle_strategy(PRODUCER_SESSION_IDLE_STRATEGY),
            )
            self._running = True
        return self

    def shutdown(self) -> None:
        """Close the sessions (pending async sends fail) and the route source; idempotent."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            sessions, self._sessions = self._sessions, None
            executor, self._retry_executor = self._retry_executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if sessions is not None:
            sessions.close()
        if self._routes is not None:
            self._routes.close()

    def __enter__(self) -> Producer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        return self._running

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's writable queues, as the route says."""
        return self._write_queues(self._route(topic))

    # -- sync ----------------------------------------------------------------------------

    def send(
        self,
        message: Message,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
    ) -> SendResult:
        """Send one message and wait until the broker stored it (see module)."""
        return self._send_sync([message], timeout_ms, queue, selector, arg)[0]

    def message_of(
        self,
        topic: str,
        value: Any,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] = (),
        properties: dict[str, str] | None = None,
    ) -> Message:
        """A message of ``topic`` whose body is ``value`` through ``value_serializer`` (the
        value itself, bytes, without one). Raises IllegalArgumentError when the serializer
        fails or gives no bytes."""
        serializer = self.value_serializer
        if serializer is None:
            body = value
        else:
            try:
                body = serializer(value)
            except Exception as exc:
                raise IllegalArgumentError(
                    "the value_serializer failed", topic=topic, error=repr(exc)
                ) from exc
        if not isinstance(body, bytes | bytearray | memoryview):
            raise IllegalArgumentError(
                "a value must serialize to bytes", topic=topic, type=type(body).__name__
            )
        return Message(topic, body, tags=tags, keys=keys, properties=properties)

    def send_value(
        self,
        topic: str,
        value: Any,
        timeout_ms: int | None = None,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] = (),
        properties: dict[str, str] | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """``send`` of :meth:`message_of` (kafka-python's ``send(topic, value)``)."""
        message = self.message_of(topic, value, tags=tags, keys=keys, properties=properties)
        return self.send(message, timeout_ms, queue=queue)

    def send_batch(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
    ) -> Sequence[SendResult]:
        """Send messages of one topic to one queue as one request (all stored or none)."""
        return self._send_sync(messages, timeout_ms, queue, None, None)

    def _send_sync(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None,
        queue: MessageQueue | None,
        selector: QueueSelector | None,
        arg: Any,
    ) -> Sequence[SendResult]:
        started_ns = time.perf_counter_ns()
        context = self._before_send(messages, SendMode.SYNC)
        try:
            attempt = self._prepare(messages, timeout_ms, queue, selector, arg, asynchronous=False)
            results = self._attempt_sync(attempt, timeout_ms)
        except BaseException as exc:
            self._meter.on_failed()
            self._after_send(context, exception=exc)
            raise
        self._meter.on_sent(len(messages), time.perf_counter_ns() - started_ns)
        self._after_send(context, results=results)
        return results

    def _attempt_sync(self, attempt: _Attempt, timeout_ms: int | None) -> Sequence[SendResult]:
        """Each attempt in turn until one is answered, one fails for good, or time is up."""
        last_error: ClientError | None = None
        while attempt.attempts_left > 0:
            attempt.attempts_left -= 1
            remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000
            if remaining_ms <= 0:
                break
            route, target = self._target(attempt)
            try:
                session = self._require_sessions().session(route.broker(target.broker_name))
                response = session.request(self._request(target, attempt), remaining_ms)
                return _results(response, target, attempt)
            except ClientError as exc:
                if not self._should_retry(exc, route, target, attempt):
                    raise
                last_error = exc
        if last_error is not None:
            raise last_error
        raise RequestTimeoutError(
            "send timed out before an attempt", timeout_ms=self._timeout(timeout_ms)
        )

    # -- async ---------------------------------------------------------------------------

    def send_async(
        self,
        message: Message,
        callback: SendCallback | None = None,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
    ) -> Future[SendResult]:
        """Send one message without waiting: a future of its ``SendResult`` (and
        ``callback``, if given). The offer itself may wait up to ``offer_timeout_ms`` while
        the broker back-pressures."""
        context = self._before_send([message], SendMode.ASYNC)
        attempt = self._prepare([message], timeout_ms, queue, selector, arg, asynchronous=True)
        outer: Future[SendResult] = Future()
        self._observe(outer, 1, context)
        self._dispatch(attempt, outer, single=True)
        if callback is not None:
            outer.add_done_callback(_call_back(callback))
        return outer

    def send_batch_async(
        self,
        messages: Sequence[Message],
        callback: SendCallback | None = None,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
    ) -> Future[Sequence[SendResult]]:
        """``send_batch`` without waiting (see ``send_async``)."""
        context = self._before_send(messages, SendMode.ASYNC)
        attempt = self._prepare(messages, timeout_ms, queue, None, None, asynchronous=True)
        outer: Future[Sequence[SendResult]] = Future()
        self._observe(outer, len(messages), context)
        self._dispatch(attempt, outer, single=False)
        if callback is not None:
            outer.add_done_callback(_call_back(callback))
        return outer

    def _observe(
        self, outer: Future[Any], messages: int, context: SendMessageContext | None
    ) -> None:
        """Count the async send of ``outer`` in the metrics, and end its hooks' context, when
        it settles."""
        started_ns = time.perf_counter_ns()

        def settled(future: Future[Any]) -> None:
            if future.cancelled():
                self._meter.on_failed()
                self._after_send(context, exception=CancelledError())
            elif (error := future.exception()) is not None:
                self._meter.on_failed()
                self._after_send(context, exception=error)
            else:
                self._meter.on_sent(messages, time.perf_counter_ns() - started_ns)
                if context is not None:  # hooks: they see the results
                    result = future.result()
                    one = isinstance(result, SendResult)
                    self._after_send(context, results=[result] if one else result)

        outer.add_done_callback(settled)

    def _dispatch(self, attempt: _Attempt, outer: Future[Any], single: bool) -> None:
        """Send an async send now, alone, or leave it to wait and go with others (a send to
        no queue in particular while its topic has its requests in flight: see
        ``producer/_coalesce.py``)."""
        coalescer = self._coalescer
        if coalescer is None or attempt.queue is not None or attempt.selector is not None:
            self._submit_async(attempt, outer, single)
            return
        topic = attempt.messages[0].topic
        try:
            brokers = len(self._route(topic).brokers)
        except ClientError:  # no route: the send fails as any other
            self._submit_async(attempt, outer, single)
            return
        item = (attempt, outer, single)
        if coalescer.admit(topic, item, self.config.async_requests_in_flight * brokers):
            self._submit_group(topic, [item], wait_offer=True)

    def _submit_group(self, topic: str, group: list[_Waiting], wait_offer: bool) -> None:
        """Send ``group`` (async sends of ``topic``, counted in flight) as one request: one
        record batch of theirs all, to the queue least sent to. ``wait_offer`` False (a thread
        that reads answers): a back-pressured ingress hands the send to the producer's thread,
        which waits."""
        now_ns = time.monotonic_ns()
        live: list[_Waiting] = []
        for item in group:
            if item[0].deadline_ns - now_ns < 1_000_000:
                item[0].attempts_left -= 1
                _settle(item[1], error=RequestTimeoutError("send timed out", group=self.group))
            else:
                live.append(item)
        if not live:
            self._group_over(topic, wait_offer)
            return
        batch = live[0][0].batch if len(live) == 1 else merge_batches([i[0].batch for i in live])
        if batch is None:  # not one batch (cannot be, from one producer): each alone
            for attempt, outer, single in live[1:]:
                self._submit_async(attempt, outer, single)
            live = live[:1]
            batch = live[0][0].batch
        remaining_ms = (min(item[0].deadline_ns for item in live) - now_ns) // 1_000_000
        try:
            route, target = self._group_target(topic, sum(len(i[0].unique_ids) for i in live))
            session = self._require_sessions().session(route.broker(target.broker_name))
            request = messages_pb2.SendMessageRequest(
                producer_group=self.group, topic=topic, queue_id=target.queue_id, batch=batch
            )
            inner = session.request_async(request, remaining_ms, wait_offer=wait_offer)
        except BackPressuredError as exc:
            if wait_offer:
                self._group_failed(exc, live, None, None, wait_offer)
                return
            try:
                self._executor().submit(self._submit_group, topic, live, True)
            except RuntimeError:  # the producer shut down meanwhile
                self._group_failed(exc, live, None, None, wait_offer)
            return
        except ClientError as exc:
            self._group_failed(exc, live, None, None, wait_offer)
            return
        for item in live:
            item[0].attempts_left -= 1

        def done(future: Future[messages_pb2.SendMessageResponse]) -> None:
            self._group_answered(future, topic, live, route, target)

        inner.add_done_callback(done)

    def _group_answered(
        self,
        future: Future[messages_pb2.SendMessageResponse],
        topic: str,
        live: list[_Waiting],
        route: TopicRoute,
        target: MessageQueue,
    ) -> None:
        self._group_over(topic, wait_offer=False)  # what waits goes first: the broker works
        try:
            results = _group_results(future.result(), target, [item[0] for item in live])
        except ClientError as exc:
            if len(live) > 1 and exc.code not in _RETRY_CODES and not exc.retriable:
                # a refusal of the content: each send alone, for its own answer (not an attempt)
                for attempt, outer, single in live:
                    attempt.attempts_left += 1
                    try:
                        self._executor().submit(self._submit_async, attempt, outer, single)
                    except RuntimeError:
                        _settle(outer, error=exc)
                return
            for attempt, outer, single in live:
                self._async_failed(exc, attempt, outer, single, route, target)
            return
        except Exception as exc:  # a cancelled future, a bug: fail the sends, not the poller
            for item in live:
                _settle(item[1], error=exc)
            return
        for (_attempt, outer, single), result in zip(live, results, strict=True):
            _settle(outer, value=result[0] if single else result)

    def _group_failed(
        self,
        exc: ClientError,
        live: list[_Waiting],
        route: TopicRoute | None,
        target: MessageQueue | None,
        wait_offer: bool,
    ) -> None:
        """A group not sent: each of its sends fails (or retries), then what waits goes."""
        for attempt, outer, single in live:
            attempt.attempts_left -= 1
            self._async_failed(exc, attempt, outer, single, route, target)
        self._group_over(live[0][0].messages[0].topic, wait_offer)

    def _group_over(self, topic: str, wait_offer: bool) -> None:
        """A request of ``topic``'s sends is over: send what waits, if any."""
        coalescer = self._coalescer
        assert coalescer is not None
        group = coalescer.answered(topic)
        if group:
            self._submit_group(topic, group, wait_offer)

    def _submit_async(self, attempt: _Attempt, outer: Future[Any], single: bool) -> None:
        attempt.attempts_left -= 1
        remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000
        if remaining_ms <= 0:
            _settle(outer, error=RequestTimeoutError("send timed out", group=self.group))
            return
        try:
            route, target = self._target(attempt)
            session = self._require_sessions().session(route.broker(target.broker_name))
            inner = session.request_async(self._request(target, attempt), remaining_ms)
        except ClientError as exc:
            self._async_failed(exc, attempt, outer, single, None, None)
            return

        def done(future: Future[messages_pb2.SendMessageResponse]) -> None:
            try:
                results = _results(future.result(), target, attempt)
            except ClientError as exc:
                self._async_failed(exc, attempt, outer, single, route, target)
                return
            except Exception as exc:  # a cancelled future, a bug: fail the send, not the poller
                _settle(outer, error=exc)
                return
            _settle(outer, value=results[0] if single else results)

        inner.add_done_callback(done)

    def _async_failed(
        self,
        exc: ClientError,
        attempt: _Attempt,
        outer: Future[Any],
        single: bool,
        route: TopicRoute | None,
        target: MessageQueue | None,
    ) -> None:
        if route is None or target is None or not self._should_retry(exc, route, target, attempt):
            _settle(outer, error=exc)
            return
        try:
            self._executor().submit(self._submit_async, attempt, outer, single)
        except RuntimeError:  # the producer shut down meanwhile
            _settle(outer, error=exc)

    def _executor(self) -> ThreadPoolExecutor:
        executor = self._retry_executor
        if executor is None:
            with self._lock:
                if self._retry_executor is None:
                    self._retry_executor = ThreadPoolExecutor(1, "producer-retry")
                executor = self._retry_executor
        return executor

    # -- oneway --------------------------------------------------------------------------

    def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Send one message with no answer awaited and no retry."""
        context = self._before_send([message], SendMode.ONEWAY)
        try:
            attempt = self._prepare([message], None, queue, None, None, asynchronous=False)
            route, target = self._target(attempt)
            session = self._require_sessions().session(route.broker(target.broker_name))
            session.send_oneway(self._request(target, attempt))
        except BaseException as exc:
            self._after_send(context, exception=exc)
            raise
        self._meter.on_oneway()
        self._after_send(context)

    # -- hooks ---------------------------------------------------------------------------

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """Run ``hook`` around every send from now on, after the hooks registered before it
        (see ``producer.SendMessageHook``; RocketMQ's ``registerSendMessageHook``)."""
        self._send_hooks = [*self._send_hooks, hook]

    def _before_send(
        self, messages: Sequence[Message], mode: SendMode
    ) -> SendMessageContext | None:
        hooks = self._send_hooks
        if not hooks:
            return None  # the common case costs one attribute read
        topic = messages[0].topic if messages else ""
        context = SendMessageContext(self.group, topic, messages, mode, time.monotonic_ns())
        call_hooks(hooks, "send_message_before", context)
        return context

    def _after_send(
        self,
        context: SendMessageContext | None,
        *,
        results: Sequence[SendResult] | None = None,
        exception: BaseException | None = None,
    ) -> None:
        if context is None:
            return
        context.results, context.exception = results, exception
        context.elapsed_ns = time.monotonic_ns() - context.started_ns
        call_hooks(self._send_hooks, "send_message_after", context)

    # -- metrics -------------------------------------------------------------------------

    def metrics(self) -> ProducerMetrics:
        """What this producer did since it was made: sends, messages, retries, errors, oneway
        sends and the send latency (see ``ProducerMetrics``)."""
        return self._meter.snapshot()

    def serve_metrics(self, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
        """Serve :meth:`metrics` at ``http://host:port/metrics`` for Prometheus
        (``aeromq_producer_*``, labelled with the group and client id); ``close()`` the answer
        to stop."""
        labels = {"group": self.group, "client_id": self.client_id}
        return serve_metrics("aeromq_producer", self.metrics, labels, host=host, port=port)

    # -- shared --------------------------------------------------------------------------

    def _timeout(self, timeout_ms: int | None) -> int:
        return self.config.send_timeout_ms if timeout_ms is None else timeout_ms

    def _prepare(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None,
        queue: MessageQueue | None,
        selector: QueueSelector | None,
        arg: Any,
        asynchronous: bool,
    ) -> _Attempt:
        if not self._running:
            raise IllegalStateError("producer not started", group=self.group)
        if not messages:
            raise IllegalArgumentError("nothing to send", group=self.group)
        topic = messages[0].topic
        max_size = self.config.max_message_size
        count = len(messages)
        if count > 1 and [message.topic for message in messages].count(topic) != count:
            other = next(message.topic for message in messages if message.topic != topic)
            raise IllegalArgumentError(
                "a batch must hold one topic", topic=topic, other_topic=other
            )
        bodies = [message.body for message in messages]
        sizes = list(map(len, bodies))
        if min(sizes) == 0 or max(sizes) > max_size:  # find the first, for its error
            for body in bodies:
                check_body(body, max_size)
        total = sum(sizes)
        if total > max_size:
            raise MessageTooLargeError(
                "the batch is over the maximum message size",
                batch_length=total,
                max_message_size=max_size,
            )
        if queue is not None and queue.topic != topic:
            raise IllegalArgumentError("the queue is of another topic", topic=topic, queue=queue)
        chooser: Callable[[Sequence[MessageQueue]], MessageQueue] | None = None
        chosen = selector or self._selector
        if chosen is not None:
            first = messages[0]

            def chooser(queues: Sequence[MessageQueue]) -> MessageQueue:
                return chosen(queues, first, arg)

        pinned = queue is not None or chooser is not None
        retries = (
            self.config.retry_times_when_send_async_failed
            if asynchronous
            else self.config.retry_times_when_send_failed
        )
        deadline_ns = time.monotonic_ns() + self._timeout(timeout_ms) * 1_000_000
        batch, unique_ids = encode_messages(
            messages, self._ids, time.time_ns() // 1_000_000, self._born_host, bodies
        )
        if len(batch) > max_size + MAX_FRAMING_BYTES:
            raise MessageTooLargeError(
                "the batch, encoded, is over the maximum message size",
                batch_bytes=len(batch),
                max_message_size=max_size,
                allowance=MAX_FRAMING_BYTES,
            )
        return _Attempt(
            messages, batch, unique_ids, deadline_ns, 1 if pinned else 1 + retries, queue, chooser
        )

    def _route(self, topic: str) -> TopicRoute:
        routes = self._routes
        if routes is None:
            raise IllegalStateError("producer not started", group=self.group)
        return routes.route(topic)

    def _write_queues(self, route: TopicRoute) -> list[MessageQueue]:
        """The route's writable queues, computed once per route object."""
        cached = self._queue_cache.get(route.topic)
        if cached is not None and cached[0] is route:
            return cached[1]
        queues = route.write_queues()
        if not queues:
            raise TopicNotFoundError("no writable queue for the topic", topic=route.topic)
        self._queue_cache[route.topic] = (route, queues)
        return queues

    def _target(self, attempt: _Attempt) -> tuple[TopicRoute, MessageQueue]:
        route = self._route(attempt.messages[0].topic)
        if attempt.queue is not None:
            target = attempt.queue
        elif attempt.selector is not None:
            target = attempt.selector(self._write_queues(route))
        else:
            target = select_avoiding(
                self._round_robin,
                self._write_queues(route),
                attempt.messages[0],
                attempt.last_broker,
            )
        if target.broker_name not in route.brokers:
            raise IllegalArgumentError(
                "the queue's broker is not in the topic's route", queue=target
            )
        return route, target

    def _group_target(self, topic: str, count: int) -> tuple[TopicRoute, MessageQueue]:
        """The queue of a group of ``count`` messages: the least sent to (see
        ``LeastSentSelector``), groups being of many sizes."""
        route = self._route(topic)
        selector = self._least_sent.get(topic)
        if selector is None:
            selector = self._least_sent.setdefault(topic, LeastSentSelector())
        target = selector.pick(self._write_queues(route), count)
        if target.broker_name not in route.brokers:
            raise IllegalArgumentError(
                "the queue's broker is not in the topic's route", queue=target
            )
        return route, target

    def _should_retry(
        self, exc: ClientError, route: TopicRoute, target: MessageQueue, attempt: _Attempt
    ) -> bool:
        attempt.last_broker = target.broker_name
        retriable = exc.retriable or exc.code in _RETRY_CODES
        if not retriable and exc.code in _RETRY_ELSEWHERE_CODES:
            retriable = len(route.brokers) > 1
        if not retriable or attempt.attempts_left <= 0:
            return False
        if exc.code in (ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SLAVE_NOT_AVAILABLE):
            self._require_sessions().drop(target.broker_name)
            if self._routes is not None:
                self._routes.invalidate(target.topic)
        _log.info("send failed, retrying: %s attempts_left=%d", exc, attempt.attempts_left)
        self._meter.on_retry()
        return True

    def _require_sessions(self) -> BrokerSessions:
        sessions = self._sessions
        if sessions is None:
            raise IllegalStateError("producer not started", group=self.group)
        return sessions

    def _request(self, target: MessageQueue, attempt: _Attempt) -> messages_pb2.SendMessageRequest:
        return messages_pb2.SendMessageRequest(
            producer_group=self.group,
            topic=target.topic,
            queue_id=target.queue_id,
            batch=attempt.batch,
        )


def _results(
    response: messages_pb2.SendMessageResponse, target: MessageQueue, attempt: _Attempt
) -> SendResults:
    """The send's results, or the error of its status code."""
    return _group_results(response, target, [attempt])[0]


def _group_results(
    response: messages_pb2.SendMessageResponse, target: MessageQueue, attempts: list[_Attempt]
) -> list[SendResults]:
    """The results of each send of one request (their batches one after the other in it), or
    the error of its status code."""
    status = response.status
    count = sum(len(attempt.unique_ids) for attempt in attempts)
    if status.code not in _STORED_CODES or response.message_count != count:
        raise error_for_code(
            status.code or ResponseCode.SYSTEM_ERROR,
            status.message
            or f"the broker answered a send of {count} messages with {response.message_count}",
            broker=target.broker_name,
            topic=target.topic,
            queue_id=target.queue_id,
        )
    queue = target
    if response.queue_id != target.queue_id or (
        response.broker_name and response.broker_name != target.broker_name
    ):
        queue = MessageQueue(
            target.topic, response.broker_name or target.broker_name, response.queue_id
        )
    send_status = _SEND_STATUS.get(response.send_status, SendStatus.SEND_OK)
    store_host = _store_host(response.store_host)
    queue_offset = response.base_queue_offset
    commit_log_offset = response.base_commit_log_offset
    results = []
    for attempt in attempts:
        ids = attempt.unique_ids
        results.append(
            SendResults(send_status, queue, queue_offset, commit_log_offset, store_host, ids)
        )
        queue_offset += len(ids)
        commit_log_offset += len(ids)
    return results


@lru_cache(maxsize=64)
def _store_host(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    try:
        return host, int(port)
    except ValueError:
        return "0.0.0.0", 0


def _settle(future: Future[Any], *, value: Any = None, error: BaseException | None = None) -> None:
    try:  # not contextlib.suppress: once per send, and a try costs nothing when nothing raises
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
    except InvalidStateError:  # timed out or cancelled meanwhile
        pass


def _call_back(callback: SendCallback) -> Callable[[Future[Any]], None]:
    def done(future: Future[Any]) -> None:
        error = future.exception()
        try:
            callback(None if error is not None else future.result(), error)
        except Exception:
            _log.exception("a send callback raised")

    return done
