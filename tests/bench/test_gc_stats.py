"""The latency suite's garbage collector recorder: a process started with ``bench/_gc_site``
records its collections, and a window over it reads them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench._gc_stats import CLIENT_GC_ENV, GC_DIR_ENV, GcWindow, client_gc
from bench._traced_run import traced_environment

_SITE = Path(__file__).resolve().parents[2] / "bench" / "_gc_site"
_CYCLES = """
import sys
print("ready", flush=True)  # the recorder was installed before this line ran
sys.stdin.readline()
for _ in range(20_000):  # garbage cycles: only the collector frees them
    node = {}
    node["self"] = node
print("made", flush=True)
sys.stdin.readline()
"""


def test_should_count_a_processs_collections_and_what_they_freed_in_a_window(
    tmp_path: Path,
) -> None:
    with traced_environment(_SITE, {GC_DIR_ENV: str(tmp_path)}):
        child = subprocess.Popen(
            [sys.executable, "-c", _CYCLES],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == "ready\n"
        window = GcWindow(tmp_path, {"child": child.pid, "not-python": 1})
        window.start()
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "made\n"
        window.stop()
    finally:
        child.stdin.close()
        child.wait(30)
        child.stdout.close()
    report = window.report(messages=20_000)
    assert set(report) == {"child"}  # a process without a file is left out
    figures = report["child"]
    collections = figures["gen0"] + figures["gen1"] + figures["gen2"]
    assert collections >= 20_000 // 700 - 3  # one every 700 allocations, each tenth of gen 1
    assert figures["freed_per_msg"] > 0.9  # nearly every cycle freed by a collection
    assert figures["gen0_pause_ms"] > 0 and figures["gen0_max_ms"] > 0
    assert figures["frozen"] == 0


def test_should_leave_the_clients_collector_alone_unless_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(CLIENT_GC_ENV, raising=False)
    assert client_gc() == "default"
    monkeypatch.setenv(CLIENT_GC_ENV, "yes")
    assert client_gc() == "default"
    monkeypatch.setenv(CLIENT_GC_ENV, "tuned")
    assert client_gc() == "tuned"
