"""The counting parts of observability, without I/O: the latency histogram, the per-topic
meter and the console's history of rates and lag."""

from __future__ import annotations

import pytest

from aeromq.broker.observability import History, Sample, TopicMeter
from aeromq.common import LatencyHistogram

MS = 1_000_000


def test_should_count_durations_into_prometheus_style_buckets() -> None:
    histogram = LatencyHistogram((0.001, 0.01))
    for duration_ns in (MS // 2, MS, 5 * MS, 50 * MS, -7):
        histogram.observe_ns(duration_ns)
    snapshot = histogram.snapshot()
    assert snapshot.bucket_counts == (3, 1)  # 0.5 ms, 1 ms (the bound is "at or below"), 0
    assert snapshot.count == 5
    assert snapshot.cumulative() == [("0.001", 3), ("0.01", 4), ("+Inf", 5)]
    assert snapshot.sum_s == pytest.approx(0.0565)
    assert snapshot.mean_s == pytest.approx(0.0565 / 5)


@pytest.mark.parametrize("bounds", [(), (0.0, 1.0), (0.5, 0.1), (0.1, 0.1)])
def test_should_refuse_bounds_that_are_not_increasing_positive_seconds(
    bounds: tuple[float, ...],
) -> None:
    with pytest.raises(ValueError, match="bounds_s"):
        LatencyHistogram(bounds)


def test_should_total_each_topics_batches_apart() -> None:
    meter = TopicMeter()
    meter.on_stored("orders", 10, 1_000, 2 * MS)
    meter.on_stored("orders", 5, 400, 3 * MS)
    meter.on_stored("audit", 1, 90, MS)
    meter.on_pulled("orders", 15, 1_400, 40 * MS)
    orders, audit = sorted(meter.snapshot(), key=lambda t: t.topic, reverse=True)
    assert (orders.topic, orders.messages_in, orders.bytes_in) == ("orders", 15, 1_400)
    assert (orders.messages_out, orders.bytes_out) == (15, 1_400)
    assert orders.produce_latency.count == 2 and orders.pull_latency.count == 1
    assert (audit.messages_in, audit.messages_out, audit.pull_latency.count) == (1, 0, 0)


def test_should_turn_samples_into_rates_per_second_and_lag_lines() -> None:
    samples = iter(
        [
            Sample(100.0, {"orders": 0}, {"orders": 0}, {"billing": 0}),
            Sample(102.0, {"orders": 20}, {"orders": 10}, {"billing": 10}),
            Sample(103.0, {"orders": 20, "audit": 5}, {"orders": 20}, {"billing": 0}),
        ]
    )
    history = History(lambda: next(samples), interval_ms=1_000, capacity=10)
    for _ in range(3):
        history.sample()
    series = history.series()
    assert series["time_s"] == [102.0, 103.0]
    assert series["rates"]["orders in"] == [10.0, 0.0]
    assert series["rates"]["orders out"] == [5.0, 10.0]
    assert series["rates"]["audit in"] == [0.0, 5.0]  # a topic that appears starts at 0
    assert series["lag"] == {"billing": [10, 0]}


def test_should_keep_only_the_last_samples() -> None:
    clock = iter(range(100))
    history = History(lambda: Sample(float(next(clock)), {}, {}, {}), capacity=3)
    for _ in range(10):
        history.sample()
    assert history.series()["time_s"] == [8.0, 9.0]
