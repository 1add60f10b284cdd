"""What the driver asks the brokers, over the admin gRPC calls: a topic's queues (its route),
each queue's min and max offsets, the offset of a timestamp, topics matching a pattern, and the
group offsets a streaming query commits. Control path: errors raise (the clients' own
``ClientError``\\s pass through). A broker group's calls follow its leader (the route is looked up
again, ``RouteResolver.call_leader``) within the calls' timeout; topics are listed by every
endpoint that answers.

``BrokerMetadata(endpoints)`` is opened where it is used (driver, planner worker) and closed
after; it never travels to an executor.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Self, TypeVar

from aeromq.client import (
    BrokerUnavailableError,
    GrpcClient,
    MessageQueue,
    NotSupportedError,
    RouteResolver,
)

__all__ = ["BrokerMetadata"]

_TIMEOUT_S = 30.0
_T = TypeVar("_T")


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
        unreachable: BrokerUnavailableError | None = None
        for address in self.endpoints:
            client = self._routes.client(address)
            try:
                try:
                    topics = client.list_topics(namesrv=True, timeout_s=_TIMEOUT_S)
                except NotSupportedError:
                    topics = client.list_topics(timeout_s=_TIMEOUT_S)
            except BrokerUnavailableError as exc:  # a member of a group that is down
                unreachable = exc
                continue
            names.update(t.topic_name for t in topics)
        if unreachable is not None and not names:
            raise unreachable
        return sorted(n for n in names if regex.fullmatch(n))

    def _call(self, queue: MessageQueue, call: Callable[[GrpcClient], _T]) -> _T:
        return self._routes.call_leader(queue.topic, queue.broker_name, call)

    def min_offset(self, queue: MessageQueue) -> int:
        return self._call(queue, lambda client: client.min_offset(queue.topic, queue.queue_id))

    def max_offset(self, queue: MessageQueue) -> int:
        """The offset the next message of ``queue`` will get."""
        return self._call(queue, lambda client: client.max_offset(queue.topic, queue.queue_id))

    def offset_for_time(self, queue: MessageQueue, timestamp_ms: int) -> int:
        """The first offset stored at or after ``timestamp_ms`` (the max offset if none)."""
        return self._call(
            queue, lambda client: client.search_offset(queue.topic, queue.queue_id, timestamp_ms)
        )

    def min_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        return {q: self.min_offset(q) for q in queues}

    def max_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        return {q: self.max_offset(q) for q in queues}

    def commit_group(self, group: str, offsets: Mapping[MessageQueue, int]) -> None:
        """Set ``group``'s committed offsets (what ``aeromq admin`` measures its lag from)."""
        for queue, offset in offsets.items():
            self._commit(group, queue, offset)

    def _commit(self, group: str, queue: MessageQueue, offset: int) -> None:
        self._call(
            queue, lambda client: client.commit_offset(group, queue.topic, queue.queue_id, offset)
        )

    def committed(self, group: str, queue: MessageQueue) -> int:
        """``group``'s committed offset of ``queue``; -1 when none."""
        return self._call(
            queue, lambda client: client.query_offset(group, queue.topic, queue.queue_id)
        )
