"""What the driver asks the brokers, over the admin gRPC calls: a topic's queues (its route),
each queue's min and max offsets, the offset of a timestamp, topics matching a pattern, and the
group offsets a streaming query commits. Control path: errors raise (the clients' own
``ClientError``\\s pass through).

``BrokerMetadata(endpoints)`` is opened where it is used (driver, planner worker) and closed
after; it never travels to an executor.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Self

from aeromq.client import GrpcClient, MessageQueue, NotSupportedError, RouteResolver

__all__ = ["BrokerMetadata"]

_TIMEOUT_S = 30.0


class BrokerMetadata:
    """The admin calls of one planning step; ``endpoints`` are brokers or name servers."""

    def __init__(self, endpoints: Sequence[str]) -> None:
        self.endpoints = tuple(endpoints)
        self._routes = RouteResolver(self.endpoints, ttl_ms=0, timeout_s=_TIMEOUT_S)

    def close(self) -> None:
        self._routes.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def queues(self, topic: str) -> list[MessageQueue]:
        """The topic's readable queues now (a fresh route: new queues show up)."""
        return sorted(self._routes.route(topic, refresh=True).read_queues())

    def topics_matching(self, pattern: str) -> list[str]:
        """Every topic whose whole name matches ``pattern`` (name servers first, then brokers)."""
        regex = re.compile(pattern)
        names: set[str] = set()
        for address in self.endpoints:
            client = self._routes.client(address)
            try:
                topics = client.list_topics(namesrv=True, timeout_s=_TIMEOUT_S)
            except NotSupportedError:
                topics = client.list_topics(timeout_s=_TIMEOUT_S)
            names.update(t.topic_name for t in topics)
        return sorted(n for n in names if regex.fullmatch(n))

    def _broker(self, queue: MessageQueue) -> GrpcClient:
        return self._routes.broker_client(queue.topic, queue.broker_name)

    def min_offset(self, queue: MessageQueue) -> int:
        return self._broker(queue).min_offset(queue.topic, queue.queue_id)

    def max_offset(self, queue: MessageQueue) -> int:
        """The offset the next message of ``queue`` will get."""
        return self._broker(queue).max_offset(queue.topic, queue.queue_id)

    def offset_for_time(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms`` (the max offset if none)."""
        return self._broker(queue).search_offset(queue.topic, queue.queue_id, timestamp_ms)

    def min_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        return {q: self.min_offset(q) for q in queues}

    def max_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        return {q: self.max_offset(q) for q in queues}

    def commit_group(self, group: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Set ``group``'s committed offsets (what ``aeromq admin`` measures its lag from)."""
        for queue, offset in offsets.items():
            self._broker(queue).commit_offset(group, queue.topic, queue.queue_id, offset)

    def committed(self, group: str, queue: MessageQueue) -> int:
        """``group``'s committed offset of ``queue``; -1 when none."""
        return self._broker(queue).query_offset(group, queue.topic, queue.queue_id)
