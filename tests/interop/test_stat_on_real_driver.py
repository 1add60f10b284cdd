"""``aeromq stat --once`` on the real Aeron C driver's cnc.dat (pyaeron's, in a peer process).

A real publisher sends 60 messages, a real subscriber reads 20 of them and stops. The positions
``aeromq stat`` shows (pub-pos, pub-lmt, sub-pos; in text and in JSON, which also decodes the
counters' keys) must be the ones the pyaeron peers report, and ``--errors`` must read the real
driver's error log.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from aeromq.transport.testing.driver_client import DriverClient

from ._harness import Peer, Peers

CHANNEL = "aeron:ipc"
STREAM = 4001
COUNT = 60
READ = 20
MAX_LENGTH = 3000
COUNTER_LINE = re.compile(r"^\s*(\d+):\s+(-?[\d,]+) - (.*)$")


def _stat(aeron_dir: Path, *options: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "aeromq", "stat", "--dir", str(aeron_dir), "--once", *options],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def _counters(text: str) -> dict[str, int]:
    """label -> value of every counter line of ``aeromq stat --once``."""
    counters = {}
    for line in text.splitlines():
        match = COUNTER_LINE.match(line)
        if match:
            counters[match.group(3)] = int(match.group(2).replace(",", ""))
    return counters


def _settled_stat(aeron_dir: Path, expected: dict[str, int]) -> tuple[str, dict[str, int]]:
    """Run stat until the expected labels show the expected values (pub-pos is sampled by the
    driver's conductor, so it may lag a moment); return the last output either way."""
    deadline = time.monotonic() + 10
    while True:
        text = _stat(aeron_dir)
        counters = _counters(text)
        shown = {label: counters.get(label) for label in expected}
        if shown == expected or time.monotonic() > deadline:
            return text, counters
        time.sleep(0.05)


def test_should_show_the_positions_the_real_clients_report(
    real_driver: Peer, peers: Peers, shm_dir: Path
) -> None:
    aeron_dir = shm_dir / "aeron"
    subscriber = peers.start(
        "subscriber.py",
        aeron_dir,
        CHANNEL,
        STREAM,
        *("--seed", 41, "--count", COUNT, "--max-length", MAX_LENGTH, "--stop-after", READ),
    )
    subscriber.expect("subscribed")
    publisher = peers.start(
        "publisher.py",
        aeron_dir,
        CHANNEL,
        STREAM,
        *("--seed", 41, "--count", COUNT, "--max-length", MAX_LENGTH),
    )
    session_id = publisher.expect("connected")["session_id"]
    published = publisher.expect("published")
    received = subscriber.expect("received")
    assert received["errors"] == []
    assert received["position"] < published["position"]
    publisher.send("report")
    report = publisher.expect("report")
    assert report["position"] == published["position"]

    streams = f"{session_id} {STREAM} {CHANNEL}"
    pub_pos = next(
        label
        for label in _counters(_stat(aeron_dir))
        if label.startswith("pub-pos (concurrent): ") and label.endswith(streams)
    )
    registration = pub_pos.split(" ")[2]
    labels = {
        "pub-pos": f"pub-pos (concurrent): {registration} {streams}",
        "pub-lmt": f"pub-lmt: {registration} {streams}",
    }
    expected = {labels["pub-pos"]: report["position"], labels["pub-lmt"]: report["limit"]}
    text, counters = _settled_stat(aeron_dir, expected)

    assert f"pid {real_driver.seen[0]['pid']}," in text.splitlines()[0]
    assert "Aeron Stat (CnC v0.2.0)" in text
    assert {label: counters.get(label) for label in expected} == expected, text
    sub_pos = [
        value
        for label, value in counters.items()
        if label.startswith("sub-pos: ") and f" {streams} @0" in label
    ]
    assert sub_pos == [received["position"]], text
    assert counters["Errors: version=1.53.0-SNAPSHOT commit=+guilty"] == 0

    rows = [json.loads(line) for line in _stat(aeron_dir, "--json").splitlines()]
    by_type: dict[int, dict[str, Any]] = {
        row["type_id"]: row for row in rows if row["session_id"] == session_id
    }
    assert by_type[12]["value"] == report["position"]
    assert by_type[1]["value"] == report["limit"]
    assert by_type[4]["value"] == received["position"]
    for row in by_type.values():
        assert (row["stream_id"], row["channel"]) == (STREAM, CHANNEL)


def test_should_read_the_real_drivers_error_log(real_driver: Peer, shm_dir: Path) -> None:
    aeron_dir = shm_dir / "aeron"
    with DriverClient(str(aeron_dir)) as raw:
        raw.send_raw(0x77, bytes(16))  # the C driver logs an unknown command, answers nothing
    deadline = time.monotonic() + 10
    while "1 distinct errors observed." not in (text := _stat(aeron_dir, "--errors")):
        assert time.monotonic() < deadline, text
        time.sleep(0.05)
    assert "1 observations from " in text
    assert "(-6) unknown command type id" in text
    assert "command=119 unknown" in text
