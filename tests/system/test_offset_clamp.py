"""A lost tail (a power cut under ASYNC flush, here cut by hand after a clean stop): recovery
lowers the committed consumer offsets that lie past the recovered queue ends, logs each
correction, and the group's next pulls get every new message (none skipped)."""

from __future__ import annotations

import struct
from pathlib import Path

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import GrpcClient, Message
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.producer import Producer
from aeromq.transport.client import Aeron, AeronContext
from tests.broker.data._system import pull_all

TOPIC = "clamped"
GROUP = "clamp-group"
SENT = 20
KEPT = 12
NEW = 15
_ENTRY = struct.Struct("<qiq")  # a consume queue entry: physical offset, size, tag hash

_ARGS = [
    "--auto-create-topic", "true", "--default-queue-count", "1",
    "--ingress-udp-endpoint", "none", "--index-enabled", "false",
    "--commit-log-segment-bytes", "1MiB", "--consume-queue-entries-per-segment", "1000",
    "--max-message-size", "64KiB",
]  # fmt: skip


def _send(broker: ServerProcess, bodies: list[bytes]) -> None:
    with Producer("clamp-producer", broker.grpc_address) as producer:
        for body in bodies:
            producer.send(Message(TOPIC, body))


def _cut_tail(data_dir: Path, keep: int) -> None:
    """Lose every message from queue offset ``keep`` on, in the consume queue and the commit
    log (the files keep their length; the lost bytes read as zeros), and the checkpoint."""
    queue_file = data_dir / "consumequeue" / TOPIC / "0" / f"{0:020d}"
    with queue_file.open("r+b") as out:
        physical_offset, _size, _tag = _ENTRY.unpack(
            out.read(_ENTRY.size * (keep + 1))[-_ENTRY.size :]
        )
        out.seek(keep * _ENTRY.size)
        out.write(b"\0" * (_ENTRY.size * (SENT - keep)))
    log_file = data_dir / "commitlog" / f"{0:020d}"
    with log_file.open("r+b") as out:
        length = out.seek(0, 2)
        out.seek(physical_offset)
        out.write(b"\0" * (min(length, 1 << 20) - physical_offset))
    (data_dir / "checkpoint").unlink()


def test_should_clamp_committed_offsets_past_a_lost_tail_and_skip_no_new_message(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    broker = start_broker_process(data_dir, extra_args=_ARGS)
    try:
        _send(broker, [f"old-{i}".encode() for i in range(SENT)])
        with GrpcClient(broker.grpc_address) as admin:
            admin.commit_offset(GROUP, TOPIC, 0, SENT)
    finally:
        assert broker.stop() == 0
    _cut_tail(data_dir, KEPT)
    restarted = start_broker_process(data_dir, extra_args=_ARGS)
    try:
        log = "\n".join(restarted.log)
        assert (
            "corrected (OFFSET_OVERFLOW): "
            f"group={GROUP} topic={TOPIC} queue_id=0 committed={SENT} max_offset={KEPT}"
        ) in log, log
        assert "lowered 1 committed consumer offsets" in log, log
        with GrpcClient(restarted.grpc_address) as admin:
            committed = admin.query_offset(GROUP, TOPIC, 0)
        assert committed == KEPT
        new = [f"new-{i}".encode() for i in range(NEW)]
        _send(restarted, new)
        with (
            Aeron.connect(AeronContext(aeron_dir=restarted.ready["aeron_dir"])) as aeron,
            ClientSession.connect(aeron, SessionConfig()) as session,
        ):
            stored = pull_all(session, TOPIC, 1)
        from_committed = [
            body for (_, offset), body in sorted(stored.items()) if offset >= committed
        ]
        assert from_committed == new  # every new message, none skipped
        assert [stored[(0, i)] for i in range(KEPT)] == [f"old-{i}".encode() for i in range(KEPT)]
    finally:
        assert restarted.stop() == 0
