"""``ConsumerMetrics``: what a lite pull consumer did, for ``DefaultLitePullConsumer.metrics()``.

Caller: the application, through ``metrics()`` or ``serve_metrics()`` (``aeromq_consumer_*`` in
Prometheus). Nothing new is counted for it: the pull tasks' :class:`FlowControlCounters` (once
per pull, not per message), the rebalance service's runs, and the cache's sizes read now.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aeromq.client import metric_meta
from aeromq.common import LatencySnapshot

__all__ = ["ConsumerMetrics"]


def _counter(text: str) -> dict[str, str]:
    return dict(metric_meta("counter", text))


def _gauge(text: str) -> dict[str, str]:
    return dict(metric_meta("gauge", text))


@dataclass(frozen=True, slots=True)
class ConsumerMetrics:
    """A consumer's counts since it was made, and its cache now."""

    pulls: int = field(metadata=_counter("pull requests sent to brokers"))
    messages_pulled: int = field(metadata=_counter("messages pulled into the cache"))
    messages_polled: int = field(metadata=_counter("messages poll() returned"))
    pull_errors: int = field(metadata=_counter("pulls failed (errors, busy brokers, corrupt)"))
    flow_control_events: int = field(
        metadata=_counter("pulls delayed: cache, queue count or size, or offset span over limit")
    )
    paused_delays: int = field(metadata=_counter("pulls delayed because the queue is paused"))
    rebalances: int = field(metadata=_counter("rebalance runs"))
    assigned_queues: int = field(metadata=_gauge("queues this consumer owns now"))
    cached_messages: int = field(metadata=_gauge("messages pulled and not yet polled"))
    cached_bytes: int = field(metadata=_gauge("body bytes pulled and not yet polled"))
    pull_latency: LatencySnapshot = field(
        metadata=dict(metric_meta("histogram", "from a pull's request to its answer"))
    )
