"""Planning without I/O: queue ranges, their split into Spark partitions (``minPartitions``),
offsets as JSON-ready dicts, and admission control (``maxOffsetsPerTrigger``).

Offsets travel through Spark as JSON (the checkpoint's offset log): ``{"topic":
{"broker:queueId": offset}}``, where ``offset`` is the next offset to read. Spark compares the
JSON text of offsets, so every dict here is built with its keys sorted (unsorted keys made
Spark see a changed offset and plan empty batches).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aeromq.client import MessageQueue
from aeromq.pipeline._errors import OptionError

__all__ = [
    "Offsets",
    "QueueRange",
    "admit",
    "offsets_from_json",
    "offsets_to_json",
    "queue_key",
    "split_ranges",
]

Offsets = dict[MessageQueue, int]
"""The next offset to read per queue."""


@dataclass(frozen=True, slots=True)
class QueueRange:
    """Offsets ``[start, end)`` of one queue: what one Spark partition reads."""

    topic: str
    broker: str
    queue_id: int
    start: int
    end: int

    @property
    def count(self) -> int:
        """How many offsets the range spans, ``end - start`` (0 or less: nothing to read)."""
        return self.end - self.start

    @property
    def queue(self) -> MessageQueue:
        """The range's queue as a :class:`~client.MessageQueue`."""
        return MessageQueue(self.topic, self.broker, self.queue_id)


def queue_key(queue: MessageQueue) -> str:
    """The key of a queue inside its topic's offsets: ``broker:queueId``."""
    return f"{queue.broker_name}:{queue.queue_id}"


def _parse_key(topic: str, key: str, value: object) -> MessageQueue:
    broker, sep, queue_id = key.rpartition(":")
    if not sep or not broker or not queue_id.isdigit():
        raise OptionError('offset keys are "broker:queueId"', topic=topic, key=key, value=value)
    return MessageQueue(topic, broker, int(queue_id))


def offsets_to_json(offsets: Mapping[MessageQueue, int]) -> dict[str, dict[str, int]]:
    """``{topic: {"broker:queueId": offset}}`` with every key sorted."""
    nested: dict[str, dict[str, int]] = {}
    for queue, offset in offsets.items():
        nested.setdefault(queue.topic, {})[queue_key(queue)] = int(offset)
    return {topic: dict(sorted(nested[topic].items())) for topic in sorted(nested)}


def offsets_from_json(value: object, *, option: str = "offset") -> Offsets:
    """The inverse of :func:`offsets_to_json`; a malformed value raises ``OptionError``."""
    if not isinstance(value, dict):
        raise OptionError("offsets must be a JSON object", option=option, value=value)
    out: Offsets = {}
    for topic, queues in value.items():
        if not isinstance(queues, dict):
            raise OptionError(
                'offsets map each topic to {"broker:queueId": offset}', option=option, topic=topic
            )
        for key, offset in queues.items():
            if type(offset) is not int:
                raise OptionError("an offset must be an integer", option=option, key=key)
            out[_parse_key(topic, key, offset)] = offset
    return out


def split_ranges(ranges: Sequence[QueueRange], min_partitions: int | None) -> list[QueueRange]:
    """One range per queue, or, when ``min_partitions`` asks for more partitions than there
    are ranges, the large ranges cut into pieces in proportion to their size (as Spark's Kafka
    source does). Empty ranges are dropped."""
    kept = [r for r in ranges if r.count > 0]
    total = sum(r.count for r in kept)
    if not min_partitions or min_partitions <= len(kept) or total == 0:
        return kept
    out: list[QueueRange] = []
    for r in kept:
        pieces = min(r.count, max(1, math.ceil(r.count * min_partitions / total)))
        step, extra = divmod(r.count, pieces)
        start = r.start
        for index in range(pieces):
            end = start + step + (1 if index < extra else 0)
            out.append(QueueRange(r.topic, r.broker, r.queue_id, start, end))
            start = end
    return out


def admit(
    start: Mapping[MessageQueue, int], latest: Mapping[MessageQueue, int], max_rows: int
) -> Offsets:
    """The end offsets of the next micro-batch: at most ``max_rows`` messages split across the
    queues in proportion to their backlog (``latest - start``), largest remainders first, and
    every queue with a backlog gets at least one, so no queue starves behind a busy one (with
    more such queues than ``max_rows``, that minimum wins over the limit)."""
    backlog = {q: max(0, latest[q] - start.get(q, latest[q])) for q in latest}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(latest)
    shares = {q: b * max_rows / total for q, b in backlog.items()}
    taken = {q: min(b, max(1 if b else 0, int(shares[q]))) for q, b in backlog.items()}
    left = max_rows - sum(taken.values())
    if left < 0:  # the minimum of one overshot: give back from the largest shares
        for q in sorted(taken, key=lambda q: (-taken[q], q.order_key())):
            give = min(-left, taken[q] - 1)
            if give > 0:
                taken[q] -= give
                left += give
            if left == 0:
                break
    by_remainder = sorted(backlog, key=lambda q: (-(shares[q] - int(shares[q])), q.order_key()))
    for q in _cycle_bounded(by_remainder, left):
        if taken[q] < backlog[q]:
            taken[q] += 1
            left -= 1
            if left == 0:
                break
    return {q: start.get(q, latest[q]) + taken[q] for q in latest}


def _cycle_bounded(queues: Iterable[MessageQueue], left: int) -> list[MessageQueue]:
    """``queues`` repeated just often enough to hand out ``left`` more (bounded)."""
    order = list(queues)
    if left <= 0 or not order:
        return []
    return order * (left // len(order) + 1)
