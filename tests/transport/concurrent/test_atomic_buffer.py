from __future__ import annotations

import multiprocessing as mp
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.transport import IndexOutOfBoundsError, TransportError
from aeromq.transport.concurrent import AtomicBuffer, MappedFile


def test_should_round_trip_plain_integers_little_endian() -> None:
    b = AtomicBuffer.allocate(64)
    b.put_int8(0, -2)
    b.put_int16(1, -300)
    b.put_int32(3, -70000)
    b.put_int64(7, -(2**40))
    assert (b.get_int8(0), b.get_int16(1), b.get_int32(3), b.get_int64(7)) == (
        -2,
        -300,
        -70000,
        -(2**40),
    )
    assert b.get_uint8(0) == 254
    assert b.get_uint16(1) == 65536 - 300
    assert struct.unpack_from("<bhiq", bytes(memoryview(b)[:15])) == (-2, -300, -70000, -(2**40))


def test_should_truncate_unsigned_values_like_java_casts() -> None:
    b = AtomicBuffer.allocate(16)
    b.put_int32(0, 0xFFFFFFFF)
    assert b.get_int32(0) == -1
    b.put_int16(4, 0xFFFF)
    assert b.get_int16(4) == -1


def test_should_reject_values_that_do_not_fit() -> None:
    b = AtomicBuffer.allocate(16)
    with pytest.raises(OverflowError, match="value=4294967296"):
        b.put_int32(0, 2**32)


@pytest.mark.parametrize(
    ("call", "args"),
    [
        ("get_int64", (-1,)),
        ("get_int64", (57,)),
        ("get_int32", (61,)),
        ("put_int8", (64, 1)),
        ("get_bytes", (60, 5)),
        ("put_bytes", (60, b"12345")),
        ("set_memory", (0, 65, 0)),
        ("get_int64_volatile", (64,)),
        ("compare_and_set_int32", (64, 0, 1)),
    ],
)
def test_should_raise_index_out_of_bounds_with_values(call: str, args: tuple[int, ...]) -> None:
    b = AtomicBuffer.allocate(64)
    with pytest.raises(IndexOutOfBoundsError, match="capacity=64") as info:
        getattr(b, call)(*args)
    assert isinstance(info.value, IndexError)
    assert isinstance(info.value, TransportError)


def test_should_refuse_misaligned_atomic_access() -> None:
    b = AtomicBuffer.allocate(64)
    with pytest.raises(
        IndexOutOfBoundsError, match="misaligned atomic access: index=4 alignment=8"
    ):
        b.get_int64_volatile(4)
    with pytest.raises(IndexOutOfBoundsError, match="alignment=4"):
        b.put_int32_ordered(2, 1)


def test_should_compare_and_set_only_when_expected_matches() -> None:
    b = AtomicBuffer.allocate(64)
    b.put_int64(8, 10)
    assert not b.compare_and_set_int64(8, 11, 12)
    assert b.get_int64(8) == 10
    assert b.compare_and_set_int64(8, 10, 12)
    assert b.get_int64_volatile(8) == 12
    b.put_int32(16, -1)
    assert b.compare_and_set_int32(16, -1, 5)
    assert b.get_int32(16) == 5


def test_should_return_previous_value_from_read_modify_write() -> None:
    b = AtomicBuffer.allocate(64)
    assert b.get_and_add_int64(0, 5) == 0
    assert b.get_and_add_int64(0, -2) == 5
    assert b.get_and_set_int64(0, 100) == 3
    assert b.get_and_add_int32(8, 7) == 0
    assert b.get_and_set_int32(8, 1) == 7
    assert b.add_int64_ordered(16, 4) == 0
    assert b.get_int64(16) == 4
    assert b.get_int64(0) == 100


def test_should_copy_bytes_in_and_out() -> None:
    b = AtomicBuffer.allocate(64)
    b.put_bytes(3, b"hello world", 6, 5)
    assert b.get_bytes(3, 5) == b"world"
    b.put_bytes(10, bytearray(b"abc"))
    assert b.get_bytes(10, 3) == b"abc"
    b.copy_within(20, 10, 3)
    assert b.get_bytes(20, 3) == b"abc"
    b.set_memory(10, 3, 0x7A)
    assert b.get_bytes(10, 3) == b"zzz"
    with pytest.raises(IndexOutOfBoundsError, match="src_length=3"):
        b.put_bytes(0, b"abc", 2, 2)


def test_should_view_a_region_of_another_buffer() -> None:
    b = AtomicBuffer.allocate(128)
    region = b.slice(64, 32)
    region.put_int64_ordered(0, 42)
    assert b.get_int64(64) == 42
    assert region.capacity == 32
    with pytest.raises(IndexOutOfBoundsError, match="capacity=32"):
        region.get_int64(32)
    with pytest.raises(IndexOutOfBoundsError, match="source_length=128"):
        b.slice(100, 64)


def test_should_write_strings_with_length_prefix() -> None:
    b = AtomicBuffer.allocate(64)
    assert b.put_string_ascii(4, "aeron:ipc") == 13
    assert b.get_string_ascii(4) == "aeron:ipc"


def test_should_make_accesses_fail_cleanly_after_release() -> None:
    b = AtomicBuffer.allocate(64)
    b.release()
    assert b.capacity == 0
    with pytest.raises(IndexOutOfBoundsError):
        b.get_int64(0)


def test_should_refuse_release_while_a_view_is_exported() -> None:
    b = AtomicBuffer.allocate(64)
    view = memoryview(b)
    with pytest.raises(BufferError):
        b.release()
    view.release()
    b.release()


def test_should_share_a_mapped_file_between_mappings(shm_dir: Path) -> None:
    path = shm_dir / "shared.dat"
    with MappedFile.create(path, 4096) as writer, MappedFile.open(path) as reader:
        writer.buffer.put_int64_ordered(0, 77)
        assert reader.buffer.get_int64_volatile(0) == 77
        assert reader.length == 4096


def _hammer(path: str, iterations: int) -> None:
    with MappedFile.open(path) as mapped:
        buffer = mapped.buffer
        for _ in range(iterations):
            buffer.get_and_add_int64(0, 1)
            while True:  # a CAS loop: the classic lost-update test
                current = buffer.get_int64_volatile(8)
                if buffer.compare_and_set_int64(8, current, current + 1):
                    break


def test_should_lose_no_update_across_processes(shm_dir: Path) -> None:
    path = shm_dir / "counter.dat"
    processes, iterations = 4, 20_000
    with MappedFile.create(path, 4096) as mapped:
        ctx = mp.get_context("spawn")
        workers = [
            ctx.Process(target=_hammer, args=(str(path), iterations)) for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
            assert worker.exitcode == 0
        assert mapped.buffer.get_int64_volatile(0) == processes * iterations
        assert mapped.buffer.get_int64_volatile(8) == processes * iterations


@given(st.integers(0, 56), st.integers(-(2**63), 2**63 - 1))
def test_should_read_back_any_int64_at_any_index(index: int, value: int) -> None:
    b = AtomicBuffer.allocate(64)
    b.put_int64(index, value)
    assert b.get_int64(index) == value
    assert b.get_bytes(index, 8) == struct.pack("<q", value)
