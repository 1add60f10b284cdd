"""``CountersReader``: reads counters (values and metadata) from the cnc.dat buffers.

Safe from any thread or process: records are read with acquire loads of their state, so a
counter is seen only once its allocation is complete. Layout: ``counters_descriptor``.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport._errors import ConfigurationError, IndexOutOfBoundsError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import (
    COUNTER_LENGTH,
    FREE_FOR_REUSE_DEADLINE_OFFSET,
    KEY_OFFSET,
    LABEL_LENGTH_OFFSET,
    LABEL_OFFSET,
    MAX_KEY_LENGTH,
    MAX_LABEL_LENGTH,
    METADATA_LENGTH,
    NULL_COUNTER_ID,
    OWNER_ID_OFFSET,
    RECORD_ALLOCATED,
    RECORD_UNUSED,
    REFERENCE_ID_OFFSET,
    REGISTRATION_ID_OFFSET,
    TYPE_ID_OFFSET,
)

__all__ = ["CounterConsumer", "CountersReader", "MetadataConsumer"]

MetadataConsumer = Callable[[int, int, AtomicBuffer, str], object]
"""``(counter_id, type_id, key_buffer, label)`` for each allocated counter."""

CounterConsumer = Callable[[int, int, str], object]
"""``(value, counter_id, label)`` for each allocated counter."""


class CountersReader:
    """Read-only view of the counters in a metadata buffer and a values buffer.

    ``max_counter_id`` is ``values_buffer.capacity // COUNTER_LENGTH - 1``. Every per-counter
    getter raises :class:`~transport.IndexOutOfBoundsError` (with ``counter_id`` and
    ``max_counter_id``) for an id outside ``0..max_counter_id``.
    """

    __slots__ = ("_max_counter_id", "_metadata", "_values")

    def __init__(self, metadata_buffer: AtomicBuffer, values_buffer: AtomicBuffer) -> None:
        max_counter_id = values_buffer.capacity // COUNTER_LENGTH - 1
        if metadata_buffer.capacity < (max_counter_id + 1) * METADATA_LENGTH:
            raise ConfigurationError(
                "counters metadata buffer too small for the values buffer",
                metadata_length=metadata_buffer.capacity,
                values_length=values_buffer.capacity,
                required_metadata_length=(max_counter_id + 1) * METADATA_LENGTH,
            )
        for name, buffer in (("metadata", metadata_buffer), ("values", values_buffer)):
            if buffer.address % 8:
                raise ConfigurationError(
                    f"counters {name} buffer must be 8-byte aligned", address=hex(buffer.address)
                )
        self._metadata = metadata_buffer
        self._values = values_buffer
        self._max_counter_id = max_counter_id

    @property
    def max_counter_id(self) -> int:
        """The highest counter id the values buffer has room for."""
        return self._max_counter_id

    @property
    def metadata_buffer(self) -> AtomicBuffer:
        """The metadata buffer: ``METADATA_LENGTH`` bytes per counter id."""
        return self._metadata

    @property
    def values_buffer(self) -> AtomicBuffer:
        """The values buffer: ``COUNTER_LENGTH`` bytes per counter id."""
        return self._values

    def _validate(self, counter_id: int) -> None:
        if counter_id < 0 or counter_id > self._max_counter_id:
            raise IndexOutOfBoundsError(
                "counter id out of range",
                counter_id=counter_id,
                max_counter_id=self._max_counter_id,
            )

    def get_counter_value(self, counter_id: int) -> int:
        """The counter's value (acquire load)."""
        self._validate(counter_id)
        return self._values.get_int64_volatile(counter_id * COUNTER_LENGTH)

    def get_counter_registration_id(self, counter_id: int) -> int:
        """The id the counter was registered with (acquire load).

        Compare it with the one you knew to tell a reused counter id;
        ``DEFAULT_REGISTRATION_ID`` (0) when none was given.
        """
        self._validate(counter_id)
        return self._values.get_int64_volatile(counter_id * COUNTER_LENGTH + REGISTRATION_ID_OFFSET)

    def get_counter_owner_id(self, counter_id: int) -> int:
        """The id of the counter's owner, usually a client id (plain load)."""
        self._validate(counter_id)
        return self._values.get_int64(counter_id * COUNTER_LENGTH + OWNER_ID_OFFSET)

    def get_counter_reference_id(self, counter_id: int) -> int:
        """The registration id of the resource the counter belongs to (plain load).

        For instance the publication of a publisher limit; ``DEFAULT_REFERENCE_ID`` (0) when
        none.
        """
        self._validate(counter_id)
        return self._values.get_int64(counter_id * COUNTER_LENGTH + REFERENCE_ID_OFFSET)

    def get_counter_state(self, counter_id: int) -> int:
        """``RECORD_UNUSED``, ``RECORD_ALLOCATED`` or ``RECORD_RECLAIMED`` (acquire load)."""
        self._validate(counter_id)
        return self._metadata.get_int32_volatile(counter_id * METADATA_LENGTH)

    def get_counter_type_id(self, counter_id: int) -> int:
        """The counter's type id (e.g. publisher limit, subscriber position)."""
        self._validate(counter_id)
        return self._metadata.get_int32(counter_id * METADATA_LENGTH + TYPE_ID_OFFSET)

    def get_free_for_reuse_deadline(self, counter_id: int) -> int:
        """Epoch ms after which a freed id may be reused; ``NOT_FREE_TO_REUSE`` while allocated."""
        self._validate(counter_id)
        offset = counter_id * METADATA_LENGTH + FREE_FOR_REUSE_DEADLINE_OFFSET
        return self._metadata.get_int64_volatile(offset)

    def get_counter_label(self, counter_id: int) -> str:
        """The counter's label, decoded as UTF-8 (at most ``MAX_LABEL_LENGTH`` bytes)."""
        self._validate(counter_id)
        return self._label(counter_id * METADATA_LENGTH)

    def get_counter_key(self, counter_id: int) -> bytes:
        """A copy of the whole key area (``MAX_KEY_LENGTH`` bytes, zero padded)."""
        self._validate(counter_id)
        return self._metadata.get_bytes(counter_id * METADATA_LENGTH + KEY_OFFSET, MAX_KEY_LENGTH)

    def get_counter_key_buffer(self, counter_id: int) -> AtomicBuffer:
        """A view (no copy) of the key area of the counter's metadata record."""
        self._validate(counter_id)
        return self._metadata.slice(counter_id * METADATA_LENGTH + KEY_OFFSET, MAX_KEY_LENGTH)

    def _label(self, record_offset: int) -> str:
        metadata = self._metadata
        length = metadata.get_int32_volatile(record_offset + LABEL_LENGTH_OFFSET)
        length = min(max(length, 0), MAX_LABEL_LENGTH)
        return metadata.get_bytes(record_offset + LABEL_OFFSET, length).decode("utf-8", "replace")

    def for_each(self, consumer: MetadataConsumer) -> None:
        """Call ``consumer(counter_id, type_id, key_buffer, label)`` for each allocated counter.

        Scans from id 0 and stops at the first never-used record; freed records are skipped.
        ``key_buffer`` is a view of the key area, valid while the counter stays allocated.
        """
        metadata = self._metadata
        get_state = metadata.get_int32_volatile
        for counter_id in range(self._max_counter_id + 1):
            offset = counter_id * METADATA_LENGTH
            state = get_state(offset)
            if state == RECORD_ALLOCATED:
                consumer(
                    counter_id,
                    metadata.get_int32(offset + TYPE_ID_OFFSET),
                    metadata.slice(offset + KEY_OFFSET, MAX_KEY_LENGTH),
                    self._label(offset),
                )
            elif state == RECORD_UNUSED:
                break

    def for_each_counter(self, consumer: CounterConsumer) -> None:
        """Call ``consumer(value, counter_id, label)`` for each allocated counter (AeronStat's view)."""
        get_state = self._metadata.get_int32_volatile
        get_value = self._values.get_int64_volatile
        for counter_id in range(self._max_counter_id + 1):
            offset = counter_id * METADATA_LENGTH
            state = get_state(offset)
            if state == RECORD_ALLOCATED:
                consumer(get_value(counter_id * COUNTER_LENGTH), counter_id, self._label(offset))
            elif state == RECORD_UNUSED:
                break

    def find_by_registration_id(self, registration_id: int) -> int:
        """The first allocated counter with this registration id, or ``NULL_COUNTER_ID``."""
        return self._find(None, registration_id)

    def find_by_type_id_and_registration_id(self, type_id: int, registration_id: int) -> int:
        """The first allocated counter of this type and registration id, or ``NULL_COUNTER_ID``."""
        return self._find(type_id, registration_id)

    def _find(self, type_id: int | None, registration_id: int) -> int:
        metadata = self._metadata
        get_state = metadata.get_int32_volatile
        get_registration_id = self._values.get_int64_volatile
        for counter_id in range(self._max_counter_id + 1):
            offset = counter_id * METADATA_LENGTH
            state = get_state(offset)
            if state == RECORD_ALLOCATED:
                if (
                    type_id is None or metadata.get_int32(offset + TYPE_ID_OFFSET) == type_id
                ) and get_registration_id(
                    counter_id * COUNTER_LENGTH + REGISTRATION_ID_OFFSET
                ) == registration_id:
                    return counter_id
            elif state == RECORD_UNUSED:
                break
        return NULL_COUNTER_ID
