"""``LoneSends``: async sends that go as requests of their own, and their retries.

An async send goes alone when it names its queue or a selector, when coalescing is off
(``ProducerConfig.async_requests_in_flight`` 0), when its topic has no route, when a group's
merged request was refused for its content (each of its sends again, for its own answer), and a
column batch's send (``_columns.py``) always. Its answer settles its future; a failure is tried
again on the producer's retry thread (``SendPath.executor``) when ``SendPath.retry_delay_ms``
says so, at once or after the delay of a broker group electing a leader
(``SendPath.retry_later``); an idempotent producer's attempt keeps its stamped bytes.

Caller: ``AsyncSends`` (``_async_sends.py``) and ``ColumnSender`` (``_columns.py``); the
sessions' poller thread (answers) and the retry thread.
"""

from __future__ import annotations

import time
from concurrent.futures import Future

from aeromq.client import ClientError, MessageQueue, RequestTimeoutError
from aeromq.client.failover import is_failover_error
from aeromq.client.route import TopicRoute
from aeromq.common import SendAnswer
from aeromq.producer._answers import SendFuture, results_of, settle
from aeromq.producer._attempt import Attempt
from aeromq.producer._routing import QueueRouter
from aeromq.producer._send_path import SendPath
from aeromq.proto import messages_pb2

__all__ = ["LoneSends"]


class LoneSends:
    """One producer's async sends that go as requests of their own (see module); made by
    ``AsyncSends``."""

    def __init__(self, path: SendPath, router: QueueRouter) -> None:
        self._path = path
        self._router = router
        self.group = path.group

    def submit(self, attempt: Attempt, outer: SendFuture, single: bool) -> None:
        """Send one async send as a request of its own (an attempt), its answer settling
        ``outer``. Caller: :meth:`dispatch`, the retry thread."""
        attempt.attempts_left -= 1
        remaining_ms = (attempt.deadline_ns - time.monotonic_ns()) // 1_000_000
        if remaining_ms <= 0:
            if attempt.stamp is not None:
                self._path.settle(attempt, ok=False)
            settle(outer, error=RequestTimeoutError("send timed out", group=self.group))
            return
        try:
            route, target = self._router.target(attempt)
        except ClientError as exc:
            self.failed(exc, attempt, outer, single, None, None)
            return
        try:
            session = self._path.require_sessions().session(route.broker(target.broker_name))
            inner = session.request_async(self._path.request(target, attempt), remaining_ms)
            self._path.meter.on_async_request()
        except ClientError as exc:  # no session (its broker is down), or the offer failed
            self.failed(exc, attempt, outer, single, route, target)
            return
        sequences = self._path.sequences

        def done(future: Future[messages_pb2.SendMessageResponse | SendAnswer]) -> None:
            try:
                response = future.result()
            except ClientError as exc:  # it went out: it may be stored
                attempt.maybe_stored = True
                self.failed(exc, attempt, outer, single, route, target)
                return
            except Exception as exc:  # a cancelled future, a bug: fail the send, not the poller
                settle(outer, error=exc)
                return
            try:
                answer = results_of(response, target, attempt)
            except ClientError as exc:
                self.failed(exc, attempt, outer, single, route, target)
                return
            if sequences is not None:  # an idempotent producer's: the send is over
                sequences.settle(attempt, ok=True)
            settle(outer, value=answer[0] if single else answer)

        inner.add_done_callback(done)

    def failed(
        self,
        exc: ClientError,
        attempt: Attempt,
        outer: SendFuture,
        single: bool,
        route: TopicRoute | None,
        target: MessageQueue | None,
    ) -> None:
        """An attempt failed with ``exc``: try again on the retry thread when
        ``SendPath.retry_delay_ms`` says so (a route and a target known), at once or after its
        delay (a broker group electing a leader: ``SendPath.retry_later``), else fail
        ``outer``."""
        path = self._path
        if route is not None and is_failover_error(exc) and not path.on_retry_thread():
            try:  # following the leader may query a route: not on a session's poller thread
                path.executor().submit(self.failed, exc, attempt, outer, single, route, target)
                return
            except RuntimeError:  # the producer shut down meanwhile
                pass
        delay_ms = (
            None
            if route is None or target is None
            else path.retry_delay_ms(exc, route, target, attempt)
        )
        if delay_ms is None:
            if attempt.stamp is not None:
                path.settle(attempt, ok=False)
            settle(outer, error=exc)
            return
        if delay_ms:
            path.retry_later(delay_ms, lambda: self.submit(attempt, outer, single))
            return
        try:
            path.executor().submit(self.submit, attempt, outer, single)
        except RuntimeError:  # the producer shut down meanwhile
            settle(outer, error=exc)
