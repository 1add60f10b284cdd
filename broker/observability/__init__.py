"""The broker's observability: Prometheus metrics, the read-only web console, per-topic meters.

- ``_topic_meter``: :class:`TopicMeter`, messages, bytes and latencies per topic, counted once
  per batch by the send and pull processors (the only code on the hot path).
- ``_collector``: :class:`BrokerCollector`, every metric read at scrape time (topics, queues,
  groups and lag, store, sessions); ``_transport_metrics`` adds the media driver's cnc.dat
  counters.
- ``_history``: :class:`History`, the last minutes of rates and lag for the console's charts.
- ``_pages`` (HTML, no I/O) and ``_console`` (:class:`ConsoleApp`, a WSGI application): the
  console; ``static/`` holds the vendored htmx and uPlot with their licences.
- ``_server``: :class:`ObservabilityServer`, the HTTP port serving ``/metrics`` and
  ``/console/``.

The broker starts the server (``BrokerConfig.metrics_port``; none turns it off) and names its
URLs in the ``broker ready:`` line (``metrics=`` and ``console=``).
"""

from aeromq.broker.observability._collector import BrokerCollector
from aeromq.broker.observability._console import ConsoleApp
from aeromq.broker.observability._history import History, Sample
from aeromq.broker.observability._server import ObservabilityServer
from aeromq.broker.observability._topic_meter import TopicMeter, TopicTraffic

__all__ = [
    "BrokerCollector",
    "ConsoleApp",
    "History",
    "ObservabilityServer",
    "Sample",
    "TopicMeter",
    "TopicTraffic",
]
