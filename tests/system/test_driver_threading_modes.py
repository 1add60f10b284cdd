"""A broker process runs its embedded media driver in each threading mode it offers
(``--driver-threading-mode``): sends over IPC and over UDP are stored and answered in each, and
the driver's threads are the mode's."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.client import Message
from aeromq.client.grpc_client import GrpcClient
from aeromq.producer import Producer, ProducerConfig

MODES = ["SHARED", "SHARED_NETWORK", "DEDICATED"]
SENDS = 20


def _driver_threads(pid: int) -> list[str]:
    """The kernel's names of the process's media driver threads, sorted: each agent runner names
    its thread after its agent's role (a composite's roles in brackets), cut to 15 bytes."""
    names = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/comm", encoding="utf-8") as comm:
                name = comm.read().strip()
        except OSError:  # a thread that ended meanwhile
            continue
        if name.lstrip("[").startswith(("driver-conduct", "sender", "receiver")):
            names.append(name)
    return sorted(names)


def _wait_for_driver_threads(pid: int, count: int) -> list[str]:
    """The driver's threads once ``count`` of them are named (a runner names its thread as it
    starts), at most 10 s. A count of the process's threads a second after start-up also
    counted gRPC's event engine threads, a pool that grows and shrinks with its work."""
    deadline = time.monotonic() + 10
    while len(names := _driver_threads(pid)) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return names


@pytest.mark.parametrize("mode", MODES)
def test_should_carry_ipc_and_udp_sends_in_each_driver_threading_mode(
    tmp_path: Path, mode: str
) -> None:
    broker = start_broker_process(
        tmp_path / "data",
        extra_args=[
            "--driver-threading-mode", mode.lower(), "--ingress-udp-endpoint", "127.0.0.1:0",
            "--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
        ],
    )  # fmt: skip
    try:
        with GrpcClient(broker.grpc_address) as admin:
            admin.create_topic("modes", read_queue_nums=2, write_queue_nums=2)
        offsets = {}
        for transport in ("ipc", "udp"):
            config = ProducerConfig(transport=transport, send_timeout_ms=10_000)
            with Producer("modes", broker.grpc_address, config=config) as producer:
                results = [
                    producer.send(Message("modes", b"%s-%d" % (transport.encode(), i)))
                    for i in range(SENDS)
                ]
            offsets[transport] = sorted((r.message_queue.queue_id, r.queue_offset) for r in results)
        stored = offsets["ipc"] + offsets["udp"]
        assert len(set(stored)) == 2 * SENDS  # every send stored once, each at its own offset
        assert broker.process.poll() is None
    finally:
        assert broker.stop() == 0


def test_should_share_one_driver_thread_by_default_and_take_the_mode_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
            "--ingress-udp-endpoint", "127.0.0.1:0"]  # fmt: skip
    threads = {}
    for mode, count in (("default", 1), ("DEDICATED", 3)):
        if mode != "default":
            monkeypatch.setenv("AEROMQ_BROKER_DRIVER_THREADING_MODE", mode)
        broker = start_broker_process(tmp_path / mode, extra_args=args)
        try:
            threads[mode] = _wait_for_driver_threads(broker.pid, count)
        finally:
            assert broker.stop() == 0
    # SHARED: one thread for the conductor, sender and receiver; DEDICATED: one each
    [shared] = threads["default"]
    assert shared.startswith("[driver-conduct"), threads
    assert threads["DEDICATED"] == ["driver-conducto", "receiver", "sender"], threads
