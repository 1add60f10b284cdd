"""Latency distributions of ``python -m bench latency`` as HDR histograms (``hdrhistogram``
from PyPI, in the bench extra): built in the process that measured them, sent to the suite
encoded (a few hundred bytes, whatever the count), merged there and read as percentiles.

Values are nanoseconds from 1 ns to :data:`HIGHEST_NS` at :data:`SIGNIFICANT_DIGITS`
significant digits (a value is read back within 0.1%); a value above the highest is recorded
as the highest (a run that fell that far behind says so in its row anyway).

Used by the latency suite (:mod:`bench.suites.latency`) and its roles
(:mod:`bench._latency_roles`).
"""

from __future__ import annotations

from collections.abc import Iterable

from hdrh.histogram import HdrHistogram

__all__ = [
    "HIGHEST_NS",
    "SIGNIFICANT_DIGITS",
    "encoded",
    "merged",
    "new_histogram",
    "percentiles_us",
]

HIGHEST_NS = 600 * 10**9
"""The largest value a histogram keeps apart: 10 minutes."""
SIGNIFICANT_DIGITS = 3
_PERCENTILES = {"p50_us": 50.0, "p90_us": 90.0, "p99_us": 99.0, "p999_us": 99.9}


def new_histogram() -> HdrHistogram:
    """An empty histogram of nanoseconds (see the module docstring)."""
    return HdrHistogram(1, HIGHEST_NS, SIGNIFICANT_DIGITS)


def encoded(values_ns: Iterable[int]) -> bytes:
    """``values_ns`` recorded in a new histogram, encoded (HdrHistogram's compressed form)."""
    histogram = new_histogram()
    record = histogram.record_value
    for value in values_ns:
        record(min(max(value, 1), HIGHEST_NS))
    return bytes(histogram.encode())


def merged(encodings: Iterable[bytes]) -> HdrHistogram:
    """One histogram of every value of the ``encodings`` (from :func:`encoded`)."""
    histogram = new_histogram()
    for encoding in encodings:
        histogram.decode_and_add(encoding)
    return histogram


def percentiles_us(histogram: HdrHistogram) -> dict[str, float]:
    """p50, p90, p99, p99.9 and the max in microseconds, and the count (``samples``); only the
    count (0) when the histogram is empty."""
    count = int(histogram.get_total_count())
    if count == 0:
        return {"samples": 0}
    figures = {
        key: histogram.get_value_at_percentile(percentile) / 1000.0
        for key, percentile in _PERCENTILES.items()
    }
    figures["max_us"] = histogram.get_max_value() / 1000.0
    figures["samples"] = count
    return figures
