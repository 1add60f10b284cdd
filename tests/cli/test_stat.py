"""``python -m aeromq stat`` in a subprocess over a cnc.dat built by ``_cnc_files``."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aeromq.transport.cnc import CNC_FILE

from ._cnc_files import (
    ERROR_TEXT,
    EXPECTED_LINES,
    PID,
    SESSION,
    UDP_CHANNEL,
    UDP_SESSION,
    StatFiles,
    interrupt,
    run_stat,
    stat_env,
    write_cnc,
)

HEADER = re.compile(
    r"^\d\d:\d\d:\d\d - Aeron Stat \(CnC v0\.2\.0\), pid (\d+), heartbeat age (\d+)ms$"
)
RULE = "=" * 70


@pytest.fixture
def stat_files(shm_dir: Path) -> StatFiles:
    return write_cnc(shm_dir / "aeron")


def counter_ids(stdout: str) -> list[int]:
    """The ids of the counter lines of one text snapshot."""
    lines = stdout.splitlines()
    assert lines[1] == RULE and lines[-1] == "--", stdout
    return [int(line.split(":", 1)[0]) for line in lines[2:-1]]


def test_should_print_the_header_and_every_allocated_counter_once(stat_files: StatFiles) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    header = HEADER.match(lines[0])
    assert header is not None, lines[0]
    assert int(header.group(1)) == PID
    now_ms = time.time_ns() // 1_000_000
    assert 1_500 <= int(header.group(2)) <= now_ms - stat_files.heartbeat_ms
    assert lines[1:] == [RULE, *EXPECTED_LINES, stat_files.heartbeat_line, "--"]
    assert "\x1b" not in result.stdout


def test_should_read_the_default_directory_from_aeron_dir(stat_files: StatFiles) -> None:
    result = run_stat("--once", env=stat_env(AERON_DIR=str(stat_files.aeron_dir)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2:-1] == [*EXPECTED_LINES, stat_files.heartbeat_line]


def test_should_accept_the_path_of_the_cnc_file_itself(stat_files: StatFiles) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir / CNC_FILE), "--once")
    assert result.returncode == 0, result.stderr
    assert counter_ids(result.stdout) == [0, 1, 2, 3, 4, 6, 7, 8]


@pytest.mark.parametrize(
    ("args", "expected_ids"),
    [
        (["--type", "1,4"], [3, 4]),
        (["--type", "0"], [0, 1]),
        (["--label", "^pub-"], [2, 3, 6]),
        (["--label", "aeron:ipc"], [2, 3, 4]),
        (["--identity", "5"], [2, 3]),
        (["--identity", "1,7"], [1, 8]),
        ([f"--session={UDP_SESSION}"], [6]),
        (["--session", str(SESSION)], [2, 3, 4]),
        (["--stream", "2002"], [6]),
        (["--channel", "udp"], [6, 7]),
        (["--channel", "^aeron:ipc$"], [2, 3, 4]),
        (["--type", "12", "--stream", "1001,7"], [2]),
        (["--label", "no such counter"], []),
    ],
)
def test_should_show_only_the_counters_that_pass_every_filter(
    stat_files: StatFiles, args: list[str], expected_ids: list[int]
) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once", *args)
    assert result.returncode == 0, result.stderr
    assert counter_ids(result.stdout) == expected_ids


def test_should_print_one_json_object_per_counter(stat_files: StatFiles) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once", "--json")
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    assert [item["counter_id"] for item in objects] == [0, 1, 2, 3, 4, 6, 7, 8]
    by_id = {item.pop("counter_id"): item for item in objects}
    timestamps = {item.pop("timestamp_ms") for item in objects}
    assert len(timestamps) == 1
    assert by_id[3] == {
        "type_id": 1,
        "value": 36_864,
        "label": f"pub-lmt: 5 {SESSION} 1001 aeron:ipc",
        "registration_id": 5,
        "owner_id": 7,
        "reference_id": 0,
        "session_id": SESSION,
        "stream_id": 1001,
        "channel": "aeron:ipc",
    }
    assert by_id[6]["session_id"] == UDP_SESSION and by_id[6]["value"] == -1
    assert by_id[7]["channel"] == UDP_CHANNEL and by_id[7]["stream_id"] is None
    assert by_id[0] == {
        "type_id": 0,
        "value": 1_234_567,
        "label": "Bytes sent",
        "registration_id": 0,
        "owner_id": -1,
        "reference_id": 0,
        "session_id": None,
        "stream_id": None,
        "channel": None,
    }
    assert by_id[8]["value"] == stat_files.client_heartbeat_ms


def test_should_print_the_distinct_error_log(stat_files: StatFiles) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once", "--errors")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "***\n"
        "2 observations from 2023-11-14 22:13:20.123+0000 to 2023-11-14 22:13:25.456+0000 for:\n"
        f" {ERROR_TEXT}\n"
        "\n"
        "1 distinct errors observed.\n"
    )


def test_should_print_the_error_log_as_json(stat_files: StatFiles) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once", "--errors", "--json")
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == [
        {
            "observation_count": 2,
            "first_observation_ms": 1_700_000_000_123,
            "last_observation_ms": 1_700_000_005_456,
            "text": ERROR_TEXT,
        }
    ]


def assert_one_clear_line(result: subprocess.CompletedProcess[str], path: Path) -> None:
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("aeromq stat: ")
    assert str(path) in lines[0]
    assert "Traceback" not in result.stderr


def test_should_report_a_missing_cnc_file_in_one_line(shm_dir: Path) -> None:
    result = run_stat("--dir", str(shm_dir / "nothing"), "--once")
    assert_one_clear_line(result, shm_dir / "nothing" / CNC_FILE)
    assert "no cnc.dat" in result.stderr


def test_should_report_an_unreadable_cnc_file_in_one_line(shm_dir: Path) -> None:
    (shm_dir / CNC_FILE).mkdir()
    result = run_stat("--dir", str(shm_dir), "--once")
    assert_one_clear_line(result, shm_dir / CNC_FILE)
    assert "cannot read cnc.dat" in result.stderr


def test_should_report_a_cnc_file_of_another_major_version_in_one_line(
    stat_files: StatFiles,
) -> None:
    path = stat_files.aeron_dir / CNC_FILE
    with open(path, "r+b") as cnc:
        cnc.write((0x010000).to_bytes(4, "little"))
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once")
    assert_one_clear_line(result, path)
    assert "version not compatible" in result.stderr


def test_should_report_a_truncated_cnc_file_in_one_line(stat_files: StatFiles) -> None:
    path = stat_files.aeron_dir / CNC_FILE
    os.truncate(path, 4096)
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once")
    assert_one_clear_line(result, path)
    assert "shorter than its header says" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--type", "one"],
        ["--label", "("],
        ["--interval-ms", "0"],
        ["--errors", "--stream", "1001"],
    ],
)
def test_should_refuse_bad_options_with_usage(stat_files: StatFiles, args: list[str]) -> None:
    result = run_stat("--dir", str(stat_files.aeron_dir), "--once", *args)
    assert result.returncode == 2
    assert result.stderr.startswith("usage: aeromq stat")
    assert "Traceback" not in result.stderr


CLEAR = "\x1b[2J\x1b[H"
PID_IN_HEADER = re.compile(r"Aeron Stat \(CnC v0\.2\.0\), pid (\d+), ")
SCREEN_START = re.compile(r"(?m)^(?=\d\d:\d\d:\d\d - Aeron Stat )")


def _screens(text: str) -> list[str]:
    """The snapshots of a refreshing stat's output into a file: each begins with its header."""
    return [screen for screen in SCREEN_START.split(text) if screen]


