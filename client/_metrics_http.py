"""A client's optional ``/metrics``: a producer's or consumer's ``metrics()`` for Prometheus.

Caller: the application (:func:`serve_metrics`), once per client it wants scraped. Affects: one
listening socket and its thread (``prometheus_client``'s own server), over a registry of its
own, so two clients in one process each serve theirs. Nothing is counted here: a scrape calls
the client's ``metrics()`` and turns the snapshot's fields into metric families, each field
described once in the snapshot's dataclass, its metadata from :func:`metric_meta`.

A snapshot field ``sends`` of kind ``counter`` under prefix ``aeromq_producer`` is
``aeromq_producer_sends_total``; a ``gauge`` keeps its name; a ``histogram`` (a
:class:`~common.LatencySnapshot`) gets ``_seconds``. Every sample carries the ``labels`` given
(``client_id``, and the group).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final, Literal
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from aeromq.common import LatencySnapshot

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["MetricsServer", "metric_meta", "serve_metrics"]

MetricKind = Literal["counter", "gauge", "histogram"]
_KIND: Final = "aeromq_metric_kind"
_HELP: Final = "aeromq_metric_help"


def metric_meta(kind: MetricKind, help_text: str) -> Mapping[str, str]:
    """The metadata of a metrics snapshot's dataclass field, its Prometheus kind and help
    text: ``sends: int = field(metadata=metric_meta("counter", "sends answered OK"))``."""
    return {_KIND: kind, _HELP: help_text}


class _SnapshotCollector(Collector):
    def __init__(
        self, prefix: str, read: Callable[[], DataclassInstance], labels: Mapping[str, str]
    ):
        self._prefix = prefix
        self._read = read
        self._names = list(labels)
        self._values = list(labels.values())

    def collect(self) -> Iterable[Metric]:
        snapshot = self._read()
        for f in dataclasses.fields(snapshot):
            kind = f.metadata.get(_KIND)
            if kind is None:
                continue
            name, text = f"{self._prefix}_{f.name}", str(f.metadata[_HELP])
            value = getattr(snapshot, f.name)
            family: Metric
            if kind == "histogram":
                assert isinstance(value, LatencySnapshot)
                family = HistogramMetricFamily(f"{name}_seconds", text, labels=self._names)
                family.add_metric(self._values, value.cumulative(), value.sum_s)
            elif kind == "counter":
                family = CounterMetricFamily(name, text, labels=self._names)
                family.add_metric(self._values, value)
            else:
                family = GaugeMetricFamily(name, text, labels=self._names)
                family.add_metric(self._values, value)
            yield family


class MetricsServer:
    """A running client ``/metrics`` (see :func:`serve_metrics`); ``close()`` stops it."""

    def __init__(self, server: WSGIServer, thread: threading.Thread, host: str) -> None:
        self._server = server
        self._thread = thread
        self.host = host
        self.port = int(server.server_address[1])

    @property
    def url(self) -> str:
        """The address to scrape: ``http://host:port/metrics`` (the port bound, not 0)."""
        return f"http://{self.host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving and wait (up to 5 s) for the server thread to end."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_metrics(
    prefix: str,
    read: Callable[[], DataclassInstance],
    labels: Mapping[str, str],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
) -> MetricsServer:
    """Serve ``read()`` (a dataclass snapshot with :func:`metric_meta`\\ s) at
    ``http://host:port/metrics``; port 0 takes a free one (``MetricsServer.port``)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SnapshotCollector(prefix, read, labels))
    server, thread = start_http_server(port, host, registry)
    return MetricsServer(server, thread, host)
