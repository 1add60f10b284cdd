"""``python -m bench latency``'s ``aeromq:cold:*`` rows (``bench/_latency_cold.py``): a send after a
quiet while against the warm ones, with the CPU of both in the caller and the broker."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from aeromq.broker.testing import start_broker_process
from aeromq.client import GrpcClient
from bench._latency_cold import cold_row
from bench.suites import latency


def test_should_name_a_cold_case_for_each_quiet_time_of_a_run() -> None:
    full, quick = latency.Settings.of(False), latency.Settings.of(True)
    assert full.cold_quiet_s == (0.5, 3.0) and quick.cold_quiet_s == (2.0,)
    assert latency._cold_name(0.5) == "aeromq:cold:0.5s"
    assert latency._cold_name(3.0) == "aeromq:cold:3s"


def test_should_time_the_cold_send_and_the_warm_ones_with_their_cpu(tmp_path: Path) -> None:
    broker = start_broker_process(
        tmp_path / "broker",
        extra_args=["--index-enabled", "false", "--ingress-udp-endpoint", "none"],
    )
    try:
        with GrpcClient(broker.grpc_address, timeout_s=10) as admin:
            admin.create_topic("Cold")
        row = cold_row("aeromq:cold:0.1s", broker.grpc_address, "Cold", broker.pid, 0.1, 2)
    finally:
        assert broker.stop() == 0
    extra = row.extra
    assert row.error is None and extra["rounds"] == 2 and extra["quiet_s"] == 0.1
    assert row.p50_us is not None and 0 < row.p50_us <= extra["cold_max_us"]
    for key in ("warm_p50_us", "cold_caller_cpu_p50_us", "warm_caller_cpu_p50_us"):
        assert extra[key] > 0, key
    assert extra["cold_broker_cpu_p50_us"] > 0 and extra["warm_broker_cpu_p50_us"] > 0
    assert multiprocessing.active_children() == []  # the producer's process ended
