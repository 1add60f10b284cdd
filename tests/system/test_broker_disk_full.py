"""A broker whose disk fills up (a real 24 MiB tmpfs): it stays up, refuses sends with a clear,
retriable DiskFullError naming the free and needed bytes, serves every acknowledged message,
takes sends again once space is freed, and restarts on a disk with no free block at all."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import DiskFullError, Message
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.producer import Producer, ProducerConfig
from aeromq.transport.client import Aeron, AeronContext
from tests.broker.data._system import pull_all
from tests.system._tmpfs import fill, small_tmpfs

TOPIC = "full"
BODY_BYTES = 16 * 1024
MIB = 1 << 20


def _args() -> list[str]:
    return [
        "--auto-create-topic", "true", "--default-queue-count", "1",
        "--ingress-udp-endpoint", "none", "--index-enabled", "false",
        "--commit-log-segment-bytes", "1MiB", "--consume-queue-entries-per-segment", "4096",
        "--min-free-disk-bytes", "2MiB", "--max-message-size", "256KiB",
    ]  # fmt: skip


def _pull(broker: ServerProcess) -> dict[tuple[int, int], bytes]:
    with (
        Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as aeron,
        ClientSession.connect(aeron, SessionConfig()) as session,
    ):
        return pull_all(session, TOPIC, 1)


def _send_until_full(producer: Producer, acked: dict[int, bytes], first: int) -> DiskFullError:
    """Send numbered bodies until the broker says its disk is full (bounded: the disk holds
    fewer than 24 MiB / 16 KiB messages)."""
    for sequence in range(first, first + 24 * MIB // BODY_BYTES + 10):
        body = sequence.to_bytes(8, "big") * (BODY_BYTES // 8)
        try:
            result = producer.send(Message(TOPIC, body))
        except DiskFullError as exc:
            return exc
        acked[result.queue_offset] = body
    raise AssertionError(f"no DiskFullError after {len(acked)} acknowledged sends")


@pytest.mark.slow
def test_should_refuse_sends_when_the_disk_fills_and_resume_once_space_is_freed(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "disk", 24) as disk:
        ballast = disk / "ballast"
        fill(ballast, 6 * MIB)
        data_dir = disk / "data"
        broker = start_broker_process(data_dir, extra_args=_args())
        acked: dict[int, bytes] = {}
        config = ProducerConfig(send_timeout_ms=5_000, retry_times_when_send_failed=0)
        try:
            with Producer("disk-full", broker.grpc_address, config=config) as producer:
                error = _send_until_full(producer, acked, 0)
                assert error.retriable
                text = str(error)
                assert "disk full" in text and "free_bytes=" in text, text
                assert "needed_bytes=" in text, text
                assert broker.process.poll() is None, "the broker died on a full disk"
                assert len(acked) > 100
                found = _pull(broker)  # reads and pulls still work
                assert {offset: found.get((0, offset)) for offset in acked} == acked
                ballast.unlink()  # space comes back: sends are taken again
                deadline = time.monotonic() + 10.0
                while True:
                    try:
                        result = producer.send(Message(TOPIC, b"after"))
                        break
                    except DiskFullError:
                        assert time.monotonic() < deadline, "sends did not resume"
                        time.sleep(0.1)
                acked[result.queue_offset] = b"after"
                _send_until_full(producer, acked, len(acked))
        finally:
            assert broker.stop() == 0, "\n".join(broker.log)
        fill(disk / "ballast-2", 24 * MIB)  # not one free block left
        assert os.statvfs(disk).f_bavail == 0
        restarted = start_broker_process(data_dir, extra_args=_args())
        try:
            assert restarted.process.poll() is None
            found = _pull(restarted)
            assert {offset: found.get((0, offset)) for offset in acked} == acked
            with (
                Producer("disk-full", restarted.grpc_address, config=config) as producer,
                pytest.raises(DiskFullError),
            ):
                producer.send(Message(TOPIC, b"still full"))
            assert restarted.process.poll() is None, "\n".join(restarted.log)
        finally:
            restarted.stop()
