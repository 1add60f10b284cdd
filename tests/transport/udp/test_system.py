"""Two media drivers in their own processes over 127.0.0.1, publisher and subscriber in theirs.

- a long stream of random sizes (some fragmented) arrives intact and in order (250,000 messages,
  ``AEROMQ_SYSTEM_MESSAGES`` to set another count: about a hundred rotations of 4 MiB terms);
- with 5 % of DATA frames and 5 % of NAKs dropped, every message still arrives;
- a subscriber that goes away and comes back joins the stream again;
- a publisher that closes ends the stream: the image reports end of stream and goes;
- ``aeromq stat --once`` shows the UDP counters of both drivers.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from multiprocessing.context import SpawnContext, SpawnProcess
from pathlib import Path
from typing import Any

import pytest

from tests.transport.udp import workers

STREAM_ID = 1001
STREAM_MESSAGES = int(os.environ.get("AEROMQ_SYSTEM_MESSAGES", "250000"))
TIMEOUT_S = 250.0  # the machine is shared: a loaded run of a million took 40 s


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Drivers:
    """A sending and a receiving driver, each in its own process."""

    def __init__(self, root: Path, loss: dict[str, float] | None = None) -> None:
        self.ctx: SpawnContext = multiprocessing.get_context("spawn")
        self.tx_dir = str(root / "tx")
        self.rx_dir = str(root / "rx")
        self.stop = self.ctx.Event()
        self.processes: list[SpawnProcess] = []
        for aeron_dir in (self.tx_dir, self.rx_dir):
            ready = self.ctx.Event()
            self.start(workers.run_driver, aeron_dir, ready, self.stop, loss)
            assert ready.wait(30), "driver did not start"

    def start(self, target: Any, *args: Any) -> SpawnProcess:
        process = self.ctx.Process(target=target, args=args, daemon=True)
        process.start()
        self.processes.append(process)
        return process

    def close(self) -> None:
        self.stop.set()
        for process in self.processes:
            process.join(20)
            if process.is_alive():
                process.kill()
                process.join(5)


@pytest.fixture(scope="module")
def drivers() -> Iterator[Drivers]:
    """Two drivers for the module, in a directory unique to this run (runs may overlap)."""
    root = "/dev/shm" if Path("/dev/shm").is_dir() else None
    base = Path(tempfile.mkdtemp(prefix="aeromq-udp-system-", dir=root))
    pair = Drivers(base)
    try:
        yield pair
    finally:
        pair.close()
        shutil.rmtree(base, ignore_errors=True)


def _transfer(
    drivers: Drivers, count: int, max_length: int, stream_id: int = STREAM_ID
) -> tuple[Any, Any]:
    channel = f"aeron:udp?endpoint=127.0.0.1:{_free_port()}"
    results = drivers.ctx.Queue()
    ready = drivers.ctx.Event()
    drivers.start(
        workers.subscribe, drivers.rx_dir, channel, stream_id, count, max_length, results, ready
    )
    assert ready.wait(30)
    drivers.start(workers.publish, drivers.tx_dir, channel, stream_id, count, max_length, results)
    reports = {report[0]: report for report in (results.get(timeout=TIMEOUT_S) for _ in range(2))}
    return reports["publisher"], reports["subscriber"]


@pytest.mark.timeout(300)
def test_should_deliver_a_long_stream_of_random_sizes_in_order(drivers: Drivers) -> None:
    count = STREAM_MESSAGES
    publisher, subscriber = _transfer(drivers, count, max_length=3000)
    assert publisher[1] == count
    _, received, elapsed, errors, first, _, _ = subscriber
    assert errors == []
    assert (received, first) == (count, 0)
    print(f"\n{count} messages in {elapsed:.1f} s: {count / elapsed:,.0f} msgs/s")


@pytest.mark.timeout(300)
def test_should_deliver_everything_with_lost_data_and_naks(shm_dir: Path) -> None:
    lossy = Drivers(shm_dir, loss={"data_loss_rate": 0.05, "nak_loss_rate": 0.05})
    try:
        count = 100_000
        publisher, subscriber = _transfer(lossy, count, max_length=3000)
        _, received, _, errors, first, _, _ = subscriber
        assert errors == []
        assert (received, first) == (count, 0)
        assert publisher[1] == count
        receiver_stat, sender_stat = _stat(lossy.rx_dir), _stat(lossy.tx_dir)
        assert _value(receiver_stat, "NAKs sent") > 0
        assert _value(sender_stat, "NAKs received") > 0
        assert _value(sender_stat, "Retransmits sent") > 0
    finally:
        lossy.close()


def test_should_let_a_subscriber_that_restarts_join_again(drivers: Drivers) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{_free_port()}"
    stream_id = STREAM_ID + 1
    results = drivers.ctx.Queue()
    stop_publisher = drivers.ctx.Event()
    sessions: list[Any] = []
    try:
        for attempt in range(2):
            ready = drivers.ctx.Event()
            subscriber = drivers.start(
                workers.subscribe, drivers.rx_dir, channel, stream_id, 2_000, 500, results, ready
            )
            assert ready.wait(30)
            if attempt == 0:
                drivers.start(
                    workers.publish,
                    drivers.tx_dir,
                    channel,
                    stream_id,
                    0,
                    500,
                    results,
                    stop_publisher,
                )
            report = results.get(timeout=TIMEOUT_S)
            assert report[0] == "subscriber"
            subscriber.join(20)
            sessions.append(report)
    finally:
        stop_publisher.set()
    (_, first_count, _, first_errors, first_start, _, _) = sessions[0]
    (_, second_count, _, second_errors, second_start, _, _) = sessions[1]
    assert first_errors == [] and second_errors == []
    assert first_count >= 2_000 and second_count >= 2_000
    assert second_start >= first_start + first_count  # joined where the stream had got to


def test_should_end_the_stream_when_the_publisher_closes(drivers: Drivers) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{_free_port()}"
    stream_id = STREAM_ID + 2
    results = drivers.ctx.Queue()
    ready = drivers.ctx.Event()
    drivers.start(
        workers.subscribe, drivers.rx_dir, channel, stream_id, 500, 500, results, ready, True
    )
    assert ready.wait(30)
    drivers.start(workers.publish, drivers.tx_dir, channel, stream_id, 500, 500, results)
    reports = {report[0]: report for report in (results.get(timeout=TIMEOUT_S) for _ in range(2))}
    _, received, _, errors, _, image_went, saw_eos = reports["subscriber"]
    assert errors == [] and received == 500
    assert image_went, "the image did not go after the publisher closed"
    assert saw_eos, "the image did not report the end of the stream before it went"


def test_should_show_the_udp_counters_in_aeromq_stat(drivers: Drivers) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{_free_port()}"
    stream_id = STREAM_ID + 3
    results = drivers.ctx.Queue()
    ready = drivers.ctx.Event()
    stop_publisher = drivers.ctx.Event()
    try:
        drivers.start(
            workers.subscribe,
            drivers.rx_dir,
            channel,
            stream_id,
            1_000,
            500,
            results,
            ready,
            False,
            stop_publisher,
        )
        assert ready.wait(30)
        drivers.start(
            workers.publish, drivers.tx_dir, channel, stream_id, 0, 500, results, stop_publisher
        )
        assert results.get(timeout=TIMEOUT_S)[0] == "subscriber"
        sender, receiver = _stat(drivers.tx_dir), _stat(drivers.rx_dir)
    finally:
        stop_publisher.set()
    for label in ("snd-pos:", "snd-lmt:", "snd-bpe:", "snd-channel:", "pub-lmt:"):
        assert label in sender, label
    for label in ("rcv-hwm:", "rcv-pos:", "rcv-channel:", "rcv-local-sockaddr:"):
        assert label in receiver, label
    assert _value(receiver, "Status Messages sent") > 0
    assert _value(sender, "Status Messages received") > 0
    assert _value(sender, "Bytes sent") > 0 and _value(receiver, "Bytes received") > 0
    for stat in (sender, receiver):
        assert _value(stat, "Invalid packets") == 0
        assert _value(stat, "Errors:") == 0


def _value(stat: str, label: str) -> int:
    """The value of the counter whose label starts with ``label`` in ``aeromq stat`` output."""
    for line in stat.splitlines():
        number, separator, name = line.partition(" - ")
        if separator and name.startswith(label):
            return int(number.split(":")[1].replace(",", ""))
    raise AssertionError(f"no counter {label!r} in:\n{stat}")


def _stat(aeron_dir: str) -> str:
    completed = subprocess.run(
        [sys.executable, "-m", "aeromq", "stat", "--dir", aeron_dir, "--once"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return completed.stdout
