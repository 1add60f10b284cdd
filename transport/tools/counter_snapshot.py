"""A copy of every allocated counter at one moment, read from the counters buffers.

The one place ``stat`` touches the counters' shared memory: :func:`read_counters` walks the
metadata records as AeronStat's ``CountersReader.forEach`` does (from id 0, skipping freed
records, stopping at the first never-used one) and copies each allocated counter into a
:class:`CounterSnapshot`, which the filters and formats then use without I/O. A counter freed
while it is read may show its last label; its state is read first with acquire order, so an
allocation in progress is never half seen.
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.transport.concurrent.counters_descriptor import RECORD_ALLOCATED, RECORD_UNUSED
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = ["CounterSnapshot", "read_counters"]


@dataclass(frozen=True, slots=True)
class CounterSnapshot:
    """One counter as read: its id, type, value, label, key (``MAX_KEY_LENGTH`` bytes, zero
    padded) and the ids of its value record."""

    counter_id: int
    type_id: int
    value: int
    label: str
    key: bytes
    registration_id: int
    owner_id: int
    reference_id: int


def read_counters(reader: CountersReader) -> list[CounterSnapshot]:
    """Every allocated counter of ``reader``, by id."""
    snapshots: list[CounterSnapshot] = []
    append = snapshots.append
    get_state = reader.get_counter_state
    for counter_id in range(reader.max_counter_id + 1):
        state = get_state(counter_id)
        if state == RECORD_ALLOCATED:
            append(
                CounterSnapshot(
                    counter_id,
                    reader.get_counter_type_id(counter_id),
                    reader.get_counter_value(counter_id),
                    reader.get_counter_label(counter_id),
                    reader.get_counter_key(counter_id),
                    reader.get_counter_registration_id(counter_id),
                    reader.get_counter_owner_id(counter_id),
                    reader.get_counter_reference_id(counter_id),
                )
            )
        elif state == RECORD_UNUSED:
            break
    return snapshots
