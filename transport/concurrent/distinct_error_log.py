"""``DistinctErrorLog``: one entry per distinct error, with a count and first/last timestamps.

The error log of cnc.dat, byte for byte as Agrona's ``DistinctErrorLog`` and Aeron's
``aeron_distinct_error_log.c``: entries from offset 0, each 8-byte aligned, a zero length ends
the log. Rather than grow with every error, an error seen again bumps its entry's count and last
timestamp, so a driver stuck in a loop of the same error cannot fill the log::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |R|                         Length                              |
    +-+-------------------------------------------------------------+
    |R|                    Observation Count                        |
    +-+-------------------------------------------------------------+
    |R|                Last Observation Timestamp                   |
    |                                                               |
    +-+-------------------------------------------------------------+
    |R|               First Observation Timestamp                   |
    |                                                               |
    +---------------------------------------------------------------+
    |                     Encoded Error (UTF-8)                    ...
   ...                                                              |
    +---------------------------------------------------------------+

Length covers the header and the text (not the alignment padding). Timestamps are epoch ms.

Writing a new entry: the writer claims the slot at the end of the log by a compare-and-set of
its count from 0 to 1 (the first observation), writes both timestamps and the text, and stores
the length last with release order; readers take length 0 as the end. Claiming through the
count lets several processes share one log (Aeron serialises writers with a mutex inside one
process only): a writer that loses the claim waits for the winner's length, reads the winner's
text (it may be the same error, which then counts as a repeat), and moves on. A repeat is an
atomic add to the count and a release store of the larger last timestamp.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.clock import EpochClock

__all__ = [
    "ENCODED_ERROR_OFFSET",
    "FIRST_OBSERVATION_TIMESTAMP_OFFSET",
    "LAST_OBSERVATION_TIMESTAMP_OFFSET",
    "LENGTH_OFFSET",
    "OBSERVATION_COUNT_OFFSET",
    "RECORD_ALIGNMENT",
    "DistinctErrorLog",
    "LoggingErrorHandler",
    "error_text",
]

LENGTH_OFFSET = 0
OBSERVATION_COUNT_OFFSET = LENGTH_OFFSET + 4
LAST_OBSERVATION_TIMESTAMP_OFFSET = OBSERVATION_COUNT_OFFSET + 4
FIRST_OBSERVATION_TIMESTAMP_OFFSET = LAST_OBSERVATION_TIMESTAMP_OFFSET + 8
ENCODED_ERROR_OFFSET = FIRST_OBSERVATION_TIMESTAMP_OFFSET + 8
RECORD_ALIGNMENT = 8

_DEFAULT_CLAIM_TIMEOUT_NS = 1_000_000_000


def error_text(observation: BaseException | str) -> str:
    """The text logged for an error: a string as is; an exception as Python prints it
    (traceback if it was raised, then ``Type: message``), so one type and message raised from
    one place is one distinct error."""
    if isinstance(observation, str):
        return observation
    return "".join(traceback.format_exception(observation))


class DistinctErrorLog:
    """Records errors into ``buffer`` (zeroed when new), timestamped with ``epoch_clock``.

    Thread-safe, and safe with other ``DistinctErrorLog`` instances over the same memory in
    other processes. ``record`` returns ``False`` when the error is new and its entry does not
    fit, or when another writer claimed the next slot and did not finish it within
    ``claim_timeout_ns`` (it died): the log is then closed to new entries at that slot, while
    repeats of known errors are still counted.
    """

    __slots__ = (
        "_blocked_at",
        "_buffer",
        "_claim_timeout_ns",
        "_clock",
        "_known",
        "_lock",
        "_scan",
    )

    def __init__(
        self,
        buffer: AtomicBuffer,
        epoch_clock: EpochClock,
        claim_timeout_ns: int = _DEFAULT_CLAIM_TIMEOUT_NS,
    ) -> None:
        if buffer.address % RECORD_ALIGNMENT:
            raise ConfigurationError(
                "error log buffer must be 8-byte aligned", address=hex(buffer.address)
            )
        self._buffer = buffer
        self._clock = epoch_clock
        self._claim_timeout_ns = claim_timeout_ns
        self._known: dict[bytes, int] = {}
        self._scan = 0
        self._blocked_at = -1
        self._lock = threading.Lock()

    @property
    def buffer(self) -> AtomicBuffer:
        """The error log buffer (cnc.dat's error log region)."""
        return self._buffer

    def record(self, observation: BaseException | str) -> bool:
        """Log one observation of an error; ``False`` if it could not be logged (see class)."""
        encoded = error_text(observation).encode("utf-8", "replace")
        timestamp_ms = self._clock.time_ms()
        with self._lock:
            offset = self._known.get(encoded, -1)
            if offset < 0:
                offset, appended = self._find_or_append(encoded, timestamp_ms)
                if offset < 0:
                    return False
                if appended:
                    return True
        self._observe(offset, timestamp_ms)
        return True

    def _find_or_append(self, encoded: bytes, timestamp_ms: int) -> tuple[int, bool]:
        """Scan entries not seen yet for ``encoded``; append it at the end if absent.

        Returns ``(offset, appended)``, or ``(-1, False)`` if it is absent and cannot be added.
        """
        buffer = self._buffer
        capacity = buffer.capacity
        entry_length = ENCODED_ERROR_OFFSET + len(encoded)
        offset = self._scan
        while offset + ENCODED_ERROR_OFFSET <= capacity:
            length = buffer.get_int32_volatile(offset + LENGTH_OFFSET)
            if length == 0:
                if offset == self._blocked_at or offset + entry_length > capacity:
                    break
                if buffer.compare_and_set_int32(offset + OBSERVATION_COUNT_OFFSET, 0, 1):
                    buffer.put_int64(offset + LAST_OBSERVATION_TIMESTAMP_OFFSET, timestamp_ms)
                    buffer.put_int64(offset + FIRST_OBSERVATION_TIMESTAMP_OFFSET, timestamp_ms)
                    buffer.put_bytes(offset + ENCODED_ERROR_OFFSET, encoded)
                    buffer.put_int32_ordered(offset + LENGTH_OFFSET, entry_length)
                    self._known[encoded] = offset
                    self._scan = offset + _aligned(entry_length)
                    return offset, True
                length = self._await_length(offset)
            if length < ENCODED_ERROR_OFFSET or offset + length > capacity:
                # A claim never finished (its writer died) or foreign bytes: stop appending here.
                self._blocked_at = offset
                break
            text = buffer.get_bytes(offset + ENCODED_ERROR_OFFSET, length - ENCODED_ERROR_OFFSET)
            self._known.setdefault(text, offset)
            self._scan = offset + _aligned(length)
            if text == encoded:
                return offset, False
            offset = self._scan
        return -1, False

    def _await_length(self, offset: int) -> int:
        """The length another writer stores after claiming ``offset``; 0 if it never does."""
        get_length = self._buffer.get_int32_volatile
        deadline_ns = time.monotonic_ns() + self._claim_timeout_ns
        while True:
            length = get_length(offset + LENGTH_OFFSET)
            if length != 0 or time.monotonic_ns() > deadline_ns:
                return length
            time.sleep(0)

    def _observe(self, offset: int, timestamp_ms: int) -> None:
        buffer = self._buffer
        buffer.get_and_add_int32(offset + OBSERVATION_COUNT_OFFSET, 1)
        last = offset + LAST_OBSERVATION_TIMESTAMP_OFFSET
        current = buffer.get_int64_volatile(last)
        while current < timestamp_ms and not buffer.compare_and_set_int64(
            last, current, timestamp_ms
        ):
            current = buffer.get_int64_volatile(last)


def _aligned(length: int) -> int:
    return (length + RECORD_ALIGNMENT - 1) & ~(RECORD_ALIGNMENT - 1)


class LoggingErrorHandler:
    """An error handler (for ``AgentRunner``) that records into a :class:`DistinctErrorLog`.

    An error the log cannot take is written to ``fallback`` (default: ``sys.stderr`` at call
    time) as ``unrecordable error`` with its text, as Aeron's driver does.
    """

    __slots__ = ("_fallback", "_log")

    def __init__(
        self, log: DistinctErrorLog, fallback: Callable[[str], object] | None = None
    ) -> None:
        self._log = log
        self._fallback = fallback

    def __call__(self, error: BaseException) -> None:
        if not self._log.record(error):
            message = f"unrecordable error: {error_text(error)}"
            if self._fallback is not None:
                self._fallback(message)
            else:
                sys.stderr.write(message if message.endswith("\n") else message + "\n")
