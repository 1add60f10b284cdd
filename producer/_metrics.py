"""``ProducerMetrics``: what a producer did since it was made, for ``Producer.metrics()``.

Caller: the producer's send paths (``ProducerMeter``: once per send call, not per message, and
once per retry); the application reads ``Producer.metrics()`` or serves it with
``Producer.serve_metrics()`` (``aeromq_producer_*`` in Prometheus).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from aeromq.client import metric_meta
from aeromq.common import LatencyHistogram, LatencySnapshot

__all__ = ["ProducerMeter", "ProducerMetrics"]


@dataclass(frozen=True, slots=True)
class ProducerMetrics:
    """A producer's counts since it was made (a batch send counts as one send)."""

    sends: int = field(metadata=metric_meta("counter", "sends answered OK (a batch is one)"))
    messages: int = field(metadata=metric_meta("counter", "messages in the sends answered OK"))
    retries: int = field(metadata=metric_meta("counter", "attempts made again after a failure"))
    errors: int = field(metadata=metric_meta("counter", "sends failed after their last attempt"))
    oneway_sends: int = field(metadata=metric_meta("counter", "oneway sends offered"))
    async_requests: int = field(
        metadata=metric_meta(
            "counter", "requests made for async sends (a coalesced group is one; retries too)"
        )
    )
    send_latency: LatencySnapshot = field(
        metadata=metric_meta("histogram", "from a send call to its answer, retries included")
    )


class ProducerMeter:
    """The counts behind :class:`ProducerMetrics`; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sends = self._messages = self._retries = self._errors = self._oneway = 0
        self._async_requests = 0
        self._latency = LatencyHistogram()

    def on_sent(self, messages: int, latency_ns: int) -> None:
        """A send of ``messages`` answered OK, ``latency_ns`` after its call."""
        with self._lock:
            self._sends += 1
            self._messages += messages
        self._latency.observe_ns(latency_ns)

    def on_failed(self) -> None:
        """A send failed after its last attempt."""
        with self._lock:
            self._errors += 1

    def on_retry(self) -> None:
        """An attempt is made again after a failure."""
        with self._lock:
            self._retries += 1

    def on_oneway(self) -> None:
        """A oneway send was offered."""
        with self._lock:
            self._oneway += 1

    def on_async_request(self) -> None:
        """A request was made for async sends (one or a coalesced group)."""
        with self._lock:
            self._async_requests += 1

    def snapshot(self) -> ProducerMetrics:
        """The counts so far, as one consistent :class:`ProducerMetrics`."""
        with self._lock:
            counts = (self._sends, self._messages, self._retries, self._errors, self._oneway)
            requests = self._async_requests
        return ProducerMetrics(*counts, requests, self._latency.snapshot())
