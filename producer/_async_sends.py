"""``AsyncSends``: async sends on their way, alone or coalesced into one request, and retried.

A prepared async send (an ``Attempt`` and its future) goes either at once as a request of its
own (``LoneSends.submit``, ``_lone_sends.py``: a send to a queue or through a selector, or with
coalescing off), or through the ``SendCoalescer`` (``_coalesce.py``): it goes at once while its
topic has fewer than ``async_requests_in_flight`` requests in flight per broker, otherwise it
waits and goes with the others that waited as one request of one record batch
(:meth:`AsyncSends.submit_group`) when one of those requests is answered. Each send keeps its
own future, ids, offsets and retries; a merged request the broker refuses for its content is
sent again send by send. An idempotent producer's group is one unit (:func:`unit_of`): its
merged batch is stamped once with its queue's sequences and retried whole, the same bytes, so
that a retry after an unknown outcome is answered, not stored twice. Retries, and groups whose
offer must wait while a reader thread found the broker back-pressured, run on the producer's
retry thread (``SendPath.executor``); those waiting for a broker group's election on its timer
(``SendPath.retry_later``).

Caller: the façade (``Producer.send_async``, ``send_batch_async``: :meth:`AsyncSends.observe`
and :meth:`AsyncSends.dispatch`); the sessions' poller thread (answers) and the retry thread.
"""

from __future__ import annotations

import time
from concurrent.futures import CancelledError, Future
from typing import Final, TypeVar

from aeromq.client import ClientError, MessageQueue, RequestTimeoutError
from aeromq.client.failover import is_failover_error
from aeromq.client.route import TopicRoute
from aeromq.client.session import BackPressuredError
from aeromq.common import SendAnswer, merge_batches
from aeromq.producer._answers import SendFuture, group_results, settle
from aeromq.producer._attempt import RETRY_CODES, Attempt
from aeromq.producer._coalesce import SendCoalescer
from aeromq.producer._hooks import SendMessageContext
from aeromq.producer._lone_sends import LoneSends
from aeromq.producer._routing import QueueRouter
from aeromq.producer._send_path import SendPath
from aeromq.producer._send_result import SendResult
from aeromq.proto import messages_pb2

__all__ = ["OWED_CUT_FALLBACK_MS", "AsyncSendFuture", "AsyncSends"]

OWED_CUT_FALLBACK_MS: Final = 1
"""How long a deferred cut (``_coalesce.py``) waits at most for the thread its answer woke to
block again: the sends that thread added meanwhile go then (a thread woken from a send's
future that goes on without waiting on another)."""

R = TypeVar("R")

_Waiting = tuple[Attempt, SendFuture, bool]
"""An async send that may wait to go with others: its attempt, its future, one message."""


def _batch_bytes(item: _Waiting) -> int:
    return len(item[0].batch)


def unit_of(live: list[_Waiting], batch: bytes) -> Attempt:
    """An idempotent producer's group as one attempt: the one send's own, or one of all their
    messages and their merged ``batch``, with the soonest deadline (``attempts_left`` is set
    once they are counted)."""
    if len(live) == 1:
        return live[0][0]
    attempts = [item[0] for item in live]
    return Attempt(
        [message for attempt in attempts for message in attempt.messages],
        batch,
        [unique for attempt in attempts for unique in attempt.unique_ids],
        min(attempt.deadline_ns for attempt in attempts),
        min(attempt.attempts_left for attempt in attempts),
        None,
        None,
    )


class AsyncSendFuture(Future[R]):
    """An async send's future (``Producer.send_async``, ``send_batch_async``): a
    ``concurrent.futures.Future`` whose :meth:`result` and :meth:`exception`, about to block,
    first send what the producer holds for the calling thread to add to (a deferred cut:
    ``producer/_coalesce.py``), and mark the future as waited on, so that its answer defers
    the next cut until this thread has added its next sends."""

    def __init__(self, sends: AsyncSends) -> None:
        super().__init__()
        self._sends = sends
        self.waited = False
        """A thread was about to block on this future (read by its answer's reader)."""

    def result(self, timeout: float | None = None) -> R:
        """``Future.result``, the owed groups sent first when it would block."""
        if not self.done():
            self.waited = True
            self._sends.before_wait()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        """``Future.exception``, the owed groups sent first when it would block."""
        if not self.done():
            self.waited = True
            self._sends.before_wait()
        return super().exception(timeout)


