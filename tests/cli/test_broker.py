"""``aeromq broker`` as a process: the ready line, SIGQUIT's stacks, SIGTERM, the garbage
collector set once started, a bad setting, a taken data directory."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aeromq.common import DEFAULT_GC_THRESHOLD
from tests.producer.conftest import start_broker


def _run_broker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "aeromq", "broker", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_should_run_as_a_process_write_its_stacks_at_sigquit_and_stop_at_sigterm(
    tmp_path: Path,
) -> None:
    process = _run_broker("--data-dir", str(tmp_path), "--grpc-port", "0",
                        "--ingress-udp-endpoint", "none", "--index-enabled", "false",
                        "--commit-log-segment-bytes", "16MiB")  # fmt: skip
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline(), process.stdout.readline()]
        assert lines[0].startswith("recovery: a new, empty store")
        ready = dict(part.split("=", 1) for part in lines[1].split()[2:])
        assert lines[1].startswith("broker ready:") and ready["name"] == "broker-a"
        assert ready["flush_mode"] == "ASYNC" and ready["udp_channel"] == "none"
        process.send_signal(signal.SIGQUIT)  # every thread's stack into stacks.txt, runs on
        stacks = tmp_path / "stacks.txt"
        deadline = time.monotonic() + 10
        while "Current thread" not in _text(stacks) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "Current thread" in _text(stacks) and "in serve" in _text(stacks), _text(stacks)
        assert process.poll() is None
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=30)
        assert process.returncode == 0 and "broker stopped" in out
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def _text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.mark.parametrize(
    ("args", "frozen", "threshold"),
    [
        ((), True, DEFAULT_GC_THRESHOLD),
        (("--gc-freeze", "false", "--gc-threshold", "700,10,10"), False, (700, 10, 10)),
    ],
)
def test_should_freeze_its_start_up_objects_and_set_the_collector_once_started(
    tmp_path: Path, args: tuple[str, ...], frozen: bool, threshold: tuple[int, int, int]
) -> None:
    process = _run_broker("--data-dir", str(tmp_path), "--grpc-port", "0",
                          "--ingress-udp-endpoint", "none", "--index-enabled", "false",
                          "--commit-log-segment-bytes", "16MiB", *args)  # fmt: skip
    try:
        assert process.stdout is not None
        while not (line := process.stdout.readline()).startswith("broker ready:"):
            assert line, "the broker ended before its ready line"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)
    found = re.search(r"garbage collector: (\d+) start-up objects frozen, thresholds (\S+) ", err)
    assert found is not None, err
    count = int(found.group(1))  # the broker's own gc.get_freeze_count() after the freeze
    assert count > 10_000 if frozen else count == 0
    assert found.group(2) == ",".join(map(str, threshold))


def test_should_refuse_a_bad_setting_with_exit_2(tmp_path: Path) -> None:
    process = _run_broker("--data-dir", str(tmp_path), "--grpc-port", "70000")
    _, err = process.communicate(timeout=30)
    assert process.returncode == 2 and "grpc_port" in err and "70000" in err


def test_should_exit_1_with_the_reason_when_the_data_dir_is_taken(tmp_path: Path) -> None:
    with start_broker(tmp_path, ingress_udp_endpoint=None):
        process = _run_broker("--data-dir", str(tmp_path), "--grpc-port", "0",
                            "--ingress-udp-endpoint", "none")  # fmt: skip
        _, err = process.communicate(timeout=60)
    assert process.returncode == 1 and "cannot start" in err and "lock" in err
