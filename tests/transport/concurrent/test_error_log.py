from __future__ import annotations

import multiprocessing as mp
import struct
import threading
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer, MappedFile, error_log_reader
from aeromq.transport.concurrent.clock import SettableClock, SystemEpochClock
from aeromq.transport.concurrent.distinct_error_log import (
    ENCODED_ERROR_OFFSET,
    FIRST_OBSERVATION_TIMESTAMP_OFFSET,
    LAST_OBSERVATION_TIMESTAMP_OFFSET,
    LENGTH_OFFSET,
    OBSERVATION_COUNT_OFFSET,
    RECORD_ALIGNMENT,
    DistinctErrorLog,
    LoggingErrorHandler,
    error_text,
)

HEADER = struct.Struct("<iiqq")  # Aeron's aeron_error_log_entry_t
Entry = tuple[int, int, int, str]


def read_all(buffer: AtomicBuffer, since_ts_ms: int = 0) -> list[Entry]:
    entries: list[Entry] = []
    count = error_log_reader.read(
        buffer, lambda n, first, last, text: entries.append((n, first, last, text)), since_ts_ms
    )
    assert count == len(entries)
    return entries


def fail(message: str) -> None:
    raise ValueError(message)


def caught(message: str) -> ValueError:
    try:
        fail(message)
    except ValueError as error:
        return error
    raise AssertionError("unreachable")


def test_should_match_the_documented_entry_header() -> None:
    assert HEADER.size == ENCODED_ERROR_OFFSET == 24
    assert (
        LENGTH_OFFSET,
        OBSERVATION_COUNT_OFFSET,
        LAST_OBSERVATION_TIMESTAMP_OFFSET,
        FIRST_OBSERVATION_TIMESTAMP_OFFSET,
    ) == (0, 4, 8, 16)
    assert RECORD_ALIGNMENT == 8


def test_should_write_entries_in_aerons_layout_byte_for_byte() -> None:
    buffer = AtomicBuffer.allocate(1024)
    clock = SettableClock()
    log = DistinctErrorLog(buffer, clock)
    clock.set_time_ms(5)
    assert log.record("first error")
    clock.set_time_ms(9)
    assert log.record("second")
    clock.set_time_ms(12)
    assert log.record("first error")

    raw = buffer.get_bytes(0, 128)
    first_length = 24 + len("first error")
    assert HEADER.unpack_from(raw, 0) == (first_length, 2, 12, 5)
    assert raw[24:first_length] == b"first error"
    second = (first_length + 7) & ~7
    assert second == 40
    assert HEADER.unpack_from(raw, second) == (24 + 6, 1, 9, 9)
    assert raw[second + 24 : second + 30] == b"second"
    assert struct.unpack_from("<i", raw, (second + 30 + 7) & ~7) == (0,)


def test_should_keep_one_entry_per_distinct_error_and_count_repeats() -> None:
    buffer = AtomicBuffer.allocate(64 * 1024)
    clock = SettableClock()
    log = DistinctErrorLog(buffer, clock)
    for time_ms in (100, 200, 300):
        clock.set_time_ms(time_ms)
        assert log.record(caught("disk full"))
    clock.set_time_ms(400)
    assert log.record(caught("disk gone"))
    assert log.record(RuntimeError("never raised"))
    assert log.record(RuntimeError("never raised"))

    entries = read_all(buffer)
    assert [(n, first, last) for n, first, last, _ in entries] == [
        (3, 100, 300),
        (1, 400, 400),
        (2, 400, 400),
    ]
    assert entries[0][3].startswith("Traceback (most recent call last):")
    assert "in fail" in entries[0][3]
    assert entries[0][3].endswith("ValueError: disk full\n")
    assert entries[1][3].endswith("ValueError: disk gone\n")
    assert entries[2][3] == "RuntimeError: never raised\n"


def test_should_tell_errors_apart_by_type_and_message() -> None:
    log = DistinctErrorLog(AtomicBuffer.allocate(4096), SettableClock())
    for error in (KeyError("a"), ValueError("a"), ValueError("b"), ValueError("a")):
        assert log.record(error)
    texts = [text for _, _, _, text in read_all(log.buffer)]
    assert texts == ["KeyError: 'a'\n", "ValueError: a\n", "ValueError: b\n"]
    assert error_text("as is") == "as is"


def test_should_filter_entries_by_last_observation_time() -> None:
    buffer = AtomicBuffer.allocate(4096)
    clock = SettableClock()
    log = DistinctErrorLog(buffer, clock)
    assert not error_log_reader.has_errors(buffer)
    clock.set_time_ms(10)
    log.record("old")
    clock.set_time_ms(20)
    log.record("new")
    clock.set_time_ms(30)
    log.record("old")
    assert error_log_reader.has_errors(buffer)
    assert [text for *_, text in read_all(buffer, since_ts_ms=25)] == ["old"]
    assert [text for *_, text in read_all(buffer, since_ts_ms=20)] == ["old", "new"]
    assert read_all(buffer, since_ts_ms=31) == []


