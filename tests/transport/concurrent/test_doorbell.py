"""The native futex calls and the doorbell's eventcount, within a process and across two."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport import IndexOutOfBoundsError
from aeromq.transport.concurrent import (
    AtomicBuffer,
    CountersManager,
    CountersReader,
    Doorbell,
    MappedFile,
)
from aeromq.transport.concurrent.clock import SettableClock
from aeromq.transport.concurrent.counters_descriptor import COUNTER_LENGTH, METADATA_LENGTH
from aeromq.transport.concurrent.doorbell import (
    DOORBELL_TYPE_ID,
    FUTEX_NOT_EXPECTED,
    FUTEX_TIMED_OUT,
    RUNG,
)

# -- the native calls ------------------------------------------------------------------------


def test_should_time_out_a_futex_wait_nobody_wakes() -> None:
    buffer = AtomicBuffer.allocate(64)
    start = time.monotonic_ns()
    assert buffer.futex_wait_int32(8, 0, 20_000_000) == FUTEX_TIMED_OUT
    assert time.monotonic_ns() - start >= 19_000_000


def test_should_return_at_once_when_the_word_is_not_the_expected_one() -> None:
    buffer = AtomicBuffer.allocate(64)
    buffer.put_int32_volatile(8, 7)
    start = time.monotonic_ns()
    assert buffer.futex_wait_int32(8, 6, 5_000_000_000) == FUTEX_NOT_EXPECTED
    assert time.monotonic_ns() - start < 1_000_000_000


def test_should_wake_a_futex_waiter_of_another_thread() -> None:
    buffer = AtomicBuffer.allocate(64)
    results: list[int] = []
    waiter = threading.Thread(target=lambda: results.append(buffer.futex_wait_int32(0, 0, -1)))
    waiter.start()
    deadline = time.monotonic() + 10
    woken = 0
    while not results and time.monotonic() < deadline:  # the GIL is free while it sleeps
        woken += buffer.futex_wake_int32(0, 1)
        time.sleep(0.001)
    waiter.join(10)
    assert results == [0]
    assert woken == 1


def test_should_reject_a_misaligned_or_out_of_bounds_futex_word() -> None:
    buffer = AtomicBuffer.allocate(64)
    with pytest.raises(IndexOutOfBoundsError, match="misaligned"):
        buffer.futex_wait_int32(2, 0, 0)
    with pytest.raises(IndexOutOfBoundsError):
        buffer.futex_wake_int32(64, 1)
    with pytest.raises(ValueError, match="count"):
        buffer.futex_wake_int32(0, -1)


def test_should_not_release_a_buffer_while_a_thread_waits_on_it() -> None:
    buffer = AtomicBuffer.allocate(64)
    waiter = threading.Thread(target=lambda: buffer.futex_wait_int32(0, 0, 2_000_000_000))
    waiter.start()
    time.sleep(0.05)
    try:
        with pytest.raises(BufferError):
            buffer.release()
    finally:
        buffer.futex_wake_int32(0, 1)
        waiter.join(10)
    buffer.release()


def test_should_and_and_or_bits_of_a_word_atomically() -> None:
    buffer = AtomicBuffer.allocate(64)
    buffer.put_int32(4, 0b1011)
    assert buffer.get_and_and_int32(4, ~1) == 0b1011
    assert buffer.get_and_or_int32(4, 0b100) == 0b1010
    assert buffer.get_int32(4) == 0b1110


# -- the doorbell ----------------------------------------------------------------------------


def test_should_see_a_ring_between_prepare_and_wait_without_sleeping() -> None:
    bell = Doorbell.allocate()
    observed = bell.prepare()
    assert bell.ring() is False  # nobody sleeps: no wake call
    start = time.monotonic_ns()
    assert bell.await_ring(observed, 5_000_000_000) == RUNG
    assert time.monotonic_ns() - start < 1_000_000_000


def test_should_time_out_and_leave_the_sleeper_flag_for_the_next_ring_to_clear() -> None:
    bell = Doorbell.allocate()
    observed = bell.prepare()
    assert bell.await_ring(observed, 1_000_000) == FUTEX_TIMED_OUT
    assert bell.prepare() == observed | 1
    assert bell.ring() is True
    assert bell.prepare() == observed + 2


def test_should_wake_every_thread_asleep_on_one_doorbell() -> None:
    bell = Doorbell.allocate()
    results: list[int] = []
    ready = threading.Barrier(3)

    def wait() -> None:
        observed = bell.prepare()
        ready.wait(10)
        results.append(bell.await_ring(observed, 10_000_000_000))

    threads = [threading.Thread(target=wait) for _ in range(2)]
    for thread in threads:
        thread.start()
    ready.wait(10)
    time.sleep(0.05)  # both asleep (or about to find the word changed)
    start = time.monotonic()
    bell.ring()
    for thread in threads:
        thread.join(10)
    assert time.monotonic() - start < 5
    assert len(results) == 2 and FUTEX_TIMED_OUT not in results


def test_should_map_a_doorbell_in_the_low_half_of_a_counter(tmp_path: Path) -> None:
    mapped = MappedFile.create(tmp_path / "counters", 4 * (METADATA_LENGTH + COUNTER_LENGTH))
    metadata = mapped.buffer.slice(0, 4 * METADATA_LENGTH)
    values = mapped.buffer.slice(4 * METADATA_LENGTH, 4 * COUNTER_LENGTH)
    manager = CountersManager(metadata, values, SettableClock())
    other = manager.allocate("other", type_id=7)
    counter_id = manager.allocate("doorbell", type_id=DOORBELL_TYPE_ID, registration_id=99)
    reader = CountersReader(metadata, values)
    assert Doorbell.is_doorbell_counter(reader, counter_id)
    assert not Doorbell.is_doorbell_counter(reader, other)
    assert not Doorbell.is_doorbell_counter(reader, 1_000)
    bell = Doorbell.for_counter(reader, counter_id)
    assert (bell.counter_id, bell.registration_id) == (counter_id, 99)
    bell.ring()
    assert manager.get_counter_value(counter_id) == 2
    assert bell.still_allocated(reader)
    manager.free(counter_id)
    assert not bell.still_allocated(reader)
    with pytest.raises(IndexOutOfBoundsError):
        Doorbell.for_counter(reader, 4)


# -- across processes: no lost wakeup ---------------------------------------------------------

ROUNDS = 10_000
WAIT_TIMEOUT_NS = 2_000_000_000
BOUND_S = 60.0
# the word layout of the stress test's file: two doorbells and two round counters
PING_BELL, PONG_BELL, PING_ROUND, PONG_ROUND = 0, 64, 128, 192


def _wait_for(bell: Doorbell, buffer: AtomicBuffer, offset: int, value: int) -> tuple[int, int]:
    """Wait on ``bell`` until the i32 at ``offset`` is ``value``: (waits that timed out, waits
    that slept and were woken)."""
    timeouts = woken = 0
    while True:
        observed = bell.prepare()
        if buffer.get_int32_volatile(offset) == value:  # the poll between prepare and wait
            return timeouts, woken
        result = bell.await_ring(observed, WAIT_TIMEOUT_NS)
        woken += result == 0
        if result == FUTEX_TIMED_OUT:
            timeouts += 1
            if timeouts > 2:
                return timeouts, woken


def _pong(path: str, results: Any) -> None:
    mapped = MappedFile.open(path)
    buffer = mapped.buffer
    ping, pong = Doorbell(buffer, PING_BELL), Doorbell(buffer, PONG_BELL)
    results.put("ready")
    timeouts = woken = 0
    for round_number in range(1, ROUNDS + 1):
        timed_out, slept = _wait_for(pong, buffer, PING_ROUND, round_number)
        timeouts, woken = timeouts + timed_out, woken + slept
        buffer.put_int32_volatile(PONG_ROUND, round_number)  # publish, then ring
        ping.ring()
    results.put((timeouts, woken))


def test_should_lose_no_wakeup_between_two_processes(shm_dir: Path) -> None:
    path = shm_dir / "doorbells"
    mapped = MappedFile.create(path, 4096)
    buffer = mapped.buffer
    ping, pong = Doorbell(buffer, PING_BELL), Doorbell(buffer, PONG_BELL)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    child = ctx.Process(target=_pong, args=(str(path), results))
    child.start()
    try:
        # the rounds start once the child has mapped the file: a spawned interpreter's start-up
        # (its imports) took over the first round's 2 s wait on a loaded machine
        assert results.get(timeout=BOUND_S) == "ready"
        start = time.monotonic()
        timeouts = woken = 0
        for round_number in range(1, ROUNDS + 1):
            buffer.put_int32_volatile(PING_ROUND, round_number)  # publish, then ring
            pong.ring()
            timed_out, slept = _wait_for(ping, buffer, PONG_ROUND, round_number)
            timeouts, woken = timeouts + timed_out, woken + slept
            assert time.monotonic() - start < BOUND_S, f"stuck at round={round_number}"
        child_timeouts, child_woken = results.get(timeout=BOUND_S)
        elapsed = time.monotonic() - start
    finally:
        child.join(BOUND_S)
        if child.is_alive():
            child.kill()
    assert (timeouts, child_timeouts) == (0, 0)  # every wait ended by a ring, none by the clock
    assert woken + child_woken > ROUNDS // 4  # the rings did wake sleepers, often
    assert elapsed < BOUND_S / 2
    assert buffer.get_int32_volatile(PONG_ROUND) == ROUNDS
