"""``BrokerCollector``: the broker's Prometheus metrics, read when scraped.

Caller: ``prometheus_client``'s registry, on the HTTP server's thread, once per scrape.
Affects: nothing (reads only). Everything is read at scrape time from what the broker keeps
anyway: the topic meter's per-batch totals, the consume queues' offsets, the committed offsets,
the store's files, the session counters and the media driver's cnc.dat. A scrape costs work
in proportion to topics x queues x groups; a message costs nothing extra.

Names follow Prometheus conventions: the ``aeromq_`` prefix, ``_total`` on counters, units as
suffixes (``_seconds``, ``_bytes``); ``docs/guides/observability.md`` lists every one.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from aeromq.broker._errors import BrokerError
from aeromq.broker.observability._transport_metrics import transport_metrics
from aeromq.common import LatencySnapshot

if TYPE_CHECKING:
    from aeromq.broker.broker import Broker

__all__ = ["BrokerCollector", "store_files"]

_log = logging.getLogger(__name__)

_QUEUE: Final = ("topic", "queue_id")
_GROUP_QUEUE: Final = ("group", "topic", "queue_id")
_STORE_PARTS: Final = ("commitlog", "consumequeue", "index")


def _histogram(family: HistogramMetricFamily, labels: list[str], snap: LatencySnapshot) -> None:
    family.add_metric(labels, snap.cumulative(), snap.sum_s)


def store_files(data_dir: Path) -> dict[str, tuple[int, int]]:
    """``part -> (files, bytes on disk)`` of the store's commit log, consume queues and index
    (bytes really allocated: the mapped files are sparse until written)."""
    found: dict[str, tuple[int, int]] = {}
    for part in _STORE_PARTS:
        files = used = 0
        for root, _, names in os.walk(data_dir / part):
            for name in names:
                try:
                    stat = os.stat(os.path.join(root, name))
                except OSError:
                    continue  # removed by retention meanwhile
                files += 1
                used += stat.st_blocks * 512
        found[part] = (files, used)
    return found


class BrokerCollector(Collector):
    """The metric families of ``broker`` (see module)."""

    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def collect(self) -> Iterable[Metric]:
        broker = self._broker
        if not broker.running:
            return
        yield from self._topics()
        yield from self._queues_and_groups()
        yield from self._store()
        yield from self._sessions()
        aeron = broker.aeron
        if aeron is not None:
            try:
                yield from transport_metrics(aeron.counters_reader)
            except Exception:  # a driver gone mid-scrape: the rest of the scrape still stands
                _log.exception("reading the transport counters failed")

    def _topics(self) -> Iterator[Metric]:
        send, pull = self._broker.send_processor, self._broker.pull_processor
        assert send is not None and pull is not None
        messages_in = CounterMetricFamily(
            "aeromq_topic_messages_in", "messages stored, by topic", labels=["topic"]
        )
        bytes_in = CounterMetricFamily(
            "aeromq_topic_bytes_in", "bytes of record batches stored, by topic", labels=["topic"]
        )
        messages_out = CounterMetricFamily(
            "aeromq_topic_messages_out", "messages served by pulls, by topic", labels=["topic"]
        )
        bytes_out = CounterMetricFamily(
            "aeromq_topic_bytes_out", "bytes of record batches served by pulls", labels=["topic"]
        )
        produce = HistogramMetricFamily(
            "aeromq_topic_produce_latency_seconds",
            "from a send's arrival to its answer (stored; under SYNC flush, durable)",
            labels=["topic"],
        )
        pulled = HistogramMetricFamily(
            "aeromq_topic_pull_latency_seconds",
            "from a pull's arrival to its answer (a long poll's wait included)",
            labels=["topic"],
        )
        store = self._broker.store
        assert store is not None
        for traffic in self._broker.meter.snapshot():  # the processors' one meter
            if store.topic_config.get(traffic.topic) is None:
                continue  # deleted: its series end
            labels = [traffic.topic]
            if traffic.produce_latency.count:
                messages_in.add_metric(labels, traffic.messages_in)
                bytes_in.add_metric(labels, traffic.bytes_in)
                _histogram(produce, labels, traffic.produce_latency)
            if traffic.pull_latency.count:
                messages_out.add_metric(labels, traffic.messages_out)
                bytes_out.add_metric(labels, traffic.bytes_out)
                _histogram(pulled, labels, traffic.pull_latency)
        yield from (messages_in, bytes_in, messages_out, bytes_out, produce, pulled)
        requests = CounterMetricFamily(
            "aeromq_requests", "data-plane requests received, by kind", labels=["kind"]
        )
        requests.add_metric(["send"], send.requests)
        requests.add_metric(["pull"], pull.pulls)
        yield requests
        errors = CounterMetricFamily(
            "aeromq_request_errors",
            "data-plane requests refused, by kind and response code",
            labels=["kind", "code"],
        )
        for kind, counts in (("send", send.errors), ("pull", pull.errors)):
            for code, count in sorted(counts.items()):
                errors.add_metric([kind, str(code)], count)
        yield errors
        yield CounterMetricFamily(
            "aeromq_pulls_held",
            "pulls held by long polling until a message or their timeout",
            value=pull.held,
        )
        yield CounterMetricFamily(
            "aeromq_pulls_local",
            "pulls answered with where their batches are in the commit log (local reads)",
            value=pull.local_answers,
        )

    def _queues_and_groups(self) -> Iterator[Metric]:
        broker = self._broker
        store, control = broker.store, broker.control_plane
        assert store is not None and control is not None
        max_offsets = GaugeMetricFamily(
            "aeromq_queue_max_offset", "the offset the queue's next message gets", labels=_QUEUE
        )
        min_offsets = GaugeMetricFamily(
            "aeromq_queue_min_offset", "the queue's first offset still stored", labels=_QUEUE
        )
        for topic, queue_id in sorted(store.queue_ids()):
            labels = [topic, str(queue_id)]
            max_offsets.add_metric(labels, store.get_max_offset(topic, queue_id))
            min_offsets.add_metric(labels, store.get_min_offset(topic, queue_id))
        yield from (max_offsets, min_offsets)
        yield GaugeMetricFamily(
            "aeromq_topics", "topics this broker holds", value=len(store.topic_config.topics())
        )
        committed = GaugeMetricFamily(
            "aeromq_group_committed_offset",
            "the group's next offset to consume (-1: never committed)",
            labels=_GROUP_QUEUE,
        )
        group_max = GaugeMetricFamily(
            "aeromq_group_max_offset",
            "the queue's max offset, beside the group's",
            labels=_GROUP_QUEUE,
        )
        lag = GaugeMetricFamily(
            "aeromq_group_lag_messages",
            "messages stored and not yet consumed by the group",
            labels=_GROUP_QUEUE,
        )
        last_commit = GaugeMetricFamily(
            "aeromq_group_last_commit_timestamp_seconds",
            "wall-clock time of the group's last commit on the queue since the broker started",
            labels=_GROUP_QUEUE,
        )
        members = GaugeMetricFamily(
            "aeromq_group_members", "online consumers of the group", labels=["group"]
        )
        offsets = store.consumer_offsets
        for group in control.offsets.known_groups():
            try:
                progress = control.offsets.consumer_progress(group)
            except BrokerError:
                continue  # gone between the two calls
            members.add_metric([group], progress.online_consumers)
            for queue in progress.queues:
                labels = [group, queue.topic, str(queue.queue_id)]
                committed.add_metric(labels, queue.consumer_offset)
                group_max.add_metric(labels, queue.broker_offset)
                lag.add_metric(labels, queue.lag)
                stamp_ms = offsets.last_commit_ms(group, queue.topic, queue.queue_id)
                if stamp_ms >= 0:
                    last_commit.add_metric(labels, stamp_ms / 1000.0)
        yield from (committed, group_max, lag, last_commit, members)

    def _store(self) -> Iterator[Metric]:
        broker = self._broker
        store = broker.store
        assert store is not None
        data_dir = Path(broker.config.data_dir)
        files = GaugeMetricFamily(
            "aeromq_store_files", "segment files of the store, by part", labels=["part"]
        )
        used = GaugeMetricFamily(
            "aeromq_store_size_bytes", "bytes on disk of the store, by part", labels=["part"]
        )
        for part, (count, size) in store_files(data_dir).items():
            files.add_metric([part], count)
            used.add_metric([part], size)
        yield from (files, used)
        try:
            free = shutil.disk_usage(data_dir).free
        except OSError:
            free = 0
        yield GaugeMetricFamily(
            "aeromq_store_free_bytes", "free space of the data directory's file system", free
        )
        yield GaugeMetricFamily(
            "aeromq_store_commit_log_max_offset_bytes",
            "where the commit log's next batch goes",
            value=store.max_physical_offset,
        )
        yield GaugeMetricFamily(
            "aeromq_store_commit_log_flushed_offset_bytes",
            "how far the commit log is durable",
            value=store.flushed_physical_offset,
        )
        flush = HistogramMetricFamily(
            "aeromq_store_flush_latency_seconds", "commit log flushes that wrote data"
        )
        _histogram(flush, [], store.commit_log.flush_latency.snapshot())
        yield flush
        report = broker.recovery_report
        yield GaugeMetricFamily(
            "aeromq_store_recovery_seconds",
            "how long recovery took at this start",
            value=0.0 if report is None else report.duration_ms / 1000.0,
        )
        yield CounterMetricFamily(
            "aeromq_store_corrupt_records",
            "records a read skipped because they failed their check",
            value=store.corrupt_records_seen,
        )

    def _sessions(self) -> Iterator[Metric]:
        broker = self._broker
        agent, control = broker.session_agent, broker.control_plane
        assert agent is not None and control is not None
        yield GaugeMetricFamily(
            "aeromq_sessions", "transport sessions open now", value=agent.table.live_count
        )
        yield GaugeMetricFamily(
            "aeromq_clients",
            "clients with a live heartbeat (consumers of groups)",
            value=control.groups.client_count(),
        )
        events = CounterMetricFamily(
            "aeromq_session_events",
            "what the session server saw: opened, closed, timed_out, requests, responses, ...",
            labels=["event"],
        )
        for name, value in sorted(agent.counters.snapshot().items()):
            if not name.startswith("error_"):
                events.add_metric([name], value)
        yield events
