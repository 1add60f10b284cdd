"""Broker statistics: named counters any service can bump, and the ``GetBrokerStats`` answer
(RocketMQ's ``GET_BROKER_RUNTIME_INFO``): identity, uptime, topics, groups, consumers, commit
log offsets and every counter.

Counters are cheap and thread-safe: ``registry.counter("send.messages")`` once, then
``counter.add(n)`` on the hot path (one lock, no allocation); batch where you can (add the
batch's count once). Names are dotted lower case, ``<service>.<what>``: ``send.messages``,
``send.errors.topic_not_exist``, ``pull.found``, ``session.malformed``.

Caller: every broker service (counters), the admin facade (``broker_stats``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from aeromq.broker.processor.consumer_groups import ConsumerGroupManager
from aeromq.broker.processor.route import BrokerIdentity
from aeromq.broker.store import MessageStore
from aeromq.proto import admin_pb2

__all__ = ["Counter", "StatsProcessor", "StatsRegistry"]


class Counter:
    """One named 64-bit count; ``add`` is safe from any thread."""

    __slots__ = ("_lock", "_value", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._value = 0
        self._lock = threading.Lock()

    def add(self, delta: int = 1) -> None:
        with self._lock:
            self._value += delta

    @property
    def value(self) -> int:
        return self._value


class StatsRegistry:
    """The broker's counters by name; ``counter(name)`` returns the same object every time."""

    def __init__(self) -> None:
        self._counters: dict[str, Counter] = {}
        self._lock = threading.Lock()
        self._gauges: dict[str, Callable[[], int]] = {}

    def counter(self, name: str) -> Counter:
        found = self._counters.get(name)
        if found is not None:
            return found
        with self._lock:
            return self._counters.setdefault(name, Counter(name))

    def increment(self, name: str, delta: int = 1) -> None:
        """``counter(name).add(delta)``, for the cold paths (errors)."""
        self.counter(name).add(delta)

    def gauge(self, name: str, read: Callable[[], int]) -> None:
        """Report ``read()`` under ``name`` in every snapshot (a live value, e.g. sessions)."""
        with self._lock:
            self._gauges[name] = read

    def snapshot(self) -> dict[str, int]:
        """Every counter and gauge now, by name."""
        with self._lock:
            counters = list(self._counters.values())
            gauges = dict(self._gauges)
        values = {c.name: c.value for c in counters}
        for name, read in gauges.items():
            values[name] = int(read())
        return dict(sorted(values.items()))


class StatsProcessor:
    """Builds ``BrokerStats`` from the store, membership, identity and the registry."""

    def __init__(
        self,
        identity: BrokerIdentity,
        store: MessageStore,
        groups: ConsumerGroupManager,
        registry: StatsRegistry,
        known_groups: Callable[[], list[str]],
    ) -> None:
        self._identity = identity
        self._store = store
        self._groups = groups
        self._registry = registry
        self._known_groups = known_groups

    def broker_stats(self) -> admin_pb2.BrokerStats:
        identity = self._identity
        store = self._store
        now_ms = identity.now_ms()
        counters = self._registry.snapshot()
        counters["store.corrupt_records"] = store.corrupt_records_seen
        counters["store.index_errors"] = store.index_errors
        return admin_pb2.BrokerStats(
            broker_name=identity.broker_name,
            cluster_name=identity.cluster_name,
            start_time_ms=identity.start_time_ms,
            uptime_ms=max(0, now_ms - identity.start_time_ms),
            topic_count=len(store.topic_config.topics()),
            group_count=len(self._known_groups()),
            consumer_count=self._groups.client_count(),
            commit_log_min_offset=store.min_physical_offset,
            commit_log_max_offset=store.max_physical_offset,
            commit_log_flushed_offset=store.flushed_physical_offset,
            counters=counters,
        )
