"""Crash test with real processes: a child appends under SYNC flush and is SIGKILLed at random
(seeded) moments; after each kill the store recovers and must hold every acknowledged
message intact, end on a batch boundary, and have consume queues that agree with the log.
"""

from __future__ import annotations

import os
import random
import time
import zlib
from pathlib import Path

from aeromq.broker.store import MessageStore
from aeromq.broker.store._commit_log import LogCheck, check_at
from aeromq.common.record_batch import RecordBatch
from tests._fork_server import ForkServer

from ._crash_child import QUEUES, TOPIC, crash_config
from .conftest import crash

ROUNDS = int(os.environ.get("AEROMQ_STORE_CRASH_ROUNDS", "15"))
"""Kill-and-recover rounds (15 in the suite, about 0.7 s each; more for a longer soak)."""
SEED = 20240611

Ack = tuple[int, int, int, int, int]  # queue id, queue offset, physical offset, length, crc


_CHILD = "tests.broker.store._crash_child"


def _run_child(
    server: ForkServer, data_dir: Path, out_path: Path, seed: int, rng: random.Random
) -> str:
    out_path.touch()
    child = server.start(_CHILD, [str(data_dir), str(seed)], out_path)
    try:
        if rng.random() < 0.2:  # sometimes while it starts up (and recovers)
            time.sleep(rng.uniform(0.0, 0.4))
        else:
            deadline = time.monotonic() + 30
            while not out_path.read_bytes().startswith(b"R") and time.monotonic() < deadline:
                assert _alive(child.pid), "the child died before it was ready"
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.25))
    finally:
        child.kill()
        child.wait()
    return out_path.read_text()


def _alive(pid: int) -> bool:
    """Whether the child runs (not yet a zombie the server has to reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _acks_of(output: str) -> list[Ack]:
    acks = []
    for line in output.splitlines():
        assert not line.startswith("E"), f"a put failed in the child: {line}"
        if line.startswith("A "):
            q, qo, po, n, crc = (int(x) for x in line.split()[1:])
            acks.append((q, qo, po, n, crc))
    return acks


def _check_acknowledged(store: MessageStore, acks: list[Ack]) -> None:
    for queue_id, queue_offset, physical, length, crc in acks:
        message = store.look_message_by_offset(physical)
        assert (message.topic, message.queue_id, message.queue_offset) == (
            TOPIC,
            queue_id,
            queue_offset,
        )
        assert (len(message.body), zlib.crc32(message.body)) == (length, crc)
        queue = store.queues.get(TOPIC, queue_id)
        assert queue is not None
        entry = queue.entry(queue_offset)
        assert entry is not None
        view = store.commit_log.batch_at(entry[0])  # the entry points at the record's batch
        base_queue_offset = RecordBatch(bytes(view)).base_queue_offset
        view.release()
        assert entry[0] + queue_offset - base_queue_offset == physical


def _check_log_and_queues(store: MessageStore) -> None:
    files = store.commit_log.files.files
    position = files[0].start_offset
    end = store.max_physical_offset
    per_queue: dict[int, list[tuple[int, int, int]]] = {q: [] for q in range(QUEUES)}
    while position < end:
        mapped = store.commit_log.files.find(position)
        assert mapped is not None
        check, size = check_at(mapped.view, position - mapped.start_offset, mapped.size, position)
        assert check in (LogCheck.OK, LogCheck.BLANK), (position, check)
        if check is LogCheck.OK:
            at = position - mapped.start_offset
            batch = RecordBatch(bytes(mapped.view[at : at + size]))
            assert batch.crc_ok() and batch.base_physical_offset == position
            assert batch.topic == TOPIC
            records = per_queue[batch.queue_id]
            assert batch.base_queue_offset == len(records)
            records += [(position, size, tag) for tag in batch.tag_hashes.tolist()]
        position += size
    assert position == end  # the log ends on a batch boundary...
    last = store.commit_log.files.find(end) or files[-1]
    tail = last.mm[end - last.start_offset :] if end < last.end_offset else b""
    assert not any(tail)  # ...and nothing follows it
    for queue_id, records in per_queue.items():
        queue = store.queues.get(TOPIC, queue_id)
        entries: list[tuple[int, int, int]] = []
        offset = 0
        while queue is not None and offset < queue.max_offset:
            window = queue.entries(offset, 1 << 30)
            columns = (window[field].tolist() for field in ("offset", "size", "tag"))
            entries += zip(*columns, strict=True)
            offset += len(window)
        assert entries == records, f"queue {queue_id} disagrees with the commit log"


def test_should_keep_every_acknowledged_message_across_sigkills(tmp_path: Path) -> None:
    data_dir = tmp_path / "store"
    rng = random.Random(SEED)
    acknowledged: list[Ack] = []
    with ForkServer(_CHILD) as server:  # the children fork from it: no interpreter start-up each
        for round_number in range(ROUNDS):
            output = _run_child(
                server, data_dir, tmp_path / f"out-{round_number}", round_number, rng
            )
            fresh = _acks_of(output)
            store = MessageStore(crash_config(data_dir))
            report = store.start()
            try:
                assert report.queue_gaps == 0
                # this round's acknowledgements, a sample of the earlier ones, all at the end
                last = round_number == ROUNDS - 1
                earlier = (
                    acknowledged if last else rng.sample(acknowledged, min(300, len(acknowledged)))
                )
                _check_acknowledged(store, fresh + earlier)
                _check_log_and_queues(store)
            finally:
                crash(store)  # leave the files as a crash would, for the next child
            acknowledged += fresh
    assert len({(a[0], a[1]) for a in acknowledged}) == len(acknowledged)  # no offset reused
    assert len(acknowledged) > ROUNDS * 10, "the children barely wrote anything"
