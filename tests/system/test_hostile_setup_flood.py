"""The issue's attack on a default broker process: forged SETUP frames (no handshake, no
CONNECT, no data) sent to its UDP ingress by a peer written with the protocol's own flyweights
(``transport.testing.hostile_peer``), while a producer on the same host sends over IPC.

- 20 sessions with 1 GiB terms, sent twice a second apart: refused before anything is
  allocated (over the 64 MiB cap), counted in cnc.dat and in the broker's metrics, logged;
- 200 sessions at the cap itself, twice: one source address holds at most 4 GiB of image logs
  (21 images of 192 MiB), each a sparse file of one metadata page until data comes;

so the driver's directory grows by less than :data:`SHM_BOUND_BYTES` (tens of MiB, not the
21.5 GiB of the issue), and no producer send fails meanwhile: the conductor is never stalled.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import ClientError, Message
from aeromq.producer import Producer
from aeromq.transport.cnc import CncFile
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.driver import SystemCounter
from aeromq.transport.testing.hostile_peer import HostilePeer, free_udp_port
from tests._servers import serving

TOPIC = "UnderFlood"
STREAM = 1001
GIB = 1 << 30
MIB = 1 << 20
SHM_BOUND_BYTES = 32 * MIB
"""What the floods may add to the driver's directory (the documented bound is the security
guide's: one 4 KiB metadata page per image admitted, at most 21 images from one address)."""


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    port = free_udp_port()
    process = start_broker_process(
        tmp_path / "data", "broker-flooded", ["--ingress-udp-endpoint", f"127.0.0.1:{port}"]
    )
    process.ready["udp_port"] = str(port)
    with serving(process, {TOPIC: 1}, clean_exit=True):
        yield process


def _used_bytes(directory: str) -> int:
    """What the files under ``directory`` take (``du``: blocks held, not lengths)."""
    used = 0
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                used += os.stat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:
                continue
    return used


class _Sender(threading.Thread):
    """Sends one message every 5 ms until stopped, counting sends and failures."""

    def __init__(self, producer: Producer) -> None:
        super().__init__(name="flooded-producer", daemon=True)
        self.producer = producer
        self.stop = threading.Event()
        self.sent = 0
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.producer.send(Message(TOPIC, b"steady"))
                self.sent += 1
            except ClientError as exc:
                self.failures.append(str(exc))
            time.sleep(0.005)


def _rejected(reader: CountersReader) -> int:
    return reader.get_counter_value(SystemCounter.IMAGES_REJECTED)


def _wait(condition: Callable[[], bool], what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.slow
def test_should_bound_what_a_setup_flood_takes_and_keep_sends_flowing(
    broker: ServerProcess,
) -> None:
    aeron_dir = broker.ready["aeron_dir"]
    target = ("127.0.0.1", int(broker.ready["udp_port"]))
    with (
        CncFile.map(aeron_dir, timeout_ms=5_000) as cnc,
        Producer("flooded-producer", broker.grpc_address) as producer,
        HostilePeer(target) as peer,
    ):
        reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        producer.send(Message(TOPIC, b"first"))  # over IPC: the broker is on this host
        before = _used_bytes(aeron_dir)
        sender = _Sender(producer)
        sender.start()
        try:
            # one forged SETUP first: refused, or the test stops before GiB are taken
            peer.setup(1, STREAM, GIB)
            _wait(lambda: _rejected(reader) >= 1, "the first 1 GiB SETUP refused")
            assert not os.listdir(os.path.join(aeron_dir, "images")), "an image was made"
            peer.setup_flood(STREAM, GIB, 20)  # the flood: 20 sessions, twice
            time.sleep(1.0)
            peer.setup_flood(STREAM, GIB, 20)
            _wait(lambda: _rejected(reader) >= 41, "every 1 GiB SETUP refused")
            assert _used_bytes(aeron_dir) - before < MIB

            at_cap = _rejected(reader)
            peer.setup_flood(STREAM, 64 * MIB, 200, rounds=2)  # at the cap: the source bound
            _wait(lambda: _rejected(reader) >= at_cap + 179, "the source's 22nd image refused")
            images = os.listdir(os.path.join(aeron_dir, "images"))
            assert len(images) <= 21
            # the producer keeps sending beside the forged images: a hundred more sends, waited
            # for rather than a count after a fixed pause (which depends on the machine's load)
            flowing = sender.sent
            _wait(lambda: sender.sent >= flowing + 100, "100 sends beside the forged images")
        finally:
            sender.stop.set()
            sender.join(10)
        grown = _used_bytes(aeron_dir) - before
        print(
            f"flood: {peer.sent} forged SETUPs, {_rejected(reader)} refused, {len(images)} "
            f"images, {grown / MIB:.1f} MiB taken, {sender.sent} sends, "
            f"{len(sender.failures)} failed"
        )
        assert grown < SHM_BOUND_BYTES
        assert sender.failures == []
    with urllib.request.urlopen(broker.ready["metrics"], timeout=10) as response:
        metrics = response.read().decode()
    assert "aeromq_transport_images_rejected_total" in metrics
    assert "SETUP refused, no image: term_length=1073741824 max_term_length=67108864" in "\n".join(
        broker.log
    )
