"""The log upkeep IPC publications, network publications and images share: cleaning behind the
slowest reader, the blocked-writer test, deleting the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.log_factory import delete_log
from aeromq.transport.driver.log_unblocker import is_possibly_blocked
from aeromq.transport.driver.term_cleaner import clean_term
from aeromq.transport.logbuffer import log_buffer_descriptor as d

TERM = 1024
BITS = 10


@pytest.fixture
def terms() -> list[AtomicBuffer]:
    buffers = [AtomicBuffer.allocate(TERM) for _ in range(3)]
    for buffer in buffers:
        buffer.set_memory(0, TERM, 0xFF)
    return buffers


def test_should_clean_towards_the_position_but_not_past_the_end_of_the_term(
    terms: list[AtomicBuffer],
) -> None:
    assert clean_term(terms, 0, 256, TERM, BITS) == 256
    assert terms[0].get_bytes(0, 256) == bytes(256)
    assert terms[0].get_uint8(256) == 0xFF
    assert clean_term(terms, 256, 3 * TERM, TERM, BITS) == TERM  # one term at a time
    assert terms[0].get_bytes(0, TERM) == bytes(TERM)
    assert terms[1].get_uint8(0) == 0xFF
    assert clean_term(terms, TERM, TERM + 4, TERM, BITS) == TERM + 4  # a short range
    assert terms[1].get_bytes(0, 4) == bytes(4)
    assert terms[1].get_uint8(8) == 0xFF


def test_should_leave_a_log_already_clean_to_the_position(terms: list[AtomicBuffer]) -> None:
    assert clean_term(terms, 512, 256, TERM, BITS) == 512
    assert terms[0].get_bytes(0, TERM) == b"\xff" * TERM


def test_should_suspect_a_block_when_the_consumer_lags_or_sits_in_another_term() -> None:
    meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
    d.initialise_tails(meta, 0)
    assert not is_possibly_blocked(meta, BITS, 64, 64)
    assert is_possibly_blocked(meta, BITS, 128, 64)
    d.set_active_term_count_ordered(meta, 1)
    assert is_possibly_blocked(meta, BITS, TERM, TERM - 32)


def test_should_delete_a_log_file_and_forgive_one_already_gone(tmp_path: Path) -> None:
    path = tmp_path / "1.logbuffer"
    path.write_bytes(b"log")
    assert delete_log(str(path))
    assert not path.exists()
    assert delete_log(str(path))
    assert not delete_log(str(tmp_path))  # a directory cannot be unlinked: a free failure