class AsyncSends:
    """The async sends of one producer (see module); made by ``Producer.__init__``."""

    def __init__(self, path: SendPath, router: QueueRouter) -> None:
        self._path = path
        self._router = router
        self.group = path.group
        self.config = path.config
        self._coalescer: SendCoalescer[_Waiting] | None = (
            SendCoalescer(self.config.max_message_size, _batch_bytes)
            if self.config.async_requests_in_flight
            else None
        )
        self._fallback_pending = False
        self.lone = LoneSends(path, router)
        """Async sends that go as requests of their own (``_lone_sends.py``)."""

    def observe(self, outer: SendFuture, messages: int, context: SendMessageContext | None) -> None:
        """Count the async send of ``outer`` in the metrics, and end its hooks' context, when
        it settles. Caller: ``Producer.send_async``/``send_batch_async``."""
        started_ns = time.perf_counter_ns()
        path = self._path

        def settled(future: SendFuture) -> None:
            if future.cancelled():
                path.meter.on_failed()
                path.after_send(context, exception=CancelledError())
            elif (error := future.exception()) is not None:
                path.meter.on_failed()
                path.after_send(context, exception=error)
            else:
                path.meter.on_sent(messages, time.perf_counter_ns() - started_ns)
                if context is not None:  # hooks: they see the results
                    result = future.result()
                    one = isinstance(result, SendResult)
                    path.after_send(context, results=[result] if one else result)

        outer.add_done_callback(settled)

    def dispatch(self, attempt: Attempt, outer: SendFuture, single: bool) -> None:
        """Send an async send now, alone, or leave it to wait and go with others (a send to
        no queue in particular while its topic has its requests in flight: see
        ``producer/_coalesce.py``). Caller: ``Producer.send_async``/``send_batch_async``."""
        coalescer = self._coalescer
        if coalescer is None or attempt.queue is not None or attempt.selector is not None:
            self.lone.submit(attempt, outer, single)
            return
        topic = attempt.messages[0].topic
        try:
            brokers = len(self._router.route(topic).brokers)
        except ClientError:  # no route: the send fails as any other
            self.lone.submit(attempt, outer, single)
            return
        item = (attempt, outer, single)
        if coalescer.admit(topic, item, self.config.async_requests_in_flight * brokers):
            self.submit_group(topic, [item], wait_offer=True)

    def submit_group(self, topic: str, group: list[_Waiting], wait_offer: bool) -> None:
        """Send ``group`` (async sends of ``topic``, counted in flight) as one request: one
        record batch of theirs all, to the queue least sent to. ``wait_offer`` False (a thread
        that reads answers): a back-pressured ingress hands the send to the producer's thread,
        which waits. An idempotent producer's group is one unit (:func:`unit_of`): one
        stamped batch, retried whole.

        Caller: :meth:`dispatch`, :meth:`group_over`, the retry thread. Affects: each send's
        ``attempts_left``; settles the sends out of time."""
        now_ns = time.monotonic_ns()
        live: list[_Waiting] = []
        for item in group:
            if item[0].deadline_ns - now_ns < 1_000_000:
                item[0].attempts_left -= 1
                settle(item[1], error=RequestTimeoutError("send timed out", group=self.group))
            else:
                live.append(item)
        if not live:
            self.group_over(topic, wait_offer)
            return
        batch = live[0][0].batch if len(live) == 1 else merge_batches([i[0].batch for i in live])
        if batch is None:  # not one batch (cannot be, from one producer): each alone
            for attempt, outer, single in live[1:]:
                self.lone.submit(attempt, outer, single)
            live = live[:1]
            batch = live[0][0].batch
        path = self._path
        unit = None if path.sequences is None else unit_of(live, batch)
        remaining_ms = (min(item[0].deadline_ns for item in live) - now_ns) // 1_000_000
        chosen: tuple[TopicRoute, MessageQueue] | tuple[None, None] = (None, None)
        try:
            count = sum(len(i[0].unique_ids) for i in live)
            route, target = chosen = self._router.group_target(topic, count)
            session = path.require_sessions().session(route.broker(target.broker_name))
            request = (
                messages_pb2.SendMessageRequest(
                    producer_group=self.group,
                    topic=topic,
                    queue_id=target.queue_id,
                    batch=path.compress(batch),  # once merged (ProducerConfig.compression)
                )
                if unit is None
                else path.request(target, unit)
            )
            inner = session.request_async(request, remaining_ms, wait_offer=wait_offer)
            path.meter.on_async_request()
        except BackPressuredError as exc:
            if unit is not None:
                path.settle(unit, ok=False)  # not sent: its sequences back
            if wait_offer:
                self.group_failed(exc, live, None, None, wait_offer)
                return
            try:
                path.executor().submit(self.submit_group, topic, live, True)
            except RuntimeError:  # the producer shut down meanwhile
                self.group_failed(exc, live, None, None, wait_offer)
            return
        except ClientError as exc:  # no route, no session (its broker is down), no offer
            if unit is not None:
                path.settle(unit, ok=False)
            self.group_failed(exc, live, chosen[0], chosen[1], wait_offer)
            return
        for item in live:
            item[0].attempts_left -= 1
        if unit is not None and unit is not live[0][0]:
            unit.attempts_left = min(item[0].attempts_left for item in live)

        def done(future: Future[messages_pb2.SendMessageResponse | SendAnswer]) -> None:
            self.group_answered(future, topic, live, route, target, unit, sent_ns=now_ns)

        inner.add_done_callback(done)

    def group_answered(
        self,
        future: Future[messages_pb2.SendMessageResponse | SendAnswer],
        topic: str,
        live: list[_Waiting],
        route: TopicRoute,
        target: MessageQueue,
        unit: Attempt | None,
        *,
        first: bool = True,
        sent_ns: int = 0,
    ) -> None:
        """A group's request answered: settle (or retry) each send, then (its ``first``
        answer) send what waits, or, when a settled future woke a thread blocked on it, leave
        the cut to that thread's next wait (``_coalesce.py``); an idempotent producer's
        ``unit`` is retried whole.

        Caller: the sessions' poller thread. Affects: a refused group's sends go again alone."""
        if not first:
            self._group_settle(future, live, route, target, unit)
            return
        assert self._coalescer is not None
        waits = self._coalescer.waits  # before the settling wakes anyone
        try:
            self._group_settle(future, live, route, target, unit)
        finally:
            woken = any(getattr(item[1], "waited", False) for item in live)
            now_ns = time.monotonic_ns()
            group = self._coalescer.answered(
                topic, waits if woken else None, now_ns - sent_ns, now_ns
            )
            self._next(topic, group, wait_offer=False)

    def _group_settle(
        self,
        future: Future[messages_pb2.SendMessageResponse | SendAnswer],
        live: list[_Waiting],
        route: TopicRoute,
        target: MessageQueue,
        unit: Attempt | None,
    ) -> None:
        topic = live[0][0].messages[0].topic
        answered = False
        try:
            response = future.result()
            answered = True
            answers = group_results(response, target, [item[0] for item in live])
        except ClientError as exc:
            if len(live) > 1 and exc.code not in RETRY_CODES and not exc.retriable:
                if unit is not None:
                    self._path.settle(unit, ok=False)  # refused: nothing stored
                # a refusal of the content: each send alone, for its own answer (not an attempt)
                for attempt, outer, single in live:
                    attempt.attempts_left += 1
                    try:
                        self._path.executor().submit(self.lone.submit, attempt, outer, single)
                    except RuntimeError:
                        settle(outer, error=exc)
                return
            if unit is not None:
                unit.maybe_stored |= not answered
                self.unit_failed(exc, topic, unit, live, route, target)
                return
            for attempt, outer, single in live:
                self.lone.failed(exc, attempt, outer, single, route, target)
            return
        except Exception as exc:  # a cancelled future, a bug: fail the sends, not the poller
            if unit is not None:
                self._path.settle(unit, ok=False)
            for item in live:
                settle(item[1], error=exc)
            return
        if unit is not None:
            self._path.settle(unit, ok=True)
        for (_attempt, outer, single), result in zip(live, answers, strict=True):
            settle(outer, value=result[0] if single else result)

    def unit_failed(
        self,
        exc: ClientError,
        topic: str,
        unit: Attempt,
        live: list[_Waiting],
        route: TopicRoute,
        target: MessageQueue,
    ) -> None:
        """An idempotent group's request (``unit``) failed: the whole group again, its same
        bytes, when ``SendPath.retry_delay_ms`` says so, else every send of it fails."""
        path = self._path
        if is_failover_error(exc) and not path.on_retry_thread():
            try:  # following the leader may query a route: not on a session's poller thread
                path.executor().submit(self.unit_failed, exc, topic, unit, live, route, target)
                return
            except RuntimeError:  # the producer shut down meanwhile
                pass
        delay_ms = path.retry_delay_ms(exc, route, target, unit)
        if delay_ms is None:
            self._fail_unit(exc, unit, live)
            return

        def retry() -> None:
            self.submit_unit(topic, unit, live)

        if delay_ms:
            path.retry_later(delay_ms, retry)
            return
        try:
            path.executor().submit(retry)
        except RuntimeError:  # the producer shut down meanwhile
            self._fail_unit(exc, unit, live)

    def submit_unit(self, topic: str, unit: Attempt, live: list[_Waiting]) -> None:
        """Send an idempotent group's ``unit`` again (its stamped batch, to its queue unless it
        certainly was not stored). Caller: the retry thread or timer."""
        unit.attempts_left -= 1
        remaining_ms = (unit.deadline_ns - time.monotonic_ns()) // 1_000_000
        if remaining_ms <= 0:
            self._fail_unit(RequestTimeoutError("send timed out", group=self.group), unit, live)
            return
        try:
            route, target = self._router.target(unit)
        except ClientError as exc:
            self._fail_unit(exc, unit, live)
            return
        path = self._path
        try:
            session = path.require_sessions().session(route.broker(target.broker_name))
            inner = session.request_async(path.request(target, unit), remaining_ms)
            path.meter.on_async_request()
        except ClientError as exc:  # no session (its broker is down), or the offer failed
            self.unit_failed(exc, topic, unit, live, route, target)
            return

        def done(future: Future[messages_pb2.SendMessageResponse | SendAnswer]) -> None:
            self.group_answered(future, topic, live, route, target, unit, first=False)

        inner.add_done_callback(done)

    def _fail_unit(self, exc: BaseException, unit: Attempt, live: list[_Waiting]) -> None:
        self._path.settle(unit, ok=False)
        for item in live:
            settle(item[1], error=exc)

    def group_failed(
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
            self.lone.failed(exc, attempt, outer, single, route, target)
        self.group_over(live[0][0].messages[0].topic, wait_offer)

    def group_over(self, topic: str, wait_offer: bool) -> None:
        """A request of ``topic``'s sends is over: send what waits, if any."""
        coalescer = self._coalescer
        assert coalescer is not None
        self._next(topic, coalescer.answered(topic), wait_offer)

    def _next(self, topic: str, group: list[_Waiting], wait_offer: bool) -> None:
        """Send ``group``, the sends cut for the place of a request that ended, or, none cut
        while a place is owed (a deferred cut), make sure the fallback will cut it in
        ``OWED_CUT_FALLBACK_MS`` if no thread waits meanwhile."""
        if group:
            self.submit_group(topic, group, wait_offer)
            return
        assert self._coalescer is not None
        if self._coalescer.owed and not self._fallback_pending:
            self._fallback_pending = True
            self._path.retry_later(OWED_CUT_FALLBACK_MS, self._cut_owed_late)

    def before_wait(self) -> None:
        """A thread is about to block on an async send's future: send the groups owed (its
        sends since its last wake-up). Caller: ``AsyncSendFuture``."""
        coalescer = self._coalescer
        if coalescer is not None:
            for topic, group in coalescer.on_wait(time.monotonic_ns() if coalescer.owed else 0):
                self.submit_group(topic, group, wait_offer=True)

    def _cut_owed_late(self) -> None:
        """The fallback of a deferred cut: send the groups still owed. Caller: the retry
        timer."""
        self._fallback_pending = False  # before the cut: a later deferral schedules anew
        assert self._coalescer is not None
        for topic, group in self._coalescer.on_wait(time.monotonic_ns()):
            self.submit_group(topic, group, wait_offer=False)
