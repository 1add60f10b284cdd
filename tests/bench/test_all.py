"""``python -m bench all``: every suite in a child process with a time limit, each case printed
as it comes, failures reported while the run goes on, JSON lines, a summary and PNG charts. The
suites here are small fakes (``tests/bench/fake_suites``); the real ones take minutes."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests._pids import pid_alive

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

pytest.importorskip("matplotlib")


def test_should_report_a_failed_suite_a_hung_one_and_a_failed_case_and_go_on(
    tmp_path: Path,
) -> None:
    out, pid_file = tmp_path / "results", tmp_path / "child.pid"
    done = subprocess.run(
        [
            sys.executable, "-m", "bench", "all", "--quick", "--package", "tests.bench.fake_suites",
            "--suite-timeout", "8", "--out", str(out),
        ],
        cwd=REPO,
        env={**os.environ, "BENCH_TEST_CHILD_PID": str(pid_file)},
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert "== boom: failed (exit status 1) in" in "\n".join(lines)
    assert any(
        line.startswith("suite boom") and "RuntimeError: the suite broke" in line for line in lines
    )
    assert any(line.startswith("before the hang") for line in lines)  # printed as it came
    assert "== hang: timed out after 8 s" in done.stdout
    assert "== ok: ok, 1 case(s) failed" in done.stdout  # the suites after the failures ran
    assert any(line.startswith("ours 1024B") and "FAILED: RuntimeError" in line for line in lines)
    assert "target ours 64B: 2,000,000 msgs/s (goal >= 1000000) met" in done.stdout
    assert "target ours 1024B: not measured (goal >= 1000000)" in done.stdout

    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(child)  # the hung suite's own child went with it

    summary = json.loads((out / "summary.json").read_text())
    assert summary["quick"] is True and len(summary["load_before"]) == 3
    assert summary["python"]["executable"] == sys.executable  # the interpreter the suites ran on
    assert summary["python"]["version"] == platform.python_version()
    assert summary["suites"]["ok"]["failed_cases"] == ["ours 1024B"]
    assert summary["suites"]["ok"]["failures"] == {
        "ours 1024B": "RuntimeError: benchmark workers failed: exit codes [1]"
    }
    assert summary["suites"]["ok"]["targets_not_measured"] == ["ours 1024B"]
    assert summary["suites"]["hang"]["status"] == "timed out after 8 s"
    rows = [json.loads(line) for line in (out / "ok.jsonl").read_text().splitlines()]
    assert {
        "name": "ours 1024B",
        "failed": "RuntimeError: benchmark workers failed: exit codes [1]",
    } in rows
    assert [r["name"] for r in rows][:2] == ["ours 64B", "baseline:theirs 64B"]
    assert rows[0]["msgs_per_s"] == 2_000_000.0
    for chart in ("ok-msgs_per_s.png", "ok-p50_us.png", "boom-msgs_per_s.png"):
        assert chart in summary["charts"]
        assert (out / chart).read_bytes()[:8] == PNG_MAGIC


def test_should_refuse_an_unknown_suite() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "all", "--only", "nope"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no such suite: nope" in done.stderr


def test_should_put_each_baseline_after_the_case_it_matches() -> None:
    from bench._charts import beside

    rows = [
        {"name": "aeromq:produce"},
        {"name": "aeromq:pull"},
        {"name": "baseline:redis-streams:produce"},
        {"name": "baseline:redis-streams:pull"},
    ]
    assert [r["name"] for r in beside(rows)] == [
        "aeromq:produce",
        "baseline:redis-streams:produce",
        "aeromq:pull",
        "baseline:redis-streams:pull",
    ]
    unmatched = [{"name": "ipc 64B poll(1)"}, {"name": "baseline:ring 64B per call"}]
    assert beside(unmatched) == unmatched  # no case ends like it: the suite's order stays
