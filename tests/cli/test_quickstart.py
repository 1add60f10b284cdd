"""``aeromq quickstart``: the main job end to end (a real broker, three consumer processes, the
producer), with a small count; its summary as JSON, as a table in a pipe and live on a terminal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import run_on_terminal

QUICKSTART_TIMEOUT_S = 110.0


def _quickstart(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aeromq", "quickstart", *args],
        capture_output=True,
        text=True,
        timeout=QUICKSTART_TIMEOUT_S,
        check=False,
    )


def test_should_deliver_every_message_to_a_group_that_rebalances_and_report_json() -> None:
    done = _quickstart("--messages", "3000", "--json")
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()  # one JSON object, no progress
    summary = json.loads(line)
    assert summary["ok"] is True
    assert summary["sent"] == summary["distinct"] == 3000
    assert summary["consumed"] == 3000 + summary["duplicates"]
    assert summary["corrupt"] == 0
    assert summary["final_lag"] == 0 and summary["broker_exit"] == 0
    members = {m["name"]: m for m in summary["members"]}
    assert sorted(members) == ["c1", "c2", "c3"]
    assert summary["third_joined_at_sent"] == 1504  # the first batch of 32 at or past half
    assert members["c3"]["queues"]  # the third member was given queues: the group rebalanced
    assert summary["rebalanced"] is True
    final = sorted(q for m in members.values() for q in m["queues"])
    assert final == [0, 1, 2, 3]  # each queue owned by exactly one member at the end
    assert summary["produce_msgs_per_s"] > 0 and summary["latency_p99_ms"] is not None
    cpu_us = summary["cpu_us_per_msg"]
    assert set(cpu_us) == {"producer", "consumers", "broker"}
    assert all(us is not None and us > 0 for us in cpu_us.values()), cpu_us
    assert summary["latency_p50_ms"] <= summary["latency_p99_ms"]


def test_should_print_plain_progress_and_a_summary_table_in_a_pipe() -> None:
    done = _quickstart("--messages", "2000", "--progress-interval", "10ms")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    progress = [line for line in lines if line.startswith("quickstart: sent: ")]
    assert progress and "c1 q[" in progress[-1] and "lag" in progress[-1]
    assert "2,000/2,000 (100%)" in progress[-1]
    assert "\x1b[" not in done.stdout
    assert any("quickstart summary" in line for line in lines)
    assert any("final lag" in line and line.rstrip(" │").endswith("0") for line in lines)
    assert lines[-1] == "result: OK, every message stored, delivered and intact"


def test_should_draw_a_live_view_on_a_terminal() -> None:
    code, screen = run_on_terminal("quickstart", "--messages", "2000")
    assert code == 0, screen
    assert "\x1b[" in screen
    for header in ("member", "queues", "consumed", "msgs/s", "lag"):
        assert header in screen
    assert "quickstart: sent" not in screen  # no plain lines on a terminal
    assert "quickstart summary" in screen and "result: OK" in screen


@pytest.mark.slow
def test_should_carry_on_across_a_leader_kill_with_nothing_lost_on_a_cluster() -> None:
    done = _quickstart("--cluster", "--messages", "4000")
    lines = done.stdout.splitlines()
    assert done.returncode == 0, "\n".join(lines[-40:]) + done.stderr[-3000:]
    assert lines[-1].startswith("result: OK")
    assert any(line.startswith("kill -9 the leader: ") for line in lines)
    [failover] = [line for line in lines if line.startswith("failover: ")]
    assert "the producer's first acknowledged send after the kill" in failover
    [check] = [line for line in lines if line.startswith("check: ")]
    fields = dict(word.split("=", 1) for word in check.split() if "=" in word)
    assert (fields["lost"], fields["stored_twice"], fields["corrupt"]) == ("0", "0", "0"), check
    # a send may fail on a loaded machine (its outcome unknown: not counted as acknowledged)
    assert int(fields["acknowledged"]) + 32 * int(fields["failed_sends"]) == 4000, check
    assert sum(line.startswith("broker ready: ") for line in lines) >= 3


def test_should_reject_bad_arguments_with_usage() -> None:
    done = _quickstart("--messages", "0")
    assert done.returncode == 2
    assert "need --messages > 0" in done.stderr


def test_should_name_an_unknown_subcommand() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aeromq", "nope"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown subcommand 'nope'" in done.stderr