def test_should_refuse_new_errors_that_do_not_fit_but_count_known_ones() -> None:
    buffer = AtomicBuffer.allocate(72)
    log = DistinctErrorLog(buffer, SettableClock())
    assert log.record("x" * 10)  # 34 bytes, next entry at 40
    assert not log.record("y" * 17)  # 41 bytes: 40 + 41 > 72
    assert log.record("x" * 10)
    assert log.record("z")  # 25 bytes: fits at 40, next entry at 72
    assert not log.record("w")  # no room for even a header
    assert [(n, text) for n, _, _, text in read_all(buffer)] == [(2, "x" * 10), (1, "z")]


def test_should_share_one_log_between_writers_that_do_not_know_each_other() -> None:
    buffer = AtomicBuffer.allocate(4096)
    clock = SettableClock()
    first = DistinctErrorLog(buffer, clock)
    second = DistinctErrorLog(buffer, clock)
    assert first.record("a")
    assert second.record("a")  # found by scanning, not appended again
    assert second.record("b")
    assert first.record("b")
    assert first.record("c")
    assert [(n, text) for n, _, _, text in read_all(buffer)] == [(2, "a"), (2, "b"), (1, "c")]


def test_should_stop_appending_at_a_claim_whose_writer_died() -> None:
    buffer = AtomicBuffer.allocate(4096)
    log = DistinctErrorLog(buffer, SettableClock(), claim_timeout_ns=5_000_000)
    assert log.record("before")
    # Another writer claimed the next slot (count 0 -> 1) and died before storing the length.
    buffer.put_int32(32 + OBSERVATION_COUNT_OFFSET, 1)
    assert not log.record("after")
    assert not log.record("after again")  # no second wait: the slot is known to be stuck
    assert log.record("before")
    assert read_all(buffer)[0][0] == 2


def test_should_stop_reading_at_a_length_that_cannot_be_an_entry() -> None:
    buffer = AtomicBuffer.allocate(256)
    DistinctErrorLog(buffer, SettableClock()).record("good")
    buffer.put_int32(32, 10_000)  # past the end of the buffer
    assert [text for *_, text in read_all(buffer)] == ["good"]
    buffer.put_int32(32, 8)  # shorter than a header
    assert [text for *_, text in read_all(buffer)] == ["good"]


def test_should_reject_a_misaligned_buffer() -> None:
    with pytest.raises(ConfigurationError, match="aligned"):
        DistinctErrorLog(AtomicBuffer.allocate(128).slice(4, 64), SettableClock())


def test_should_record_from_many_threads_without_losing_counts() -> None:
    buffer = AtomicBuffer.allocate(64 * 1024)
    log = DistinctErrorLog(buffer, SystemEpochClock())
    repeats = 300

    def work(thread_index: int) -> None:
        for i in range(repeats):
            assert log.record(f"shared {i % 10}")
            assert log.record(f"thread {thread_index} error {i % 5}")

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    counts = {text: n for n, _, _, text in read_all(buffer)}
    assert len(counts) == 10 + 4 * 5
    assert all(counts[f"shared {i}"] == 4 * repeats // 10 for i in range(10))
    assert all(counts[f"thread {t} error {i}"] == repeats // 5 for t in range(4) for i in range(5))


SHARED_TEXTS = 1000
OWN_TEXTS = 30


def _record_in_process(path: str, process_index: int, repeats: int, barrier: Any) -> None:
    mapped = MappedFile.open(path)
    log = DistinctErrorLog(mapped.buffer, SystemEpochClock())
    barrier.wait(30)
    for i in range(repeats):
        if not log.record(f"shared error {i % SHARED_TEXTS}"):
            raise SystemExit(2)
        if not log.record(f"process {process_index} error {i % OWN_TEXTS}"):
            raise SystemExit(3)


def test_should_record_distinct_errors_from_two_processes_into_one_log(shm_dir: Path) -> None:
    path = shm_dir / "errors.dat"
    mapped = MappedFile.create(path, 256 * 1024)
    repeats = 3_000
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(2)
    processes = [
        ctx.Process(target=_record_in_process, args=(str(path), n, repeats, barrier))
        for n in range(2)
    ]
    try:
        for process in processes:
            process.start()
        for process in processes:
            process.join(60)
        assert [process.exitcode for process in processes] == [0, 0]
        entries = read_all(mapped.buffer)
        counts = {text: n for n, _, _, text in entries}
        assert len(entries) == len(counts) == SHARED_TEXTS + 2 * OWN_TEXTS  # each text once
        assert all(
            counts[f"shared error {i}"] == 2 * repeats // SHARED_TEXTS for i in range(SHARED_TEXTS)
        )
        assert all(
            counts[f"process {n} error {i}"] == repeats // OWN_TEXTS
            for n in range(2)
            for i in range(OWN_TEXTS)
        )
        assert all(first <= last for _, first, last, _ in entries)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join(5)
        mapped.close()


def test_should_hand_unrecordable_errors_to_the_fallback() -> None:
    buffer = AtomicBuffer.allocate(64)
    lines: list[str] = []
    handler = LoggingErrorHandler(DistinctErrorLog(buffer, SettableClock()), lines.append)
    handler(ValueError("short"))
    assert lines == []
    handler(ValueError("a message much longer than what is left"))
    assert lines == ["unrecordable error: ValueError: a message much longer than what is left\n"]


def test_should_write_unrecordable_errors_to_stderr_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    handler = LoggingErrorHandler(DistinctErrorLog(AtomicBuffer.allocate(16), SettableClock()))
    handler(OSError("no space"))
    assert capsys.readouterr().err == "unrecordable error: OSError: no space\n"
