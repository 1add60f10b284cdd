"""The bytes filler: the C helper's and the Python one's checks and errors are the same."""

from __future__ import annotations

import pytest

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import BytesFiller
from aeromq.transport.logbuffer.bytes_filler import PyBytesFiller


def test_should_refuse_to_overfill_or_retake_a_filler() -> None:
    for filler_type in {BytesFiller, PyBytesFiller}:
        filler = filler_type(4)
        source = AtomicBuffer(bytearray(b"abcdef"))
        assert filler.put(source, 1, 3) == 3
        with pytest.raises(ValueError, match="not full: filled=3 length=4"):
            filler.take()
        with pytest.raises(ValueError, match="more bytes than are left to fill: length=2 left=1"):
            filler.put(source, 0, 2)
        with pytest.raises(ValueError, match="source range outside its buffer"):
            filler.put(source, 6, 1)
        assert filler.put(source, 5, 1) == 4
        assert filler.take() == b"bcdf"
        with pytest.raises(ValueError, match="the bytes were taken"):
            filler.take()
