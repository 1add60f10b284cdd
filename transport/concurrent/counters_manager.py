"""``CountersManager``: allocates and frees counters in the cnc.dat buffers.

Agrona's ``CountersManager`` / Aeron's ``aeron_counters_manager.c``, layout in
``counters_descriptor``. One manager owns the buffers (the media driver's conductor); it is not
thread-safe. Readers in any thread or process use :class:`CountersReader`.

Allocation writes the whole record (the value record zeroed then the ids, the type, the
free-for-reuse deadline ``NOT_FREE_TO_REUSE``, the key, the label) and only then stores the state
``RECORD_ALLOCATED`` with release order, so a reader that sees the state sees the record.
``free`` stores ``RECORD_RECLAIMED``, zeroes the key and sets the deadline to now +
``free_to_reuse_timeout_ms``; the id is reused, oldest first, only once the clock passes it,
which gives a client still holding the old id time to notice.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport._errors import ConfigurationError, TransportStateError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.clock import EpochClock, SystemEpochClock
from aeromq.transport.concurrent.counters_descriptor import (
    COUNTER_LENGTH,
    DEFAULT_OWNER_ID,
    DEFAULT_REFERENCE_ID,
    DEFAULT_REGISTRATION_ID,
    DEFAULT_TYPE_ID,
    FREE_FOR_REUSE_DEADLINE_OFFSET,
    KEY_OFFSET,
    LABEL_LENGTH_OFFSET,
    LABEL_OFFSET,
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    METADATA_LENGTH,
    NOT_FREE_TO_REUSE,
    OWNER_ID_OFFSET,
    RECORD_ALLOCATED,
    RECORD_RECLAIMED,
    REFERENCE_ID_OFFSET,
    REGISTRATION_ID_OFFSET,
    TYPE_ID_OFFSET,
)
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = ["CounterKey", "CountersManager", "KeyWriter"]

KeyWriter = Callable[[AtomicBuffer], object]
"""Called with a zeroed view of exactly ``MAX_KEY_LENGTH`` bytes to write a counter's key."""

CounterKey = bytes | bytearray | memoryview | KeyWriter


def _encode_label(label: str, max_length: int) -> bytes:
    encoded = label.encode("utf-8")
    if len(encoded) > max_length:
        # Cut at a character boundary so the stored label stays valid UTF-8.
        encoded = encoded[:max_length].decode("utf-8", "ignore").encode("utf-8")
    return encoded


