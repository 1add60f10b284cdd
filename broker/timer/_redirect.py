"""The store's timer hook: a batch whose records carry a delivery time, rewritten into the timer
topic before it is appended.

The producer marks such a batch with :data:`~common.record_batch.TIMER_FLAG` (and the store's
own encoder marks the messages it is given, a consumer's send-back among them); the put path
tests that one bit and hands a marked batch here (``PutPath.timer_redirect``); a compressed one
is inflated first, and held plain. Each record keeps
its body, tag, flag, born time and properties, and gains when it is due (``TIMER_DELIVER_MS``,
absolute: a ``DELAY`` level or ``TIMER_DELAY_SEC`` is resolved against the store time now, as
RocketMQ resolves it on its put) and where it is going (``REAL_TOPIC``, ``REAL_QID``), as the
last properties of its string (``_records``); the batch is
encoded anew for :data:`~broker.timer.TIMER_TOPIC` queue 0 without the flag, and the put path
appends that instead. The commit log then holds the message under the system topic, which no
consumer reads, and a broker group replicates it as any batch; the timer service
(``_service``) puts it back to its real queue when it is due.

An idempotent producer's state is not carried over: the timer topic is not the queue its
sequence counts (a retry of a delayed send may be stored twice).

Caller: the store's put path, under no lock, on the putting thread (a producer's send, the
RocketMQ 5 endpoint, a send-back). Cost: only marked batches come here.
"""

from __future__ import annotations

import time
from typing import Final

from aeromq.broker.timer._delays import TIMER_QUEUE_ID, TIMER_TOPIC, due_time
from aeromq.broker.timer._records import hold_properties, queue_tail
from aeromq.common import stored_properties
from aeromq.common.record_batch import (
    PRODUCER_STATE_FLAG,
    TIMER_FLAG,
    RecordBatch,
)

__all__ = ["TimerRedirector", "timer_problem"]

_TOPIC_BYTES: Final = TIMER_TOPIC.encode()
_DROPPED_ATTRIBUTES: Final = TIMER_FLAG | PRODUCER_STATE_FLAG


class TimerRedirector:
    """Rewrites timer batches into the timer topic (see module), refusing a delivery time more
    than ``max_delay_ms`` ahead. Counts what it did: ``batches`` and ``messages``."""

    def __init__(self, max_delay_ms: int) -> None:
        self.max_delay_ms = max_delay_ms
        self.batches = 0
        self.messages = 0

    def __call__(
        self, batch: memoryview, topic: str, queue_id: int, now_ms: int
    ) -> tuple[bytearray, str, int] | str:
        """The batch to append instead, with its topic and queue id; or a text saying why
        the batch is refused (a bad or too distant delivery time)."""
        view = RecordBatch(batch)
        bodies, tags, properties = view.record_parts()  # a compressed batch's: inflated
        tail = queue_tail(topic, queue_id)
        held: list[bytes] = []
        for record_properties in properties:
            hold = hold_properties(record_properties, tail, now_ms, self.max_delay_ms)
            if isinstance(hold, str):
                return f"{hold} topic={topic!r}"
            held.append(hold[0])
        try:
            rewritten = view.reencoded(
                _TOPIC_BYTES, bodies, tags, held, drop_attributes=_DROPPED_ATTRIBUTES
            )
        except (ValueError, OverflowError) as exc:  # properties too long with the timer's
            return f"cannot hold the batch in the timer topic: {exc} topic={topic!r}"
        self.batches += 1
        self.messages += view.count
        return rewritten, TIMER_TOPIC, TIMER_QUEUE_ID

    def problem(self, batch: bytes | memoryview, topic: str, now_ms: int) -> str | None:
        """Why the checked ``batch`` would be refused (a bad or too distant delivery time),
        None when it would not: for a send's answer to say."""
        view = RecordBatch(batch)
        for index in range(view.count):
            due = due_time(stored_properties(view, index), now_ms, self.max_delay_ms)
            if due.problem is not None:
                return f"{due.problem} topic={topic!r}"
        return None


def timer_problem(redirect: object, batch: bytes, topic: str) -> str | None:
    """:meth:`TimerRedirector.problem` of a store's ``timer_redirect`` (None when the timer is
    off): the send processor's check of a batch with ``TIMER_FLAG``, before it is appended."""
    if not isinstance(redirect, TimerRedirector):
        return None
    return redirect.problem(batch, topic, time.time_ns() // 1_000_000)
