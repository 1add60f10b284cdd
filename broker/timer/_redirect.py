"""The store's timer hook: a batch whose records carry a delivery time, rewritten into the timer
topic before it is appended.

The producer marks such a batch with :data:`~common.record_batch.TIMER_FLAG` (and the store's
own encoder marks the messages it is given, a consumer's send-back among them); the put path
tests that one bit and hands a marked batch here (``PutPath.timer_redirect``). Each record keeps
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
from aeromq.broker.timer._records import batch_records, hold_properties, queue_tail
from aeromq.common import stored_properties
from aeromq.common.record_batch import (
    PRODUCER_STATE_FLAG,
    TIMER_FLAG,
    RecordBatch,
    encode_batch,
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
        data, body_ends, tag_ends, property_ends, start = batch_records(view)
        tail = queue_tail(topic, queue_id)
        count = view.count
        bodies: list[bytes] = []
        tags: list[str | None] = []
        held: list[bytes] = []
        body_start, tag_start, property_start = start, body_ends[-1], tag_ends[-1]
        for index in range(count):
            body_end, tag_end, property_end = (
                body_ends[index],
                tag_ends[index],
                property_ends[index],
            )
            properties = hold_properties(
                data[property_start:property_end], tail, now_ms, self.max_delay_ms
            )
            if isinstance(properties, str):
                return f"{properties} topic={topic!r}"
            bodies.append(data[body_start:body_end])
            tags.append(data[tag_start:tag_end].decode() if tag_end > tag_start else None)
            held.append(properties[0])
            body_start, tag_start, property_start = body_end, tag_end, property_end
        try:
            rewritten = encode_batch(
                _TOPIC_BYTES,
                bodies,
                tags,
                held,
                flags=view.flags.tolist(),
                born_timestamp_ms=view.base_born_timestamp_ms,
                born_deltas_ms=view.born_deltas_ms.tolist(),
                born_host=bytes(view.born_host),
                reconsume_times=view.reconsume_times,
                attributes=view.attributes & ~_DROPPED_ATTRIBUTES,
            )
        except (ValueError, OverflowError) as exc:  # properties too long with the timer's
            return f"cannot hold the batch in the timer topic: {exc} topic={topic!r}"
        self.batches += 1
        self.messages += count
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
