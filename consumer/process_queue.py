"""``ProcessQueue``: the messages pulled from one queue and not yet taken by ``poll``.

RocketMQ's ``ProcessQueue`` keeps a ``TreeMap`` from queue offset to message. Here only the offset
and the body length are kept (the messages themselves travel in the consume requests): pulls of
one queue arrive in offset order, so a dict in insertion order is the sorted map (first key =
lowest offset, last key = highest), with a re-sort only if an older offset ever arrives. A
pulled :class:`~consumer.message_batch.MessageBatch` goes in and out by its offset and length
columns, without a message object.

Counts and sizes feed the pull task's flow control: :attr:`ProcessQueue.msg_count`,
:attr:`ProcessQueue.msg_size` (body bytes only, as RocketMQ) and :attr:`ProcessQueue.max_span`
(highest minus lowest cached offset). :attr:`ProcessQueue.dropped` marks a queue the consumer no
longer owns (rebalanced away, unsubscribed, replaced by a seek): its pull task stops and its
cached requests are skipped.

Thread safety: the pull callback puts and ``poll`` removes from different threads; every method
takes the process queue's own lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable

from aeromq.client import MessageExt
from aeromq.consumer.message_batch import MessageBatch

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """Cached messages of one queue by offset, with counts, body sizes, span and a dropped flag."""

    __slots__ = (
        "_body_lengths",
        "_lock",
        "_msg_size",
        "_queue_offset_max",
        "dropped",
        "last_consume_timestamp_ms",
        "last_pull_timestamp_ms",
    )

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._body_lengths: dict[int, int] = {}  # cached offset -> body length
        self._msg_size = 0
        self._queue_offset_max = -1
        self.dropped = False
        self.last_pull_timestamp_ms = 0
        self.last_consume_timestamp_ms = 0

    @property
    def msg_count(self) -> int:
        return len(self._body_lengths)

    @property
    def msg_size(self) -> int:
        """Sum of the cached messages' body lengths, in bytes."""
        return self._msg_size

    @property
    def max_span(self) -> int:
        """Highest minus lowest cached offset; 0 when empty."""
        with self._lock:
            messages = self._body_lengths
            if len(messages) < 2:
                return 0
            return next(reversed(messages)) - next(iter(messages))

    @property
    def queue_offset_max(self) -> int:
        """The highest offset ever cached, or -1."""
        return self._queue_offset_max

    def first_offset(self) -> int:
        """The lowest cached offset, or -1 when empty."""
        with self._lock:
            return next(iter(self._body_lengths), -1)

    def put_messages(self, messages: Iterable[MessageExt]) -> int:
        """Cache ``messages`` (an offset already cached is skipped); the count added."""
        if isinstance(messages, MessageBatch):
            return self._put_batch(messages)
        added = 0
        size = 0
        with self._lock:
            cached = self._body_lengths
            highest = next(reversed(cached), -1)
            out_of_order = False
            for message in messages:
                offset = message.queue_offset
                if offset in cached:
                    continue
                if offset < highest:
                    out_of_order = True
                else:
                    highest = offset
                length = len(message.body)
                cached[offset] = length
                size += length
                added += 1
            if out_of_order:
                self._body_lengths = dict(sorted(cached.items()))
            self._msg_size += size
            if highest > self._queue_offset_max:
                self._queue_offset_max = highest
        self.last_pull_timestamp_ms = int(time.time() * 1000)
        return added

    def _put_batch(self, batch: MessageBatch) -> int:
        """``put_messages`` of a pulled batch: its offset and body length columns, no message
        object made."""
        offsets = batch.queue_offsets.tolist()
        lengths = batch.body_lengths.tolist()
        with self._lock:
            cached = self._body_lengths
            highest = next(reversed(cached), -1)
            if offsets and offsets[0] > highest:  # the usual case: after everything cached
                before = len(cached)
                cached.update(zip(offsets, lengths, strict=True))
                added = len(cached) - before
                size = sum(lengths)
                highest = offsets[-1]
            else:
                added = size = 0
                for offset, length in zip(offsets, lengths, strict=True):
                    if offset not in cached:
                        cached[offset] = length
                        size += length
                        added += 1
                self._body_lengths = dict(sorted(cached.items()))
                highest = max(highest, offsets[-1] if offsets else -1)
            self._msg_size += size
            if highest > self._queue_offset_max:
                self._queue_offset_max = highest
        self.last_pull_timestamp_ms = int(time.time() * 1000)
        return added

    def remove_messages(self, messages: Iterable[MessageExt]) -> int:
        """Remove ``messages``; the consume offset after it: the lowest offset still cached,
        else the highest offset ever cached + 1; -1 if nothing was cached before."""
        offsets = (
            messages.queue_offsets.tolist()
            if isinstance(messages, MessageBatch)
            else [message.queue_offset for message in messages]
        )
        with self._lock:
            cached = self._body_lengths
            if not cached:
                return -1
            size = 0
            pop = cached.pop
            for offset in offsets:
                size += pop(offset, 0)
            self._msg_size -= size
            self.last_consume_timestamp_ms = int(time.time() * 1000)
            return next(iter(cached), self._queue_offset_max + 1)

    def clear(self) -> None:
        """Forget every cached message (a seek)."""
        with self._lock:
            self._body_lengths.clear()
            self._msg_size = 0

    def __repr__(self) -> str:
        return (
            f"ProcessQueue(msg_count={self.msg_count}, msg_size={self._msg_size}, "
            f"max_span={self.max_span}, dropped={self.dropped})"
        )
