"""A failing case ends only itself: in each suite, a failure injected into one case
(``AEROMQ_BENCH_FAIL_CASE``: it raises, a worker of it exits with status 3, or a worker of it
hangs past the case's time limit) is reported as a failed row with its reason, the suite's
other cases are still measured, a target computed from the failed case is reported not
measured, and nothing the suite started is left running. Each suite runs for real with
``--quick`` in a session of its own, so whatever outlives it is found with ``pgrep -s``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run_suite(
    suite: str, fail_case: str, timeout_s: float, *options: str
) -> tuple[list[dict[str, Any]], str]:
    """The suite's JSON rows, and its standard error; asserts it ended in ``timeout_s`` and
    left no process behind."""
    began = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench", suite, "--quick", "--json", *options],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "AEROMQ_BENCH_FAIL_CASE": fail_case},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    finally:
        left = _left_behind(process.pid)
        if process.poll() is None or left:
            os.killpg(process.pid, 9)
            process.wait()
    assert process.returncode == 0, stderr[-3000:]
    assert time.monotonic() - began < timeout_s
    assert left == [], f"left running: {left}"
    return [json.loads(line) for line in stdout.splitlines()], stderr


def _left_behind(session: int) -> list[str]:
    """The live processes (not zombies) of ``session``, as ``pgrep -a`` shows them; a moment
    is allowed for those already stopping (a JVM, a broker) to end."""
    deadline = time.monotonic() + 15
    while True:
        found = subprocess.run(
            ["pgrep", "-a", "-s", str(session)], capture_output=True, text=True, check=False
        ).stdout.splitlines()
        live = [line for line in found if _state(int(line.split()[0])) not in ("Z", "X", "")]
        if not live or time.monotonic() > deadline:
            return live
        time.sleep(0.5)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def _check(
    rows: list[dict[str, Any]], failed: str, reason: str, target: str | None
) -> dict[str, Any]:
    """The failed row says why; every other case was measured; ``target`` is not measured."""
    by_name = {row["name"]: row for row in rows}
    assert by_name[failed] == {"name": failed, "failed": by_name[failed]["failed"]}
    assert reason in by_name[failed]["failed"]
    measures = ("msgs_per_s", "p50_us", "ns_per_op")
    others = [
        row
        for row in rows
        if row["name"] != failed
        and not row["name"].startswith("target:")
        and " skipped: " not in row["name"]
        and row["name"] != "baseline:pyaeron unavailable"
    ]
    assert len(others) >= 3
    for row in others:
        assert "failed" not in row, row
        assert any(key in row for key in measures), row
    if target is not None:
        assert "not_measured" in by_name[f"target:{target}"], by_name.get(f"target:{target}")
    return by_name


_NO_BASELINES = ("--baselines", "none")
"""The broker and consumer suites without Redis and NATS (what is checked here is how aeromq's
own cases fail; the baselines would only lengthen the run)."""


def test_should_report_a_hung_atomic_case_and_measure_the_others() -> None:
    rows, stderr = _run_suite("atomic", "atomic:put_int64=hang:3", 90)
    _check(rows, "atomic:put_int64", "timed out after 3 s", None)
    assert [row["name"] for row in rows][:5] == [
        "atomic:get_int64",
        "atomic:get_int32_volatile",
        "atomic:get_int64_volatile",
        "atomic:put_int64",
        "atomic:put_int32_ordered",
    ]
    assert "atomic:put_int64: FAILED after" in stderr  # said at once, on standard error


@pytest.mark.long  # the consumer and broker cases cover a dead worker and a target not measured
def test_should_report_a_store_case_whose_worker_died_and_not_measure_its_target() -> None:
    rows, _ = _run_suite("store", "store:append:sync:batch1:1-writer=exit", 150)
    _check(
        rows,
        "store:append:sync:batch1:1-writer",
        "exited with status 3",
        "SYNC 8 writers / SYNC 1 writer (single puts)",
    )
    assert "store:append:sync:batch1:8-writers" in {row["name"] for row in rows}


@pytest.mark.long  # the atomic case covers a case that fails; this one a whole UDP suite
@pytest.mark.timeout(300)
def test_should_report_a_failed_udp_case_and_measure_the_others() -> None:
    rows, _ = _run_suite("udp", "udp 64B offer / poll(256)=raise", 280)
    by_name = _check(
        rows,
        "udp 64B offer / poll(256)",
        "RuntimeError: injected by AEROMQ_BENCH_FAIL_CASE",
        "udp 64B offer / poll",
    )
    assert "msgs_per_s" in by_name["udp 64B offer_batch x64 / poll(256)"]
    assert "p50_us" in by_name["udp ping-pong 64B RTT"]


@pytest.mark.timeout(300)
def test_should_stop_a_hung_broker_phase_and_run_the_next_on_the_same_broker() -> None:
    rows, _ = _run_suite("broker", "aeromq:produce-columnar=hang:5", 280, *_NO_BASELINES)
    by_name = _check(
        rows, "aeromq:produce-columnar", "timed out after 5 s", "aeromq:produce-columnar msgs/s"
    )
    assert "msgs_per_s" in by_name["aeromq:end-to-end-columnar"]  # after the hung phase


@pytest.mark.timeout(300)
def test_should_report_a_consumer_case_whose_worker_died_and_go_on() -> None:
    rows, _ = _run_suite("consumer", "aeromq:1-consumer=exit", 280, *_NO_BASELINES)
    by_name = _check(rows, "aeromq:1-consumer", "exited with status 3", None)
    assert "msgs_per_s" in by_name["aeromq:3-consumer"]


@pytest.mark.long  # a Spark session and the whole spark suite: 40-50 s
@pytest.mark.timeout(400)
def test_should_stop_a_hung_spark_read_and_run_the_others_in_the_same_session() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("no java")
    rows, _ = _run_suite("spark", "aeromq:batch-read:4-partition=hang:5", 380)
    by_name = _check(
        rows,
        "aeromq:batch-read:4-partition",
        "timed out after 5 s",
        "aeromq batch read (4 partitions)",
    )
    assert "msgs_per_s" in by_name["baseline:arrow-memory:4-partition"]
    assert "msgs_per_s" in by_name["aeromq:stream-read:100k-msgs-per-s"]
