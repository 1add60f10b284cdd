"""The harness's bounded cases (``bench/_bounded.py``, ``bench/_harness.py``): a case that
raises, whose worker dies or that overruns its time limit fails with its reason, its workers
(and theirs) are stopped, the servers started before it are not, and the rows and targets say
so in one shape."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench._bounded import CaseFailed, bounded, isolated
from bench._harness import (
    Result,
    Target,
    attempt,
    case_rows,
    figure,
    format_row,
    generated_rows,
    ratio_of,
)
from tests._pids import pid_alive


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])


def test_should_fail_a_case_whose_worker_exits_non_zero_without_waiting_for_its_limit() -> None:
    def case() -> float:
        worker = subprocess.Popen([sys.executable, "-c", "raise SystemExit(7)"])
        time.sleep(60)  # a coordinator that would wait in vain
        return float(worker.wait())

    began = time.monotonic()
    with pytest.raises(CaseFailed, match=r"worker pid \d+ exited with status 7"):
        bounded("dies", case, timeout_s=50)
    assert time.monotonic() - began < 15


def test_should_stop_an_overrunning_case_s_workers_and_theirs_but_not_older_processes(
    tmp_path: Path,
) -> None:
    server = _sleeper()  # started before the case: serves the next one
    grandchild_file = tmp_path / "grandchild"

    def case() -> None:
        code = (
            "import subprocess, sys, time; "
            "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
            f"open({str(grandchild_file)!r}, 'w').write(str(p.pid)); time.sleep(600)"
        )
        subprocess.Popen([sys.executable, "-c", code]).wait()

    try:
        with pytest.raises(CaseFailed, match=r"^timed out after 3 s$"):
            bounded("hangs", case, timeout_s=3)
        grandchild = int(grandchild_file.read_text())
        deadline = time.monotonic() + 10
        while pid_alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not pid_alive(grandchild)
        assert server.poll() is None
    finally:
        server.kill()
        server.wait()


def test_should_call_on_stop_before_the_case_fails() -> None:
    stopped: list[bool] = []
    with pytest.raises(CaseFailed):
        bounded("slow", time.sleep, 30, timeout_s=1, on_stop=lambda: stopped.append(True))
    assert stopped == [True]


def test_should_return_the_value_and_reraise_the_exception_of_a_case() -> None:
    assert bounded("ok", pow, 2, 10, timeout_s=10) == 1024
    with pytest.raises(ZeroDivisionError):
        bounded("raises", divmod, 1, 0, timeout_s=10)


def test_should_run_an_isolated_case_in_a_process_of_its_own() -> None:
    assert isolated(os.getpid) != os.getpid()
    assert isolated(_rows, 2) == [Result("row 0", msgs_per_s=0.0), Result("row 1", msgs_per_s=1.0)]
    with pytest.raises(CaseFailed, match=r"^ZeroDivisionError: "):
        isolated(divmod, 1, 0)
    with pytest.raises(CaseFailed, match=r"worker pid \d+ exited with status 5"):
        isolated(os._exit, 5)


def _rows(count: int) -> Iterator[Result]:
    for i in range(count):
        yield Result(f"row {i}", msgs_per_s=float(i))


def test_should_inject_the_failure_the_environment_asks_of_matching_cases(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AEROMQ_BENCH_FAIL_CASE", "x:*=exit")
    failures: list[str] = []
    assert attempt(failures, "x:one", pow, 2, 3) is None
    assert attempt(failures, "y:one", pow, 2, 3) == 8
    assert len(failures) == 1 and "exited with status 3" in failures[0]
    monkeypatch.setenv("AEROMQ_BENCH_FAIL_CASE", "x:one")
    assert case_rows("x:one", Result, "x:one") == [
        Result.failed("x:one", "RuntimeError: injected by AEROMQ_BENCH_FAIL_CASE")
    ]


def test_should_end_a_generator_s_rows_at_its_first_failure_and_close_it() -> None:
    closed: list[bool] = []

    def rows() -> Iterator[Result]:
        try:
            yield Result("first", msgs_per_s=1.0)
            raise RuntimeError("second broke")
        finally:
            closed.append(True)

    assert [r.as_json() for r in generated_rows("baseline:them", rows(), timeout_s=10)] == [
        {"name": "first", "msgs_per_s": 1.0},
        {"name": "baseline:them", "failed": "RuntimeError: second broke"},
    ]
    assert closed == [True]


def test_should_report_a_target_whose_case_failed_as_not_measured() -> None:
    rows = {"a": Result("a", msgs_per_s=10.0), "b": Result.failed("b", "timed out after 5 s")}
    assert figure(rows, "a") == 10.0
    assert figure(rows, "b") is None and figure(rows, "c") is None
    assert ratio_of(figure(rows, "a"), figure(rows, "b")) is None
    target = Target("a / b", ratio_of(figure(rows, "a"), figure(rows, "b")), 2.0, "x")
    assert not target.met
    record = target.as_json()
    assert record["not_measured"] and "measured" not in record
    assert format_row(record) == (
        "target a / b: not measured (goal >= 2.0): a case it is computed from failed"
    )
    assert format_row(rows["b"].as_json()).endswith("FAILED: timed out after 5 s")


def test_should_document_the_failure_injection_in_the_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--help"],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "AEROMQ_BENCH_FAIL_CASE=PATTERN[=HOW]" in done.stdout
    assert "hang[:SECONDS]" in done.stdout
