"""Counters shared between processes through a mapped file, as cnc.dat shares them."""

from __future__ import annotations

import multiprocessing as mp
import struct
import time
from pathlib import Path
from typing import Any

from aeromq.transport.concurrent import MappedFile
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH, METADATA_LENGTH
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.position import Position, ReadablePosition

COUNTERS = 16
VALUES_LENGTH = COUNTERS * COUNTER_LENGTH
METADATA_TOTAL = COUNTERS * METADATA_LENGTH
INCREMENTS = 50_000
TIMEOUT_S = 30.0


def _child(path: str, results: Any) -> None:
    mapped = MappedFile.open(path)
    buffer = mapped.buffer
    reader = CountersReader(
        buffer.slice(0, METADATA_TOTAL), buffer.slice(METADATA_TOTAL, VALUES_LENGTH)
    )
    seen: list[tuple[int, int, bytes, str, int, int, int, int]] = []
    reader.for_each(
        lambda counter_id, type_id, key, label: seen.append(
            (
                counter_id,
                type_id,
                key.get_bytes(0, 16),
                label,
                reader.get_counter_value(counter_id),
                reader.get_counter_registration_id(counter_id),
                reader.get_counter_owner_id(counter_id),
                reader.get_counter_reference_id(counter_id),
            )
        )
    )
    results.put(seen)

    values = reader.values_buffer
    go = ReadablePosition(values, 2)
    deadline = time.monotonic() + TIMEOUT_S
    while go.get_volatile() == 0 and time.monotonic() < deadline:
        time.sleep(0)
    shared = AtomicCounter(values, 1)
    increment = shared.increment
    for _ in range(INCREMENTS):
        increment()
    Position(values, 3).set_ordered(INCREMENTS)
    results.put("done")


def test_should_read_and_update_counters_across_processes(shm_dir: Path) -> None:
    path = shm_dir / "counters.dat"
    mapped = MappedFile.create(path, METADATA_TOTAL + VALUES_LENGTH)
    buffer = mapped.buffer
    manager = CountersManager(
        buffer.slice(0, METADATA_TOTAL),
        buffer.slice(METADATA_TOTAL, VALUES_LENGTH),
        SettableClock(),
    )
    position_key = struct.pack("<qii", 42, 1985493803, 1001)
    sub_pos = manager.allocate(
        "sub-pos: 42 1985493803 1001 aeron:ipc @0",
        type_id=4,
        key=position_key,
        registration_id=42,
        owner_id=3,
        reference_id=41,
    )
    shared = manager.allocate("shared", type_id=0)
    go = manager.allocate("go")
    child_position = manager.allocate("child-pos", type_id=12)
    gone = manager.allocate("freed")
    manager.free(gone)
    manager.set_counter_value(sub_pos, 8192)

    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(target=_child, args=(str(path), results))
    child.start()
    try:
        seen = results.get(timeout=TIMEOUT_S)
        assert seen == [
            (
                sub_pos,
                4,
                position_key[:16],
                "sub-pos: 42 1985493803 1001 aeron:ipc @0",
                8192,
                42,
                3,
                41,
            ),
            (shared, 0, bytes(16), "shared", 0, 0, 0, 0),
            (go, 0, bytes(16), "go", 0, 0, 0, 0),
            (child_position, 12, bytes(16), "child-pos", 0, 0, 0, 0),
        ]

        counter = AtomicCounter(manager.values_buffer, shared)
        manager.set_counter_value(go, 1)
        increment = counter.increment
        for _ in range(INCREMENTS):
            increment()
        assert results.get(timeout=TIMEOUT_S) == "done"
        assert counter.get() == 2 * INCREMENTS
        assert manager.get_counter_value(child_position) == INCREMENTS
    finally:
        child.join(TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join(5)
        results.close()
        manager.metadata_buffer.release()
        manager.values_buffer.release()
        mapped.close()
    assert child.exitcode == 0