def _wait_for_output(
    path: Path, process: subprocess.Popen[str], predicate: str, screens: int = 0
) -> str:
    """The output once it holds ``predicate`` and more than ``screens`` screens."""
    deadline = time.monotonic() + 20
    while True:
        text = path.read_text()
        if predicate in text and len(_screens(text)) > screens:
            return text
        assert process.poll() is None, f"stat exited early: {text!r}"
        assert time.monotonic() < deadline, f"timed out waiting for {predicate!r} in {text!r}"
        time.sleep(0.02)


def test_should_refresh_into_a_file_without_escape_codes_and_follow_a_replaced_cnc_file(
    stat_files: StatFiles, shm_dir: Path
) -> None:
    out_path = shm_dir / "stat.out"
    with open(out_path, "w") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aeromq",
                "stat",
                "--aeron-dir",
                str(stat_files.aeron_dir),
                "--interval",
                "20ms",
                "--type",
                "0",
            ],
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=stat_env(),
        )
    try:
        _wait_for_output(out_path, process, f"pid {PID},", screens=1)
        os.remove(stat_files.aeron_dir / CNC_FILE)  # a new driver replaces the directory's file
        write_cnc(stat_files.aeron_dir, pid=PID + 1)
        # Two screens begun after the new file was complete: the first of them is whole.
        seen = len(_screens(out_path.read_text()))
        text = _wait_for_output(out_path, process, f"pid {PID + 1},", screens=seen + 2)
        stderr = interrupt(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    assert stderr == ""
    assert CLEAR not in text  # a file or pipe gets no clear-screen codes, only a terminal
    screens = _screens(text)
    first, settled = screens[0], screens[seen]
    assert HEADER.match(first.splitlines()[0]) is not None
    assert PID_IN_HEADER.findall(first) == [str(PID)] and counter_ids(first) == [0, 1]
    assert PID_IN_HEADER.findall(settled) == [str(PID + 1)] and counter_ids(settled) == [0, 1]


def test_should_clear_the_screen_between_refreshes_on_a_terminal(stat_files: StatFiles) -> None:
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aeromq",
            "stat",
            "--aeron-dir",
            str(stat_files.aeron_dir),
            "--interval",
            "20ms",
            "--type",
            "0",
        ],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=stat_env(),
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + 20
        while seen.count(CLEAR.encode()) < 2 and time.monotonic() < deadline:
            readable, _, _ = select.select([leader], [], [], 0.5)  # bounded: never a blind read
            if readable:
                seen += os.read(leader, 65536)
    finally:
        try:
            interrupt(process)
        finally:
            os.close(leader)
    assert seen.count(CLEAR.encode()) >= 2
    assert f"pid {PID},".encode() in seen


def test_should_find_a_brokers_media_driver_from_its_data_dir(
    stat_files: StatFiles, shm_dir: Path
) -> None:
    data_dir = shm_dir / "broker-data"
    data_dir.mkdir()
    (data_dir / "broker.json").write_text(json.dumps({"aeron_dir": str(stat_files.aeron_dir)}))
    result = run_stat("--broker", str(data_dir), "--once")
    assert result.returncode == 0, result.stderr
    assert HEADER.match(result.stdout.splitlines()[0]) is not None
    assert PID_IN_HEADER.findall(result.stdout) == [str(PID)]

    nobody = run_stat("--broker", str(shm_dir / "no-broker-here"), "--once")
    assert nobody.returncode == 1
    assert nobody.stderr.count("\n") == 1
    assert "no running broker found" in nobody.stderr and "broker.json" in nobody.stderr
