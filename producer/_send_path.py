"""``SendPath``: a send from its messages to the broker's answer, and what every send shares.

It holds a producer's running state, broker sessions, send hooks, meter and retry thread, and
does the steps every kind of send takes:

- :meth:`SendPath.prepare`: validation (started, one topic, body sizes, the queue's topic), the
  messages' unique ids and their record batch, encoded once, in an ``Attempt`` (``_attempt.py``);
- :meth:`SendPath.send_sync` and :meth:`SendPath.attempt_sync`: a sync send, tried on the queue
  ``QueueRouter.target`` gives (``_routing.py``) until one attempt is answered (an idempotent
  producer's attempt waits at most ``request_timeout_ms``: ``_failover.py``);
- :meth:`SendPath.retry_delay_ms`: RocketMQ's retry rules (a retriable error or a
  SYSTEM_ERROR / SERVICE_NOT_AVAILABLE, or TOPIC_NOT_EXIST / NO_PERMISSION when another broker
  serves the topic; attempts left; the failed broker avoided next), extended for broker groups
  (``_failover.py``: the same queue at the group's new leader, not counted, or after a back-off
  while it elects one, within the send's timeout), for sync and async sends;
- :meth:`SendPath.before_send` / :meth:`SendPath.after_send`: the send hooks around each send.

Caller: the façade (``Producer`` in ``_producer.py``: lifecycle, sync and oneway sends) and the
async sends (``_async_sends.py``: preparation, retries, sessions, the retry thread).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import NoReturn

from aeromq.client import (
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageQueue,
    MessageTooLargeError,
    OutOfOrderSequenceError,
    ReplicationTimeoutError,
    RequestTimeoutError,
    ResponseCode,
    UniqueMessageIdGenerator,
    call_hooks,
)
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.failover import is_failover_error
from aeromq.client.route import RouteResolver, TopicRoute
from aeromq.client.scheduler import TaskScheduler
from aeromq.client.session import (
    PRODUCER_SESSION_IDLE_STRATEGY,
    BackPressuredError,
    ClientSession,
    default_idle_strategy,
)
from aeromq.common import MAX_FRAMING_BYTES, SendRequest, check_body
from aeromq.common.record_batch import CompressionType, compress_batch
from aeromq.producer._answers import results_of
from aeromq.producer._attempt import RETRY_CODES, RETRY_ELSEWHERE_CODES, Attempt, QueueChooser
from aeromq.producer._batch import encode_messages, pack_born_host
from aeromq.producer._config import ProducerConfig
from aeromq.producer._failover import ELSEWHERE, GIVE_UP, abandoned, attempt_limit_ms, fail_over
from aeromq.producer._hooks import SendMessageContext, SendMessageHook, SendMode
from aeromq.producer._metrics import ProducerMeter
from aeromq.producer._routing import QueueRouter
from aeromq.producer._selector import QueueSelector
from aeromq.producer._send_result import SendResult
from aeromq.producer._sequences import OutOfOrder, ProducerSequences

__all__ = ["SendPath", "encoded_over_maximum", "over_maximum", "raise_sent_error"]

_log = logging.getLogger(__name__)

_RETRY_THREAD_NAMES = ("producer-retry", "aeromq-producer-retry-timer")
"""The retry thread's name prefix (``ThreadPoolExecutor``) and the retry timer's."""
_OUT_OF_ORDER_WAIT_MS = 10
"""How soon a batch that overtook an earlier one of its queue (a retry through a failover) is
tried again: the earlier one is on its way."""


class SendPath:
    """The send path of one producer (see module); made by ``Producer.__init__``."""

    def __init__(
        self,
        group: str,
        config: ProducerConfig,
        router: QueueRouter,
        *,
        endpoints: list[str],
        namesrv: bool,
        client_id: str,
        queue_selector: QueueSelector | None,
    ) -> None:
        self.group = group
        self.config = config
        self.router = router
        self.client_id = client_id
        self._endpoints = endpoints
        self._namesrv = namesrv
        self._selector = queue_selector
        self._ids = UniqueMessageIdGenerator()
        self.sequences = ProducerSequences() if config.enable_idempotence else None
        self._codec = (
            None if config.compression is None else CompressionType.parse(config.compression)
        )
        """An idempotent producer's sequences per queue (its producer id), or None."""
        self._born_host = pack_born_host(f"{config.udp_response_host}:0")
        self.plain = queue_selector is None and self._codec is None
        """No queue selector and no compression: a one-message send to no queue in particular
        may take the straight path (``_one_send.py``) when there are no hooks."""
        self.running = False
        self.sessions: BrokerSessions | None = None
        self.sessions_of: dict[tuple[str, str], tuple[TopicRoute, ClientSession]] = {}
        """(topic, broker name) -> the route object and the session ``send_one`` last sent
        on: the same route object's broker has the same session while it is open (as
        ``BrokerSessions.session`` gives it), found without three Python calls a send."""
        self.meter = ProducerMeter()
        self.hooks: list[SendMessageHook] = []
        """Replaced, never changed in place (``Producer.register_send_message_hook``)."""
        self._retry_executor: ThreadPoolExecutor | None = None
        self._retry_timer: TaskScheduler | None = None
        self._lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Make the route source (unless given one) and the broker sessions (they connect on
        first use); idempotent. Caller: ``Producer.start``."""
        with self._lock:
            if self.running:
                return
            if self.router.source is None:
                resolver = RouteResolver(
                    self._endpoints,
                    kind="namesrv" if self._namesrv else "auto",
                    ttl_ms=self.config.route_refresh_interval_ms,
                    credentials=self.config.credentials,
                    tls=self.config.tls,
                )
                self.router.source = resolver
                self.router.refresh_ahead(
                    self.config.route_refresh_interval_ms, self._refresh_runner, resolver.last
                )
            config = self.config
            self.sessions = BrokerSessions(
                client_id=self.client_id,
                transport=config.transport,
                aeron_dir=config.aeron_dir,
                udp_response_host=config.udp_response_host,
                request_timeout_ms=config.send_timeout_ms,
                offer_timeout_ms=config.offer_timeout_ms,
                credentials=config.credentials,
                idle_strategy=default_idle_strategy(PRODUCER_SESSION_IDLE_STRATEGY),
                back_to_back_spin_us=config.back_to_back_spin_us,
            )
            self.running = True

    def shutdown(self) -> None:
        """Stop the retry thread (its retries are cancelled), close the sessions (pending
        async sends fail) and the route source; idempotent. Caller: ``Producer.shutdown``."""
        with self._lock:
            if not self.running:
                return
            self.running = False
            sessions, self.sessions = self.sessions, None
            self.sessions_of.clear()
            executor, self._retry_executor = self._retry_executor, None
            timer, self._retry_timer = self._retry_timer, None
        waiting = timer.shutdown() if timer is not None else []
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        if sessions is not None:
            sessions.close()
        for retry in waiting:  # sends waiting for a group's election: they fail now
            retry()
        if self.router.source is not None:
            self.router.source.close()

    def executor(self) -> ThreadPoolExecutor:
        """The producer's thread for async retries and for groups whose offer must wait,
        started on first use. Caller: ``AsyncSends``."""
        executor = self._retry_executor
        if executor is None:
            with self._lock:
                if self._retry_executor is None:
                    self._retry_executor = ThreadPoolExecutor(1, _RETRY_THREAD_NAMES[0])
                executor = self._retry_executor
        return executor

    def _refresh_runner(self, refresh: Callable[[], None]) -> None:
        """Run a route refresh ahead of its TTL (``QueueRouter.refresh_ahead``) on the retry
        thread; raises RuntimeError once the producer shut down."""
        if not self.running:
            raise RuntimeError("producer shut down")
        self.executor().submit(refresh)

    @staticmethod
    def on_retry_thread() -> bool:
        """Whether the caller is the producer's retry thread or its timer (where a retry may
        block on a route query), not a session's poller."""
        return threading.current_thread().name.startswith(_RETRY_THREAD_NAMES)

    def retry_later(self, delay_ms: int, retry: Callable[[], None]) -> None:
        """Run ``retry`` in ``delay_ms`` on the producer's retry timer (an async send waiting
        for its broker group's election), started on first use. Caller: ``AsyncSends``."""
        timer = self._retry_timer
        if timer is None:
            with self._lock:
                timer = self._retry_timer
                if timer is None and self.running:
                    timer = self._retry_timer = TaskScheduler(_RETRY_THREAD_NAMES[1])
                    timer.start()
        if timer is None or not timer.schedule(delay_ms, retry):
            retry()  # shut down meanwhile: the retry fails its send

    def require_sessions(self) -> BrokerSessions:
        """The broker sessions. Raises IllegalStateError when the producer is not running."""
        sessions = self.sessions
        if sessions is None:
            raise IllegalStateError("producer not started", group=self.group)
        return sessions

    # -- preparation ---------------------------------------------------------------------

    def timeout(self, timeout_ms: int | None) -> int:
        """A send's timeout: ``timeout_ms``, or the configured ``send_timeout_ms``."""
        return self.config.send_timeout_ms if timeout_ms is None else timeout_ms

    def prepare(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None,
        queue: MessageQueue | None,
        selector: QueueSelector | None,
        arg: object,
        asynchronous: bool,
    ) -> Attempt:
        """Check a send (running, one topic, body sizes, the queue's topic), give its messages
        unique ids and encode their record batch: the send's ``Attempt``, with its deadline and
        attempts (one when pinned to a queue or a selector).

        Caller: ``send_sync``, ``Producer.send_async``/``send_batch_async``/``send_oneway``.
        Affects: sets ``UNIQ_KEY`` on messages that have none."""
        if not self.running:
            raise IllegalStateError("producer not started", group=self.group)
        if not messages:
            raise IllegalArgumentError("nothing to send", group=self.group)
        topic = messages[0].topic
        max_size = self.config.max_message_size
        count = len(messages)
        if count == 1:  # the common send: no list walks (a tenth of prepare's calls)
            body = messages[0].body
            total = len(body)
            if total == 0 or total > max_size:
                check_body(body, max_size)
            bodies = [body]
        else:
            if [message.topic for message in messages].count(topic) != count:
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
            raise over_maximum(total, max_size)
        if queue is not None and queue.topic != topic:
            raise IllegalArgumentError("the queue is of another topic", topic=topic, queue=queue)
        chooser: QueueChooser | None = None
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
        deadline_ns = time.monotonic_ns() + self.timeout(timeout_ms) * 1_000_000
        batch, unique_ids = encode_messages(
            messages, self._ids, time.time_ns() // 1_000_000, self._born_host, bodies
        )
        if len(batch) > max_size + MAX_FRAMING_BYTES:
            raise encoded_over_maximum(len(batch), max_size)
        return Attempt(
            messages, batch, unique_ids, deadline_ns, 1 if pinned else 1 + retries, queue, chooser
        )

    def compress(self, batch: bytes) -> bytes:
        """``batch`` compressed as ``ProducerConfig.compression`` says (itself when that is
        None, its bodies are under ``compress_over_bytes`` or it would not get smaller):
        ``common.record_batch.compress_batch``."""
        codec = self._codec
        if codec is None:
            return batch
        config = self.config
        return compress_batch(
            batch,
            codec,
            level=config.compression_level,
            min_body_bytes=config.compress_over_bytes,
        )

    def request(
        self, target: MessageQueue, attempt: Attempt, *, stamped: bool = True
    ) -> SendRequest:
        """The request of ``attempt`` to ``target``, which its session encodes with its envelope
        in one native call (``SendRequest``, ``common/_send_envelope.py``): an idempotent
        producer's batch with its producer state for ``target`` (``_sequences.py``), unless not
        ``stamped`` (a oneway send, never retried); with ``ProducerConfig.compression``, the
        attempt's batch is compressed first (once: a compressed one is left as it is)."""
        sequences = self.sequences
        if self._codec is not None:  # compressed once, when first sent (merged, if it was)
            attempt.batch = self.compress(attempt.batch)
        if sequences is not None and stamped:
            stamp = sequences.stamp(attempt, target)
            if stamp is not None:
                return SendRequest(
                    self.group,
                    target.topic,
                    target.queue_id,
                    attempt.batch,
                    stamp.producer_id,
                    stamp.base_sequence,
                    stamp.epoch,
                )
        return SendRequest(self.group, target.topic, target.queue_id, attempt.batch)

    def settle(self, attempt: Attempt, *, ok: bool) -> None:
        """``attempt`` is over (stored, or failed for good): its sequences are settled
        (``ProducerSequences.settle``). Caller: the sync and async sends, once per send."""
        if self.sequences is not None:
            self.sequences.settle(attempt, ok=ok)

    # -- sync sends and retries ----------------------------------------------------------

    def send_sync(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None,
        queue: MessageQueue | None,
        selector: QueueSelector | None,
        arg: object,
    ) -> Sequence[SendResult]:
        """A sync send, with its hooks and metrics. Caller: ``Producer.send``/``send_batch``."""
        started_ns = time.perf_counter_ns()
        # without hooks (the common case) neither hook call is made: two calls a send
        context = self.before_send(messages, SendMode.SYNC) if self.hooks else None
        attempt: Attempt | None = None
        try:
            attempt = self.prepare(messages, timeout_ms, queue, selector, arg, asynchronous=False)
            sent = self.attempt_sync(attempt, timeout_ms)
        except BaseException as exc:
            if attempt is not None:
                self.settle(attempt, ok=False)
            self.meter.on_failed()
            self.after_send(context, exception=exc)
            raise
        if self.sequences is not None:
            self.sequences.settle(attempt, ok=True)
        self.meter.on_sent(len(messages), time.perf_counter_ns() - started_ns)
        if context is not None:
            self.after_send(context, results=sent)
        return sent

    def attempt_sync(
        self, attempt: Attempt, timeout_ms: int | None, last_error: ClientError | None = None
    ) -> Sequence[SendResult]:
        """Each attempt in turn until one is answered, one fails for good, or time is up
        (``last_error``: the error of a try made before, by ``send_one``)."""
        while attempt.attempts_left > 0:
            attempt.attempts_left -= 1
            remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000
            if remaining_ms <= 0:
                break
            route, target = self.router.target(attempt)
            try:
                sessions = self.sessions or self.require_sessions()  # the call only to raise
                session = sessions.session(route.broker(target.broker_name))
                request = self.request(target, attempt)
                limit_ms = attempt_limit_ms(
                    self.config.request_timeout_ms,
                    remaining_ms,
                    idempotent=attempt.stamp is not None,
                )
                try:
                    response = session.request(request, limit_ms)
                except ClientError as sent_error:
                    raise_sent_error(sent_error, attempt, limit_ms, remaining_ms)
                return results_of(response, target, attempt)
            except ClientError as exc:
                if not self.tried_again(exc, route, target, attempt):
                    raise
                last_error = exc
        if last_error is not None:
            raise last_error
        raise RequestTimeoutError(
            "send timed out before an attempt", timeout_ms=self.timeout(timeout_ms)
        )

    def tried_again(
        self, exc: ClientError, route: TopicRoute, target: MessageQueue, attempt: Attempt
    ) -> bool:
        """Whether a sync ``attempt`` that failed with ``exc`` is tried again
        (:meth:`retry_delay_ms`), having slept its delay; False: the caller raises ``exc``."""
        delay_ms = self.retry_delay_ms(exc, route, target, attempt)
        if delay_ms is None:
            return False
        if delay_ms:
            time.sleep(delay_ms / 1000)
        return True

    def retry_delay_ms(
        self, exc: ClientError, route: TopicRoute, target: MessageQueue, attempt: Attempt
    ) -> int | None:
        """Whether ``attempt``, which failed with ``exc`` on ``target``, is tried again, and in
        how many ms (0: at once), or None: not again (see module).

        Caller: ``attempt_sync`` and the async sends. Affects: ``attempt.last_broker``,
        ``retry_queue`` and ``backoff``; on SERVICE_NOT_AVAILABLE / SLAVE_NOT_AVAILABLE (when
        no group's leader is followed) drops the broker's session and the topic's cached
        route; counts the retry in the metrics."""
        attempt.last_broker = target.broker_name
        if isinstance(exc, ReplicationTimeoutError):
            attempt.maybe_stored = True  # stored on the leader, not acknowledged: unknown
        if isinstance(exc, OutOfOrderSequenceError) and self.sequences is not None:
            return self._out_of_order(exc, target, attempt)
        source = self.router.source
        if source is not None and is_failover_error(exc):
            delay_ms = fail_over(
                source, exc, route, target, attempt, self.config.request_timeout_ms
            )
            if delay_ms == GIVE_UP:
                return None
            if delay_ms != ELSEWHERE:
                _log.info(
                    "send failed on its broker's member, trying again in %d ms: %s",
                    delay_ms, exc,
                )  # fmt: skip
                self.meter.on_retry()
                return delay_ms
        retriable = exc.retriable or exc.code in RETRY_CODES
        if not retriable and exc.code in RETRY_ELSEWHERE_CODES:
            retriable = len(route.brokers) > 1
        if not retriable or attempt.attempts_left <= 0:
            return None
        if exc.code in (ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SLAVE_NOT_AVAILABLE):
            self.require_sessions().drop(target.broker_name)
            if source is not None:
                source.invalidate(target.topic)
        if attempt.maybe_stored and attempt.stamp is not None:
            attempt.retry_queue = target  # idempotent: where it may be stored, never elsewhere
        _log.info("send failed, retrying: %s attempts_left=%d", exc, attempt.attempts_left)
        self.meter.on_retry()
        return 0

    def _out_of_order(
        self, exc: OutOfOrderSequenceError, target: MessageQueue, attempt: Attempt
    ) -> int | None:
        """An idempotent send refused ``OUT_OF_ORDER_SEQUENCE`` (``_sequences.py``): again
        soon while a batch stamped before it is on its way, at once stamped anew when its queue
        started over, else not (None)."""
        assert self.sequences is not None
        verdict = self.sequences.out_of_order(attempt)
        if verdict is OutOfOrder.FAIL:
            return None
        remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000
        delay_ms = 0 if verdict is OutOfOrder.RESTAMP else min(_OUT_OF_ORDER_WAIT_MS, remaining_ms)
        if remaining_ms <= delay_ms:
            return None
        attempt.retry_queue = target
        attempt.attempts_left += 1  # not counted: the same batch, in its turn
        _log.info("send out of order, trying again (%s): %s", verdict.value, exc)
        return delay_ms

    # -- hooks ---------------------------------------------------------------------------

    def before_send(self, messages: Sequence[Message], mode: SendMode) -> SendMessageContext | None:
        """Run the hooks' ``send_message_before``: the send's context, or None without hooks."""
        hooks = self.hooks
        if not hooks:
            return None  # the common case costs one attribute read
        topic = messages[0].topic if messages else ""
        context = SendMessageContext(self.group, topic, messages, mode, time.monotonic_ns())
        call_hooks(hooks, "send_message_before", context)
        return context

    def after_send(
        self,
        context: SendMessageContext | None,
        *,
        results: Sequence[SendResult] | None = None,
        exception: BaseException | None = None,
    ) -> None:
        """Run the hooks' ``send_message_after`` with the send's results or exception."""
        if context is None:
            return
        context.results, context.exception = results, exception
        context.elapsed_ns = time.monotonic_ns() - context.started_ns
        call_hooks(self.hooks, "send_message_after", context)


def raise_sent_error(
    sent_error: ClientError, attempt: Attempt, limit_ms: int, remaining_ms: int
) -> NoReturn:
    """Raise what a sync try that went out and failed with ``sent_error`` raises: itself, or
    what ``abandoned`` makes of it (from it). ``attempt`` may have been stored unless an
    answer said it was not (back pressure: it did not go out). Called in its except clause."""
    attempt.maybe_stored |= not isinstance(sent_error, BackPressuredError)
    given_up = abandoned(sent_error, limit_ms, remaining_ms)
    if given_up is sent_error:
        raise sent_error
    raise given_up from sent_error


def over_maximum(total: int, max_size: int) -> MessageTooLargeError:
    """The error of a send whose bodies together are over ``max_message_size``."""
    return MessageTooLargeError(
        "the batch is over the maximum message size", batch_length=total, max_message_size=max_size
    )


def encoded_over_maximum(length: int, max_size: int) -> MessageTooLargeError:
    """The error of a send whose record batch, encoded, is over ``max_message_size`` and the
    framing's allowance."""
    return MessageTooLargeError(
        "the batch, encoded, is over the maximum message size",
        batch_bytes=length,
        max_message_size=max_size,
        allowance=MAX_FRAMING_BYTES,
    )
