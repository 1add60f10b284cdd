"""The store files' read-ahead advice, read back from the kernel: ``/proc/self/smaps`` lists each
mapping (a VMA) of a file with its flags, ``rr`` where ``MADV_RANDOM`` is in force. The part of
the last file still to be written is advised random, the rest normal
(``broker/store/_mapped_file.py``, "Read-ahead")."""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from pathlib import Path

from aeromq.broker.store import InboundMessage, MessageStore
from aeromq.broker.store._mapped_file import MappedFile
from aeromq.broker.store._mapped_file_queue import MappedFileQueue

PAGE = mmap.PAGESIZE
TOPIC = "ReadAhead"


def _advice(mapped: MappedFile) -> list[tuple[int, int, bool]]:
    """The mappings of ``mapped``'s file in this process, in file order: (first byte, end,
    whether advised random), relative to the file."""
    inode = os.stat(mapped.path).st_ino
    found: list[tuple[int, int, bool]] = []
    current: tuple[int, int] | None = None
    with open("/proc/self/smaps", encoding="utf-8") as smaps:
        for line in smaps:
            fields = line.split()
            if "-" in fields[0] and len(fields) >= 5 and fields[0][0] in "0123456789abcdef":
                begin, end = (int(bound, 16) for bound in fields[0].split("-"))
                file_offset = int(fields[2], 16)
                is_ours = fields[4] == str(inode)
                current = (file_offset, file_offset + end - begin) if is_ours else None
            elif fields[0] == "VmFlags:" and current is not None:
                found.append((*current, "rr" in fields[1:]))
                current = None
    return sorted(found)


def test_should_advise_a_new_file_random_and_the_one_before_normal_once_it_rolls(
    tmp_path: Path,
) -> None:
    queue = MappedFileQueue(tmp_path / "q", 16 * PAGE)
    queue.load()
    try:
        first = queue.create(0)
        assert _advice(first) == [(0, 16 * PAGE, True)]
        second = queue.create(16 * PAGE)
        assert _advice(first) == [(0, 16 * PAGE, False)]
        assert _advice(second) == [(0, 16 * PAGE, True)]
    finally:
        queue.close()


def test_should_advise_the_written_part_normal_and_the_rest_random_from_the_end_found(
    tmp_path: Path,
) -> None:
    queue = MappedFileQueue(tmp_path / "q", 16 * PAGE)
    queue.load()
    queue.create(0).mm[: 5 * PAGE + 10] = b"\x07" * (5 * PAGE + 10)
    queue.close()
    again = MappedFileQueue(tmp_path / "q", 16 * PAGE)
    again.load()
    try:
        loaded = again.files[0]
        assert _advice(loaded) == [(0, 16 * PAGE, False)]  # as mapped: recovery reads it
        again.mark_end(5 * PAGE + 10)  # the page holding the end is still written to
        assert _advice(loaded) == [(0, 5 * PAGE, False), (5 * PAGE, 16 * PAGE, True)]
        again.mark_end(16 * PAGE)  # a full file: nothing to advise
        assert _advice(loaded) == [(0, 5 * PAGE, False), (5 * PAGE, 16 * PAGE, True)]
    finally:
        again.close()


def test_should_advise_from_the_truncation_point_on(tmp_path: Path) -> None:
    queue = MappedFileQueue(tmp_path / "q", 16 * PAGE)
    queue.load()
    try:
        for start in (0, 16 * PAGE):
            queue.create(start).mm[:] = b"\x07" * (16 * PAGE)
        queue.truncate(3 * PAGE)
        assert _advice(queue.files[0]) == [(0, 3 * PAGE, False), (3 * PAGE, 16 * PAGE, True)]
    finally:
        queue.close()


def test_should_advise_a_restarted_stores_log_from_its_end(
    open_store: Callable[..., MessageStore],
) -> None:
    store = open_store(commit_log_segment_bytes=64 * PAGE)
    store.put_messages([InboundMessage(TOPIC, 0, b"x" * 1000) for _ in range(20)])
    end = store.commit_log.max_offset
    assert PAGE < end < 64 * PAGE
    segment = store.commit_log.files.files[0]
    assert _advice(segment) == [(0, 64 * PAGE, True)]  # made by the appends: all of it
    store.shutdown()
    again = open_store(commit_log_segment_bytes=64 * PAGE)
    assert again.commit_log.max_offset == end
    recovered = again.commit_log.files.files[0]
    boundary = end // PAGE * PAGE
    assert _advice(recovered) == [(0, boundary, False), (boundary, 64 * PAGE, True)]
