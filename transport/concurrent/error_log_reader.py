"""Reading the error log that ``DistinctErrorLog`` writes (cnc.dat's error log, or Aeron's).

Safe from any thread or process while writers append: an entry is read only once its length
(stored last, with release order) is non-zero. Layout: ``distinct_error_log``.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.distinct_error_log import (
    ENCODED_ERROR_OFFSET,
    FIRST_OBSERVATION_TIMESTAMP_OFFSET,
    LAST_OBSERVATION_TIMESTAMP_OFFSET,
    LENGTH_OFFSET,
    OBSERVATION_COUNT_OFFSET,
    RECORD_ALIGNMENT,
)

__all__ = ["ErrorConsumer", "has_errors", "read"]

ErrorConsumer = Callable[[int, int, int, str], object]
"""``(observation_count, first_timestamp_ms, last_timestamp_ms, text)`` for each entry."""


def has_errors(buffer: AtomicBuffer) -> bool:
    """Whether the log holds at least one entry."""
    return buffer.capacity >= ENCODED_ERROR_OFFSET and buffer.get_int32_volatile(LENGTH_OFFSET) != 0


def read(buffer: AtomicBuffer, consumer: ErrorConsumer, since_ts_ms: int = 0) -> int:
    """Call ``consumer`` for each entry last observed at or after ``since_ts_ms``; return how many.

    Stops at the first zero length, and at a length that cannot be an entry (a torn or foreign
    log) rather than read garbage.
    """
    capacity = buffer.capacity
    get_int32 = buffer.get_int32
    entries = 0
    offset = 0
    while offset + ENCODED_ERROR_OFFSET <= capacity:
        length = buffer.get_int32_volatile(offset + LENGTH_OFFSET)
        if length < ENCODED_ERROR_OFFSET or offset + length > capacity:
            break
        last_ts_ms = buffer.get_int64_volatile(offset + LAST_OBSERVATION_TIMESTAMP_OFFSET)
        if last_ts_ms >= since_ts_ms:
            entries += 1
            text = buffer.get_bytes(offset + ENCODED_ERROR_OFFSET, length - ENCODED_ERROR_OFFSET)
            consumer(
                get_int32(offset + OBSERVATION_COUNT_OFFSET),
                buffer.get_int64(offset + FIRST_OBSERVATION_TIMESTAMP_OFFSET),
                last_ts_ms,
                text.decode("utf-8", "replace"),
            )
        offset += (length + RECORD_ALIGNMENT - 1) & ~(RECORD_ALIGNMENT - 1)
    return entries
