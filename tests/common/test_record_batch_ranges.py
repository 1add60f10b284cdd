"""A local read's batches (``read_pulled_batches`` with ``ranges``: batches at listed places of
a mapped commit log file, ``pipeline/_local_reads.py``) read exactly as the same batches back to
back, and a range that does not hold its batch is refused as a broken answer is."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.client import CorruptMessageError
from aeromq.common import encode_batch, patch_batch
from aeromq.common.record_batch import _native as native
from aeromq.common.record_batch import join_ranges
from aeromq.common.record_batch import reader as pulled_reader
from aeromq.consumer import read_pulled_batches
from tests.common.test_record_batch_reader import (
    BORN_HOST,
    QUEUE,
    STORE_HOST,
    TOPIC,
    _answers,
    _columns,
)

_SETTINGS = settings(
    max_examples=100,
    deadline=None,
    # the reader_module fixture holds for every example of a test: that is what it is for
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _batches(answer: bytes) -> list[bytes]:
    """The stored batches of a back-to-back answer."""
    out = []
    at = 0
    while at < len(answer):
        length = struct.unpack_from("<i", answer, at)[0]
        out.append(answer[at : at + length])
        at += length
    return out


def _scattered(batches: list[bytes], gaps: list[int]) -> tuple[bytes, bytes]:
    """A "file" holding ``batches`` in order with junk of ``gaps`` bytes before each, and the
    (position, length) ranges of the batches in it."""
    file = bytearray()
    ranges = []
    for batch, gap in zip(batches, gaps, strict=True):
        file += bytes([0xA5]) * gap
        ranges.append((len(file), len(batch)))
        file += batch
    file += b"\xa5" * 17
    return bytes(file), np.array(ranges, dtype="<i8").tobytes()


@pytest.fixture(params=["native", "numpy"])
def reader_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """The C reader, then the numpy reference alone (the native module set aside)."""
    if request.param == "numpy":
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(pulled_reader, "_native", None)
            yield
    else:
        yield


@given(_answers(), st.data())
@_SETTINGS
def test_should_read_batches_at_their_ranges_as_the_same_batches_back_to_back(
    reader_module: None, answer: tuple[bytes, int, int], data: Any
) -> None:
    joined, first, end = answer
    batches = _batches(joined)
    gaps = data.draw(st.lists(st.integers(0, 300), min_size=len(batches), max_size=len(batches)))
    file, ranges = _scattered(batches, gaps)
    local = read_pulled_batches(file, QUEUE, "broker-a", first, end, None, ranges)
    expected = read_pulled_batches(joined, QUEUE, "broker-a", first, end, None)
    assert _columns(local) == _columns(expected)
    assert join_ranges(file, ranges) == joined


def _two_batches() -> tuple[list[bytes], bytes, bytes]:
    """Two batches of 3 records (offsets 0-5) with junk before each, and their ranges."""
    batches = []
    for base, body in ((0, b"x"), (3, b"yy")):
        batch = encode_batch(TOPIC.encode(), [body] * 3, born_host=BORN_HOST)
        patch_batch(batch, 0, base, 1000 + base, 1, STORE_HOST, QUEUE.queue_id)
        batches.append(bytes(batch))
    file, ranges = _scattered(batches, [10, 30])
    return batches, file, ranges


def test_should_point_the_columns_of_a_local_read_into_the_file() -> None:
    _, file, ranges = _two_batches()
    local = read_pulled_batches(file, QUEUE, "broker-a", 1, 5, None, ranges)
    assert local.queue_offsets.tolist() == [1, 2, 3, 4]
    assert local.body_array().to_pylist() == [b"x", b"x", b"yy", b"yy"]
    chunk = local.chunks[0]
    assert chunk.buffer is file
    start, length = int(chunk.body_start[0]), int(chunk.body_length[0])
    assert file[start : start + length] == b"x"


@pytest.mark.parametrize(
    "how",
    ["past the end", "negative", "length differs", "not a batch", "odd bytes", "twice", "back"],
)
def test_should_refuse_a_range_that_does_not_hold_its_batch(how: str) -> None:
    _, file, ranges = _two_batches()
    pairs = np.frombuffer(ranges, "<i8").reshape(-1, 2).copy()
    if how == "past the end":
        pairs[1, 0] = len(file) - pairs[1, 1] + 1
    elif how == "negative":
        pairs[0, 0] = -1
    elif how == "length differs":
        pairs[0, 1] -= 1
    elif how == "not a batch":
        pairs[1, 0] -= 10  # the junk before it
    elif how == "twice":
        pairs[1] = pairs[0]  # one batch twice: its records would be delivered twice
    elif how == "back":
        pairs = pairs[::-1].copy()  # out of order
    bad = pairs.tobytes() if how != "odd bytes" else pairs.tobytes()[:-3]
    if how == "odd bytes":
        with pytest.raises(ValueError, match="pairs"):
            native.read(file, QUEUE.queue_id, TOPIC.encode(), 0, 1 << 40, bad)
        return
    assert native.read(file, QUEUE.queue_id, TOPIC.encode(), 0, 1 << 40, bad) is None
    with pytest.raises(CorruptMessageError):  # the reference reader names what is wrong
        read_pulled_batches(file, QUEUE, "broker-a", 0, 1 << 40, None, bad)


def test_should_read_nothing_from_no_ranges() -> None:
    _, file, _ = _two_batches()
    assert len(read_pulled_batches(file, QUEUE, "broker-a", 0, 1 << 40, None, b"")) == 0
