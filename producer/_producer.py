"""``Producer``: sends messages to a topic's queues over the transport (RocketMQ's
``DefaultMQProducer``).

::

    with Producer("my-group", "127.0.0.1:8081") as producer:      # a broker's gRPC address
        result = producer.send(Message("orders", b"...", tags="created", keys="order-42"))
        future = producer.send_async(Message("orders", b"..."))   # pipelined
        producer.send_batch([Message("orders", b"1"), Message("orders", b"2")])
        producer.send_oneway(Message("orders", b"fire and forget"))
        producer.send_columns("orders", pyarrow_bodies, keys=pyarrow_keys)  # a row a message

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
not retried elsewhere. A broker name served by a group of members (a leader and followers) adds
one rule (``producer/_failover.py``): a send its member refused with ``NOT_LEADER``, or that
failed because the leader died, goes to the group's new leader, to the same queue, without
counting an attempt (the leader a ``NOT_LEADER`` answer names is used at once; otherwise the
route is looked up again, once for all the sends that failed), and while the group elects one
it waits (a bounded back-off) within ``send_timeout_ms``, unless another broker can take it. Errors are the ``client`` tree: the broker's refusal of the content
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

Inside, the send path is split by role: ``_send_path.py`` (preparation, sync attempts, RocketMQ's
retry rules, hooks, sessions), ``_failover.py`` (retries at a broker group's new leader),
``_one_send.py`` (the common one-message send on a straight path), ``_routing.py`` (the
queue of each send), ``_async_sends.py``
(async sends, coalesced or alone, and their retries), ``_answers.py`` (the broker's answers read
into results, futures settled) and ``_attempt.py`` (one send's retry state); the columnar sends
are ``_columns.py`` (with ``_columns_input.py``, ``_columns_queues.py``, ``_columns_result.py``);
``Producer`` is their façade.
"""

from __future__ import annotations

import os
import random
import socket
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageQueue,
    MetricsServer,
    serve_metrics,
)
from aeromq.producer._answers import SendCallback, call_back
from aeromq.producer._async_sends import AsyncSendFuture, AsyncSends
from aeromq.producer._columns import ColumnSender, Properties
from aeromq.producer._columns_input import ColumnValues, TextValues
from aeromq.producer._columns_queues import ColumnSelector
from aeromq.producer._columns_result import ColumnSendResults
from aeromq.producer._config import ProducerConfig, check_producer_group
from aeromq.producer._hooks import SendMessageHook, SendMode
from aeromq.producer._metrics import ProducerMetrics
from aeromq.producer._one_send import send_one
from aeromq.producer._route import RouteSource
from aeromq.producer._routing import QueueRouter
from aeromq.producer._selector import QueueSelector
from aeromq.producer._send_path import SendPath
from aeromq.producer._send_result import SendResult
from aeromq.producer._sequences import ProducerSequences

