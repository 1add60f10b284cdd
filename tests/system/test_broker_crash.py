"""A broker process SIGKILLed in the middle of sends and restarted on its data: under SYNC flush
no acknowledged message is lost; under ASYNC at most those of the last flush interval may be;
the restart reports what recovery found."""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.transport.client import Aeron, AeronContext
from tests.broker.data._system import body_of, pull_all, sender_worker
from tests.system.conftest import Workers

FLUSH_INTERVAL_MS = 500
ACKS_BEFORE_KILL = 400


def _args(flush_mode: str) -> list[str]:
    return [
        "--flush-mode", flush_mode, "--flush-interval-ms", str(FLUSH_INTERVAL_MS),
        "--auto-create-topic", "true", "--default-queue-count", "4",
        "--ingress-udp-endpoint", "none", "--index-enabled", "false",
        "--commit-log-segment-bytes", "16MiB",
    ]  # fmt: skip


def _pull_everything(broker: ServerProcess) -> dict[tuple[int, int], bytes]:
    with (
        Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as aeron,
        ClientSession.connect(aeron, SessionConfig()) as session,
    ):
        return pull_all(session, "crashy", 4)


@pytest.mark.slow
@pytest.mark.parametrize("flush_mode", ["SYNC", "ASYNC"])
def test_should_keep_acknowledged_messages_across_a_sigkill_and_report_recovery(
    flush_mode: str, tmp_path: Path, workers: Workers
) -> None:
    data_dir = tmp_path / "data"
    broker = start_broker_process(data_dir, extra_args=_args(flush_mode))
    acked: dict[int, tuple[int, int, int]] = {}
    try:
        workers.start(sender_worker, broker.grpc_address, "crashy")
        while len(acked) < ACKS_BEFORE_KILL:
            _, sequence, queue_id, offset, at_ns = workers.expect("acked", 60)
            acked[sequence] = (queue_id, offset, at_ns)
        broker.kill()  # SIGKILL mid-stream: no flush, no checkpoint, its driver dies too
        killed_ns = time.monotonic_ns()
        deadline = time.monotonic() + 3.0  # acks already on their way still count
        while time.monotonic() < deadline:
            try:
                report = workers.results.get(timeout=0.2)
            except queue.Empty:
                continue
            if report[0] == "acked":
                acked[report[1]] = (report[2], report[3], report[4])
        workers.kill()
    finally:
        broker.kill()
        broker.stop()  # reaps it and closes its output pipe
    restarted = start_broker_process(data_dir, extra_args=_args(flush_mode))
    try:
        log = "\n".join(restarted.log)
        assert "recovery: the previous run did not shut down cleanly" in log, log
        if flush_mode == "SYNC":
            assert "SYNC flush: every acknowledged message is durable" in log
        else:
            assert f"at most the last {FLUSH_INTERVAL_MS} ms" in log
        found = _pull_everything(restarted)
    finally:
        assert restarted.stop() == 0
    lost = {
        seq
        for seq, (queue_id, offset, _) in acked.items()
        if found.get((queue_id, offset)) != body_of(9, seq)
    }
    if flush_mode == "SYNC":
        assert lost == set(), sorted(lost)[:20]
    else:
        window_ns = FLUSH_INTERVAL_MS * 1_000_000
        recent = {seq for seq, (_, _, at_ns) in acked.items() if at_ns > killed_ns - window_ns}
        assert lost <= recent, sorted(lost - recent)[:20]
    assert len(acked) >= ACKS_BEFORE_KILL
