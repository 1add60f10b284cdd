"""``python -m bench all``: every suite in turn, each in a child process with a time limit.

Each suite runs as ``python -m bench SUITE --json`` in a session of its own, so the brokers,
drivers and workers it starts go with it: a suite still running at ``--suite-timeout`` is
stopped (SIGTERM to the session, SIGKILL 10 s later) and reported as failed, and the next suite
starts. Each case is printed as the suite reports it. In ``--out`` (default
``bench-results/<UTC time>``): ``SUITE.jsonl`` (the suite's JSON lines), ``summary.json`` (the
date, the machine's load before and after, the interpreter the suites ran on, each suite's
status and time) and the PNG charts
(:mod:`bench._charts`). Exit status 0 when every suite ran to its end with no failed case.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import queue
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from bench._harness import HEADER, JsonRecord, format_row, suites

__all__ = ["SuiteRun", "interpreter", "run_all"]

_STOP_GRACE_S = 10.0


class SuiteRun:
    """One suite's child process: its rows as they come, its status when it ends."""

    def __init__(self, name: str, quick: bool, package: str, timeout_s: float) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.rows: list[JsonRecord] = []
        self.status = "running"
        self.seconds = 0.0
        command = [sys.executable, "-m", "bench", name, "--json", "--package", package]
        if quick:
            command.append("--quick")
        self._started = time.monotonic()
        self._process = subprocess.Popen(
            command, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, name=f"bench-{name}", daemon=True).start()

    def _read(self) -> None:
        assert self._process.stdout is not None
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def follow(self) -> None:
        """Print each row as it comes until the suite ends or overruns its time limit."""
        deadline = self._started + self.timeout_s
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    self._stop()
                    self.status = f"timed out after {self.timeout_s:.0f} s"
                    break
                continue
            if line is None:
                code = self._process.wait()
                self.status = "ok" if code == 0 else f"failed (exit status {code})"
                break
            self._row(line)
        self.seconds = time.monotonic() - self._started
        if self.status == "ok" and self.failed_cases():
            self.status = f"ok, {len(self.failed_cases())} case(s) failed"

    def _row(self, line: str) -> None:
        try:
            record = json.loads(line)
        except ValueError:
            print(f"  {line.rstrip()}", flush=True)  # not a row: pass it on
            return
        self.rows.append(record)
        print(format_row(record), flush=True)

    def _stop(self) -> None:
        """SIGTERM to the suite's session, then SIGKILL to whatever is left of it."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):  # the session is gone
                os.killpg(self._process.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=_STOP_GRACE_S)

    def failed_cases(self) -> dict[str, str]:
        """Each failed case's name and reason (``{"name": ..., "failed": reason}`` rows)."""
        return {str(r["name"]): str(r["failed"]) for r in self.rows if "failed" in r}

    def targets_not_measured(self) -> list[str]:
        return [str(r["name"]).removeprefix("target:") for r in self.rows if "not_measured" in r]

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def interpreter() -> JsonRecord:
    """The interpreter the suites run on (each suite's child and the processes it starts take
    ``sys.executable``): its version, path, build and compiler, and whether it is linked to a
    shared ``libpython``. Figures of two builds of one version differ: on the machine of
    ``docs/latency.md`` ("The interpreter") a distribution's optimized build took 5-15% off
    aeromq's CPU a message against a plain source build's."""
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "executable": sys.executable,
        "build": " ".join(platform.python_build()),
        "compiler": platform.python_compiler(),
        "shared_libpython": bool(sysconfig.get_config_var("Py_ENABLE_SHARED")),
    }


def run_all(args: argparse.Namespace) -> int:
    """Run the suites ``args`` names (see the module docstring); returns the exit status."""
    names = suites(args.package)
    if args.only:
        wanted = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            print(f"python -m bench all: no such suite: {', '.join(unknown)}", file=sys.stderr)
            return 2
        names = [n for n in names if n in wanted]
    timeout_s = args.suite_timeout or (300.0 if args.quick else 1800.0)
    now = datetime.now(UTC)
    out = Path(args.out or f"bench-results/{now:%Y%m%dT%H%M%SZ}")
    out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    started = time.monotonic()
    runs: list[SuiteRun] = []
    for name in names:
        print(f"\n== {name} ({'--quick, ' if args.quick else ''}limit {timeout_s:.0f} s)")
        print(HEADER, flush=True)
        run = SuiteRun(name, args.quick, args.package, timeout_s)
        run.follow()
        runs.append(run)
        print(f"== {name}: {run.status} in {run.seconds:.0f} s", flush=True)
        (out / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in run.rows))
    load_after = os.getloadavg()
    summary: JsonRecord = {
        "date": now.isoformat(timespec="seconds"),
        "quick": args.quick,
        "cpus": os.cpu_count(),
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        "python": interpreter(),
        "seconds": round(time.monotonic() - started, 1),
        "suites": {
            r.name: {
                "status": r.status,
                "seconds": round(r.seconds, 1),
                "cases": len(r.rows),
                "failed_cases": list(r.failed_cases()),
                "failures": r.failed_cases(),
                "targets_not_measured": r.targets_not_measured(),
            }
            for r in runs
        },
    }
    summary["charts"] = _charts(runs, out, summary)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\n== all: {summary['seconds']:.0f} s; load {load_before[0]:.1f} -> {load_after[0]:.1f}")
    for r in runs:
        print(f"   {r.name:<12} {r.status} ({r.seconds:.0f} s, {len(r.rows)} rows)")
    print(f"   results and charts in {out}", flush=True)
    return 0 if all(r.ok for r in runs) else 1


def _charts(runs: list[SuiteRun], out: Path, summary: JsonRecord) -> list[str]:
    try:
        from bench._charts import draw
    except ImportError as exc:  # matplotlib is in the bench extra
        print(f"no charts: {exc} (pip install 'aeromq[bench]')", file=sys.stderr)
        return []
    caption = (
        f"{'--quick ' if summary['quick'] else ''}run of {summary['date'][:10]}, "
        f"load {summary['load_before'][0]:.1f} on {summary['cpus']} CPUs"
    )
    drawn: list[str] = []
    for run in runs:
        drawn += [path.name for path in draw(run.name, run.rows, out, caption)]
    return drawn