__all__ = ["Producer", "SendCallback"]


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
        # the serializer takes the application's values, of the application's type
        value_serializer: Callable[[Any], bytes] | None = None,
    ) -> None:
        check_producer_group(group)
        self.value_serializer = value_serializer
        if route is None and not endpoints:
            raise IllegalArgumentError("a producer needs endpoints or a route", group=group)
        self.group = group
        self.config = config or ProducerConfig()
        self.client_id = client_id or (
            f"{socket.gethostname()}@{os.getpid()}@{random.getrandbits(32):08x}"
        )
        self._router = QueueRouter(group, route)
        self._send_path = SendPath(
            group,
            self.config,
            self._router,
            endpoints=[endpoints] if isinstance(endpoints, str) else list(endpoints or ()),
            namesrv=namesrv,
            client_id=self.client_id,
            queue_selector=queue_selector,
        )
        self._async_sends = AsyncSends(self._send_path, self._router)
        self._columns = ColumnSender(self._send_path, self._async_sends)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> Producer:
        """Get ready to send (sessions connect on first use); idempotent."""
        self._send_path.start()
        return self

    def shutdown(self) -> None:
        """Close the sessions (pending async sends fail) and the route source; idempotent."""
        self._send_path.shutdown()

    def __enter__(self) -> Producer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def running(self) -> bool:
        """True between :meth:`start` and :meth:`shutdown`."""
        return self._send_path.running

    def restart_sequences(self, producer_id: int) -> None:
        """Go on as idempotent producer ``producer_id``, every queue's sequence from 0 (epoch
        0). A writer that may send the same batches again after a crash (the Spark sink's
        micro-batches) derives the id from what it writes, so the broker answers a batch it
        stored before with that batch's result instead of storing it twice: it must send the
        same record batches, in the same order, to the same queues, at most the broker's window
        of them (5) per queue and id. Call it with no send in flight. Raises
        :class:`~client.IllegalStateError` without ``enable_idempotence``."""
        path = self._send_path
        if path.sequences is None:
            raise IllegalStateError("restart_sequences needs enable_idempotence", group=self.group)
        path.sequences = ProducerSequences(producer_id)

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's writable queues, as the route says."""
        router = self._router
        return router.write_queues(router.route(topic))

    # -- sync ----------------------------------------------------------------------------

    def send(
        self,
        message: Message,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> SendResult:
        """Send one message and wait until the broker stored it (see module)."""
        if queue is None and selector is None and arg is None:  # the common send (_one_send)
            return send_one(self._send_path, message, timeout_ms)
        return self._send_path.send_sync([message], timeout_ms, queue, selector, arg)[0]

    def message_of(
        self,
        topic: str,
        value: object,
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
        value: object,
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
        return self._send_path.send_sync(messages, timeout_ms, queue, None, None)

    # -- async ---------------------------------------------------------------------------
    # The steps are here, not in a method of AsyncSends, so that a send costs no extra call.

    def send_async(
        self,
        message: Message,
        callback: SendCallback | None = None,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> Future[SendResult]:
        """Send one message without waiting: a future of its ``SendResult`` (and
        ``callback``, if given). The offer itself may wait up to ``offer_timeout_ms`` while
        the broker back-pressures."""
        path, sends = self._send_path, self._async_sends
        context = path.before_send([message], SendMode.ASYNC)
        attempt = path.prepare([message], timeout_ms, queue, selector, arg, asynchronous=True)
        outer: Future[SendResult] = AsyncSendFuture(sends)
        sends.observe(outer, 1, context)
        sends.dispatch(attempt, outer, single=True)
        if callback is not None:
            outer.add_done_callback(call_back(callback))
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
        path, sends = self._send_path, self._async_sends
        context = path.before_send(messages, SendMode.ASYNC)
        attempt = path.prepare(messages, timeout_ms, queue, None, None, asynchronous=True)
        outer: Future[Sequence[SendResult]] = AsyncSendFuture(sends)
        sends.observe(outer, len(messages), context)
        sends.dispatch(attempt, outer, single=False)
        if callback is not None:
            outer.add_done_callback(call_back(callback))
        return outer

    # -- columns -------------------------------------------------------------------------

    def send_columns(
        self,
        topic: str,
        bodies: ColumnValues,
        *,
        tags: TextValues | None = None,
        keys: TextValues | None = None,
        properties: Properties | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | ColumnSelector | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> ColumnSendResults:
        """Send a whole column set, a message per row, and wait until every row is stored:
        each row's result, in order (``producer/_columns.py``). ``bodies``: an Arrow binary or
        string array, or a numpy array of rows; ``tags``, ``keys``: string columns or one str
        (null: none); ``properties``: names to string columns, or an Arrow map array. Rows go to
        ``queue``, or by ``selector`` (the producer's, by default; a ``KeyHashSelector`` hashes
        each row's first key, or ``arg``), or round robin batch by batch; record batches are
        encoded straight from the columns' buffers, with no Python object per row. Raises,
        with nothing sent, MessageIllegalError naming the first row that cannot be a message;
        then the first failed batch's error (others may be stored)."""
        return self._columns.send(
            topic, bodies, tags, keys, properties, queue, selector, arg, timeout_ms, False
        ).result()

    def send_columns_async(
        self,
        topic: str,
        bodies: ColumnValues,
        *,
        tags: TextValues | None = None,
        keys: TextValues | None = None,
        properties: Properties | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | ColumnSelector | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> Future[ColumnSendResults]:
        """``send_columns`` without waiting: the rows are checked and encoded now (the same
        errors raised), their batches offered at once; a future of every row's result."""
        return self._columns.send(
            topic, bodies, tags, keys, properties, queue, selector, arg, timeout_ms, True
        )

    # -- oneway --------------------------------------------------------------------------

    def send_oneway(self, message: Message, *, queue: MessageQueue | None = None) -> None:
        """Send one message with no answer awaited and no retry."""
        path = self._send_path
        context = path.before_send([message], SendMode.ONEWAY)
        try:
            attempt = path.prepare([message], None, queue, None, None, asynchronous=False)
            route, target = self._router.target(attempt)
            session = path.require_sessions().session(route.broker(target.broker_name))
            session.send_oneway(path.request(target, attempt, stamped=False))
        except BaseException as exc:
            path.after_send(context, exception=exc)
            raise
        path.meter.on_oneway()
        path.after_send(context)

    # -- hooks ---------------------------------------------------------------------------

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """Run ``hook`` around every send from now on, after the hooks registered before it
        (see ``producer.SendMessageHook``; RocketMQ's ``registerSendMessageHook``)."""
        path = self._send_path
        path.hooks = [*path.hooks, hook]

    # -- metrics -------------------------------------------------------------------------

    def metrics(self) -> ProducerMetrics:
        """What this producer did since it was made: sends, messages, retries, errors, oneway
        sends and the send latency (see ``ProducerMetrics``)."""
        return self._send_path.meter.snapshot()

    def serve_metrics(self, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
        """Serve :meth:`metrics` at ``http://host:port/metrics`` for Prometheus
        (``aeromq_producer_*``, labelled with the group and client id); ``close()`` the answer
        to stop."""
        labels = {"group": self.group, "client_id": self.client_id}
        return serve_metrics("aeromq_producer", self.metrics, labels, host=host, port=port)
