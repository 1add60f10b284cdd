"""Progress of the long commands: a live line on a terminal (a pseudo-terminal here), plain lines
in a pipe, always on standard error; each drives the real ``aeromq`` against a real broker."""

from __future__ import annotations

import json
import re
import sys

import pytest

from aeromq._cli.progress import Progress, format_eta, plain_line
from aeromq.broker.testing import ServerProcess
from aeromq.client.grpc_client import GrpcClient

from .conftest import run_aeromq, run_on_terminal

PLAIN = re.compile(r"^(\w[\w ]*): ([\d,]+)/([\d,]+) \((\d+)%\) ([\d,]+) (\w+)/s eta (\S+)$")


def _create_topic(broker: ServerProcess, topic: str) -> None:
    with GrpcClient(broker.grpc_address, timeout_s=30.0) as admin:
        admin.create_topic(topic, read_queue_nums=2, write_queue_nums=2)


def test_should_format_a_plain_line_with_count_rate_and_eta() -> None:
    assert plain_line("produce", 400, 1_000, 2.0, "msgs") == (
        "produce: 400/1,000 (40%) 200 msgs/s eta 3s"
    )
    assert plain_line("consume", 1_500, None, 3.0, "msgs") == "consume: 1,500 500 msgs/s"
    assert [format_eta(s) for s in (None, 0.4, 75, 3_700)] == ["-", "0s", "1m15s", "1h01m"]


def test_should_refuse_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="mode: value='fancy'"):
        Progress("x", 1, sys.stderr, mode="fancy")


def test_should_print_plain_progress_lines_to_stderr_in_a_pipe(broker: ServerProcess) -> None:
    _create_topic(broker, "progress-plain")
    sent = run_aeromq(
        "produce", "--topic", "progress-plain", "--count", "3000", "--batch", "10", "--json",
        "--progress-interval", "1ms",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["sent"] == 3000  # standard output: the summary only
    lines = [PLAIN.match(line) for line in sent.stderr.splitlines()]
    assert lines and all(lines), sent.stderr
    counts = [int(m.group(2).replace(",", "")) for m in lines if m]
    assert counts == sorted(counts) and 0 < counts[-1] <= 3000
    assert {m.group(1) for m in lines if m} == {"produce"}
    assert {m.group(3) for m in lines if m} == {"3,000"}

    consumed = run_aeromq(
        "consume", "--topic", "progress-plain", "--from", "first", "--count", "3000", "--quiet",
        "--progress-interval", "1ms",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout == ""
    matches = [PLAIN.match(line) for line in consumed.stderr.splitlines()[:-1]]
    assert matches and all(m and m.group(1) == "consume" for m in matches), consumed.stderr
    assert consumed.stderr.splitlines()[-1].startswith("consumed=3000 ")


def test_should_print_no_progress_when_told_none(broker: ServerProcess) -> None:
    _create_topic(broker, "progress-none")
    sent = run_aeromq(
        "produce", "--topic", "progress-none", "--count", "500", "--batch", "10",
        "--progress", "none", "--progress-interval", "1ms",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert sent.stderr == ""


def test_should_draw_a_live_line_on_a_terminal(broker: ServerProcess) -> None:
    _create_topic(broker, "progress-live")
    code, screen = run_on_terminal(
        "produce", "--topic", "progress-live", "--count", "20000", "--batch", "20",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert code == 0, screen
    assert "\x1b[" in screen  # drawn in place with control codes, not plain lines
    assert "produce" in screen and "msgs/s" in screen and "eta" in screen
    assert "/20,000" in screen
    assert PLAIN.search(screen) is None
    assert "sent=20000 failed=0" in screen  # the summary after the line is gone

    code, screen = run_on_terminal(
        "consume", "--topic", "progress-live", "--from", "first", "--count", "20000", "--quiet",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert code == 0, screen
    assert "\x1b[" in screen and "consume" in screen and "/20,000" in screen
    assert "consumed=20000 " in screen


def test_should_show_offset_reset_progress_per_broker(broker: ServerProcess) -> None:
    _create_topic(broker, "progress-reset")
    done = run_aeromq(
        "admin", "offset", "reset", "resetters", "progress-reset", "--earliest",
        "--progress", "plain", "--progress-interval", "0",
        endpoints=broker.grpc_address,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert PLAIN.match(done.stderr.splitlines()[-1]), done.stderr
    assert done.stderr.splitlines()[-1].startswith("offset reset: 1/1 (100%) ")
    assert "reset group resetters" in done.stdout