class CountersManager(CountersReader):
    """Allocates counters in ``metadata_buffer`` / ``values_buffer`` and frees them.

    ``metadata_buffer`` must hold ``METADATA_LENGTH / COUNTER_LENGTH`` (4) times the bytes of
    ``values_buffer``. ``epoch_clock`` (default: the system clock) dates free-for-reuse deadlines.
    """

    __slots__ = ("_clock", "_free_list", "_free_to_reuse_timeout_ms", "_high_water_mark_id")

    def __init__(
        self,
        metadata_buffer: AtomicBuffer,
        values_buffer: AtomicBuffer,
        epoch_clock: EpochClock | None = None,
        free_to_reuse_timeout_ms: int = 0,
    ) -> None:
        if metadata_buffer.capacity < values_buffer.capacity * (METADATA_LENGTH // COUNTER_LENGTH):
            raise ConfigurationError(
                "counters metadata buffer must be 4x the values buffer",
                metadata_length=metadata_buffer.capacity,
                values_length=values_buffer.capacity,
            )
        if free_to_reuse_timeout_ms < 0:
            raise ConfigurationError(
                "free_to_reuse_timeout_ms must not be negative",
                free_to_reuse_timeout_ms=free_to_reuse_timeout_ms,
            )
        super().__init__(metadata_buffer, values_buffer)
        self._clock: EpochClock = epoch_clock if epoch_clock is not None else SystemEpochClock()
        self._free_to_reuse_timeout_ms = free_to_reuse_timeout_ms
        self._high_water_mark_id = -1
        self._free_list: list[int] = []

    @property
    def capacity(self) -> int:
        """How many counters the buffers hold."""
        return self._max_counter_id + 1

    def available_counter_ids(self) -> int:
        """How many counters can be allocated now: never-used ids plus freed ids past deadline."""
        now_ms = self._clock.time_ms()
        get_deadline = self._metadata.get_int64
        reusable = sum(
            1
            for counter_id in self._free_list
            if now_ms >= get_deadline(counter_id * METADATA_LENGTH + FREE_FOR_REUSE_DEADLINE_OFFSET)
        )
        return self.capacity - self._high_water_mark_id - 1 + reusable

    def allocate(
        self,
        label: str,
        type_id: int = DEFAULT_TYPE_ID,
        key: CounterKey = b"",
        registration_id: int = DEFAULT_REGISTRATION_ID,
        owner_id: int = DEFAULT_OWNER_ID,
        reference_id: int = DEFAULT_REFERENCE_ID,
    ) -> int:
        """Allocate a counter and return its id.

        ``key`` is bytes (at most ``MAX_KEY_LENGTH``) or a :data:`KeyWriter`. The label is cut to
        ``MAX_LABEL_LENGTH`` bytes of UTF-8. Raises :class:`~transport.TransportStateError` (with
        ``capacity``) when every id is in use or waiting for its free-for-reuse deadline, and
        :class:`~transport.ConfigurationError` for a key that is too long.
        """
        if not callable(key) and len(key) > MAX_KEY_LENGTH:
            raise ConfigurationError(
                "counter key too long", key_length=len(key), max_key_length=MAX_KEY_LENGTH
            )
        encoded_label = _encode_label(label, MAX_LABEL_LENGTH)
        free_index, counter_id = self._next_counter_id()
        metadata = self._metadata
        record = counter_id * METADATA_LENGTH

        metadata.set_memory(record + KEY_OFFSET, MAX_KEY_LENGTH, 0)
        if callable(key):
            try:
                key(metadata.slice(record + KEY_OFFSET, MAX_KEY_LENGTH))
            except BaseException:
                metadata.set_memory(record + KEY_OFFSET, MAX_KEY_LENGTH, 0)
                raise
        elif key:
            metadata.put_bytes(record + KEY_OFFSET, key)

        # Nothing below can fail: the id is taken from here on.
        if free_index >= 0:
            del self._free_list[free_index]
        else:
            self._high_water_mark_id = counter_id

        values = self._values
        value_record = counter_id * COUNTER_LENGTH
        values.set_memory(value_record, COUNTER_LENGTH, 0)
        values.put_int64_ordered(value_record + REGISTRATION_ID_OFFSET, registration_id)
        values.put_int64(value_record + OWNER_ID_OFFSET, owner_id)
        values.put_int64(value_record + REFERENCE_ID_OFFSET, reference_id)

        metadata.put_int32(record + TYPE_ID_OFFSET, type_id)
        metadata.put_int64(record + FREE_FOR_REUSE_DEADLINE_OFFSET, NOT_FREE_TO_REUSE)
        metadata.put_bytes(record + LABEL_OFFSET, encoded_label)
        metadata.put_int32_ordered(record + LABEL_LENGTH_OFFSET, len(encoded_label))
        metadata.put_int32_ordered(record, RECORD_ALLOCATED)
        return counter_id

    def new_counter(
        self,
        label: str,
        type_id: int = DEFAULT_TYPE_ID,
        key: CounterKey = b"",
        registration_id: int = DEFAULT_REGISTRATION_ID,
        owner_id: int = DEFAULT_OWNER_ID,
        reference_id: int = DEFAULT_REFERENCE_ID,
    ) -> AtomicCounter:
        """Allocate a counter (as :meth:`allocate`) and return it; closing it frees it."""
        counter_id = self.allocate(label, type_id, key, registration_id, owner_id, reference_id)
        return AtomicCounter(self._values, counter_id, self)

    def free(self, counter_id: int) -> None:
        """Free an allocated counter; its id is reusable after the free-for-reuse timeout."""
        self._validate(counter_id)
        metadata = self._metadata
        record = counter_id * METADATA_LENGTH
        state = metadata.get_int32_volatile(record)
        if state != RECORD_ALLOCATED:
            raise TransportStateError("counter not allocated", counter_id=counter_id, state=state)
        metadata.put_int32_ordered(record, RECORD_RECLAIMED)
        metadata.set_memory(record + KEY_OFFSET, MAX_KEY_LENGTH, 0)
        deadline_ms = self._clock.time_ms() + self._free_to_reuse_timeout_ms
        metadata.put_int64_ordered(record + FREE_FOR_REUSE_DEADLINE_OFFSET, deadline_ms)
        self._free_list.append(counter_id)

    def set_counter_value(self, counter_id: int, value: int) -> None:
        """Store the value with release order."""
        self._validate(counter_id)
        self._values.put_int64_ordered(counter_id * COUNTER_LENGTH, value)

    def set_counter_registration_id(self, counter_id: int, registration_id: int) -> None:
        """Set the counter's registration id (release store).

        The id that created the counter, so a reader can tell a reused counter id from the
        one it knew.
        """
        self._validate(counter_id)
        offset = counter_id * COUNTER_LENGTH + REGISTRATION_ID_OFFSET
        self._values.put_int64_ordered(offset, registration_id)

    def set_counter_owner_id(self, counter_id: int, owner_id: int) -> None:
        """Set the counter's owner id (plain store): the client id that owns it."""
        self._validate(counter_id)
        self._values.put_int64(counter_id * COUNTER_LENGTH + OWNER_ID_OFFSET, owner_id)

    def set_counter_reference_id(self, counter_id: int, reference_id: int) -> None:
        """Set the counter's reference id (plain store).

        The registration id of the publication, subscription or image it counts for.
        """
        self._validate(counter_id)
        self._values.put_int64(counter_id * COUNTER_LENGTH + REFERENCE_ID_OFFSET, reference_id)

    def set_counter_key(self, counter_id: int, key: CounterKey) -> None:
        """Replace the key (bytes of at most ``MAX_KEY_LENGTH``, or a :data:`KeyWriter`)."""
        self._validate(counter_id)
        if not callable(key) and len(key) > MAX_KEY_LENGTH:
            raise ConfigurationError(
                "counter key too long", key_length=len(key), max_key_length=MAX_KEY_LENGTH
            )
        key_offset = counter_id * METADATA_LENGTH + KEY_OFFSET
        self._metadata.set_memory(key_offset, MAX_KEY_LENGTH, 0)
        if callable(key):
            key(self._metadata.slice(key_offset, MAX_KEY_LENGTH))
        elif key:
            self._metadata.put_bytes(key_offset, key)

    def set_counter_label(self, counter_id: int, label: str) -> None:
        """Replace the label (cut to ``MAX_LABEL_LENGTH`` bytes); the length is stored last."""
        self._validate(counter_id)
        record = counter_id * METADATA_LENGTH
        encoded = _encode_label(label, MAX_LABEL_LENGTH)
        self._metadata.put_bytes(record + LABEL_OFFSET, encoded)
        self._metadata.put_int32_ordered(record + LABEL_LENGTH_OFFSET, len(encoded))

    def append_to_label(self, counter_id: int, suffix: str) -> None:
        """Append to the label as far as it fits in ``MAX_LABEL_LENGTH`` bytes."""
        self._validate(counter_id)
        record = counter_id * METADATA_LENGTH
        metadata = self._metadata
        length = min(max(metadata.get_int32(record + LABEL_LENGTH_OFFSET), 0), MAX_LABEL_LENGTH)
        encoded = _encode_label(suffix, MAX_LABEL_LENGTH - length)
        metadata.put_bytes(record + LABEL_OFFSET + length, encoded)
        metadata.put_int32_ordered(record + LABEL_LENGTH_OFFSET, length + len(encoded))

    def _next_counter_id(self) -> tuple[int, int]:
        """``(index in the free list or -1, counter id)`` of the id to use next; takes nothing."""
        if self._free_list:
            now_ms = self._clock.time_ms()
            get_deadline = self._metadata.get_int64_volatile
            for index, counter_id in enumerate(self._free_list):
                offset = counter_id * METADATA_LENGTH + FREE_FOR_REUSE_DEADLINE_OFFSET
                if now_ms >= get_deadline(offset):
                    return index, counter_id
        counter_id = self._high_water_mark_id + 1
        if counter_id > self._max_counter_id:
            raise TransportStateError(
                "unable to allocate counter, buffers are full",
                capacity=self.capacity,
                max_counter_id=self._max_counter_id,
            )
        return -1, counter_id

    def __repr__(self) -> str:
        return (
            f"CountersManager(capacity={self.capacity}, high_water_mark_id="
            f"{self._high_water_mark_id}, free={len(self._free_list)})"
        )
