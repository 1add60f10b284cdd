"""Many producer processes into one consumer over a ManyToOneRingBuffer in a /dev/shm file."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import struct
import time
from collections.abc import Callable
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from aeromq.transport.concurrent import (
    INSUFFICIENT_CAPACITY,
    AtomicBuffer,
    ManyToOneRingBuffer,
    MappedFile,
)
from aeromq.transport.concurrent.ring_buffer_descriptor import TRAILER_LENGTH

CAPACITY = 64 * 1024
_ID_SEQ = struct.Struct("<ii")
_ctx = mp.get_context("spawn")


def _record(producer_id: int, seq: int) -> bytes:
    """8 bytes of (producer, seq), then 0..40 copies of a byte both determine: torn shows."""
    fill = (seq * 7 + producer_id) % 41
    return _ID_SEQ.pack(producer_id, seq) + bytes([(producer_id * 31 + seq) & 0xFF]) * fill


def _produce(producer_id: int, first: int, last: int, mode: str, ring: ManyToOneRingBuffer) -> None:
    msg_type_id = producer_id + 1
    seq = first
    deadline = time.monotonic() + 90
    while seq < last:
        if mode == "batch":
            records = [_record(producer_id, s) for s in range(seq, min(seq + 16, last))]
            written = ring.write_batch(msg_type_id, records)
            seq += written
            if written == 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"producer {producer_id} stuck at {seq}")
                os.sched_yield()
            continue
        data = _record(producer_id, seq)
        if mode == "claim":
            index = ring.try_claim(msg_type_id, len(data))
            if index != INSUFFICIENT_CAPACITY:
                ring.buffer.put_bytes(index, data)
                ring.commit(index)
                seq += 1
                continue
        elif ring.write(msg_type_id, data):
            seq += 1
            continue
        if time.monotonic() > deadline:
            raise TimeoutError(f"producer {producer_id} stuck at {seq}")
        os.sched_yield()


def _producer(path: str, producer_id: int, count: int, mode: str, go: Event) -> None:
    mapped = MappedFile.open(path)
    ring = ManyToOneRingBuffer(mapped.buffer)
    half = count // 2
    _produce(producer_id, 0, half, mode, ring)
    go.wait(60)  # the second half waits for the test's signal (a no-op unless it withholds it)
    _produce(producer_id, half, count, mode, ring)
    mapped.close()


def _victim(path: str, producer_id: int, committed: int, claimed: Event) -> None:
    """Commit some records, claim one more, half-write it, and wait to be killed."""
    mapped = MappedFile.open(path)
    ring = ManyToOneRingBuffer(mapped.buffer)
    _produce(producer_id, 0, committed, "write", ring)
    data = _record(producer_id, committed)
    index = ring.try_claim(producer_id + 1, len(data))
    for _ in range(1_000_000):
        if index != INSUFFICIENT_CAPACITY:
            break
        os.sched_yield()
        index = ring.try_claim(producer_id + 1, len(data))
    assert index != INSUFFICIENT_CAPACITY, "no room to claim"
    ring.buffer.put_bytes(index, data[: len(data) // 2])
    claimed.set()
    time.sleep(120)


class Checker:
    """Consumer side: each producer's records arrive once, in order, intact."""

    def __init__(self, producers: int) -> None:
        self.expected = [0] * producers

    def __call__(self, msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        data = buffer.get_bytes(index, length)
        producer_id, seq = _ID_SEQ.unpack_from(data)
        assert msg_type_id == producer_id + 1
        assert seq == self.expected[producer_id], (producer_id, seq, self.expected[producer_id])
        fill = (seq * 7 + producer_id) % 41
        pattern = (producer_id * 31 + seq) & 0xFF
        assert length == 8 + fill and data.count(pattern, 8) == fill, "torn record"
        self.expected[producer_id] = seq + 1


def _consume(
    ring: ManyToOneRingBuffer,
    checker: Checker,
    total: int,
    procs: list[Any],
    on_idle: Callable[[], None] = lambda: None,
    timeout_s: float = 90.0,
) -> None:
    deadline = time.monotonic() + timeout_s
    while sum(checker.expected) < total:
        if ring.read(checker, 4096) == 0:
            on_idle()
            failed = [p.exitcode for p in procs if p.exitcode not in (None, 0, -signal.SIGKILL)]
            assert not failed, f"producer failed: {failed}"
            assert time.monotonic() < deadline, f"stalled at {checker.expected}"
            os.sched_yield()


def _ring_file(shm_dir: Path) -> tuple[MappedFile, ManyToOneRingBuffer]:
    mapped = MappedFile.create(shm_dir / "to-consumer.ring", CAPACITY + TRAILER_LENGTH)
    return mapped, ManyToOneRingBuffer(mapped.buffer)


def _stop(procs: list[Any]) -> None:
    for proc in procs:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
            proc.join()


def test_should_deliver_every_record_once_in_order_from_four_producer_processes(
    shm_dir: Path,
) -> None:
    count = 250_000
    mapped, ring = _ring_file(shm_dir)
    go = _ctx.Event()
    go.set()
    modes = ["write", "write", "batch", "claim"]
    procs = [
        _ctx.Process(target=_producer, args=(str(mapped.path), pid, count, mode, go))
        for pid, mode in enumerate(modes)
    ]
    for proc in procs:
        proc.start()
    checker = Checker(len(procs))
    try:
        _consume(ring, checker, count * len(procs), procs)
    finally:
        _stop(procs)
    assert checker.expected == [count] * len(procs)
    assert [p.exitcode for p in procs] == [0] * len(procs)
    assert ring.size() == 0
    assert ring.read(checker) == 0
    mapped.close()


def test_should_unblock_a_record_left_by_a_killed_producer_and_carry_on(shm_dir: Path) -> None:
    count, committed, unblock_timeout_s = 20_000, 100, 1.0
    mapped, ring = _ring_file(shm_dir)
    go, claimed = _ctx.Event(), _ctx.Event()
    procs = [
        _ctx.Process(target=_producer, args=(str(mapped.path), pid, count, "write", go))
        for pid in range(2)
    ]
    victim = _ctx.Process(target=_victim, args=(str(mapped.path), 2, committed, claimed))
    for proc in [*procs, victim]:
        proc.start()
    checker = Checker(3)
    unblocked: list[float] = []
    state = {"head": -1, "since": time.monotonic(), "killed_at": 0.0}

    def on_idle() -> None:
        now = time.monotonic()
        if claimed.is_set() and not state["killed_at"]:
            os.kill(victim.pid or 0, signal.SIGKILL)
            victim.join(10)
            state["killed_at"] = now
            go.set()  # the other producers' second halves now queue behind the dead claim
        head = ring.consumer_position()
        if head != state["head"]:
            state["head"], state["since"] = head, now
        elif ring.size() > 0 and now - state["since"] > unblock_timeout_s and ring.unblock():
            unblocked.append(now - state["since"])
            state["since"] = now

    try:
        _consume(ring, checker, 2 * count + committed, [*procs, victim], on_idle)
    finally:
        go.set()
        _stop([*procs, victim])
    assert victim.exitcode == -signal.SIGKILL
    assert checker.expected == [count, count, committed]  # the claimed record never arrives
    assert len(unblocked) == 1  # once, after the head stood still for the timeout
    assert ring.size() == 0
    mapped.close()
