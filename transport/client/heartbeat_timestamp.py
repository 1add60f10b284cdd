"""The client heartbeat counter: how the driver knows a client is alive (Aeron's
``HeartbeatTimestamp``).

On a client's first command the driver allocates a counter of type ``HEARTBEAT_TYPE_ID`` (11,
label ``client-heartbeat: <client id>``) whose key starts with the client id (i64). The client
finds it by that key and stores the epoch time in ms into it every keepalive interval; the
driver times the client out when the value gets older than its client liveness timeout. If the
counter disappears (freed, or reused for something else), the driver has dropped this client.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent.counters_descriptor import (
    KEY_OFFSET,
    METADATA_LENGTH,
    NULL_COUNTER_ID,
    RECORD_ALLOCATED,
    RECORD_UNUSED,
    TYPE_ID_OFFSET,
)
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = ["HEARTBEAT_TYPE_ID", "find_counter_id_by_registration_id", "is_active"]

HEARTBEAT_TYPE_ID: Final = 11
"""Aeron's ``AeronCounters.DRIVER_HEARTBEAT_TYPE_ID`` (``client-heartbeat``)."""

REGISTRATION_ID_KEY_OFFSET: Final = 0
"""Where in the counter's key the client id (the registration id) is."""


def find_counter_id_by_registration_id(
    counters_reader: CountersReader, type_id: int, registration_id: int
) -> int:
    """The allocated counter of ``type_id`` whose key holds ``registration_id``, or -1."""
    metadata = counters_reader.metadata_buffer
    get_state = metadata.get_int32_volatile
    for counter_id in range(counters_reader.max_counter_id + 1):
        offset = counter_id * METADATA_LENGTH
        state = get_state(offset)
        if state == RECORD_UNUSED:
            break
        if (
            state == RECORD_ALLOCATED
            and metadata.get_int32(offset + TYPE_ID_OFFSET) == type_id
            and metadata.get_int64(offset + KEY_OFFSET + REGISTRATION_ID_KEY_OFFSET)
            == registration_id
        ):
            return counter_id
    return NULL_COUNTER_ID


def is_active(
    counters_reader: CountersReader, counter_id: int, type_id: int, registration_id: int
) -> bool:
    """Whether ``counter_id`` is still the allocated ``type_id`` counter of ``registration_id``."""
    metadata = counters_reader.metadata_buffer
    offset = counter_id * METADATA_LENGTH
    return (
        metadata.get_int32_volatile(offset) == RECORD_ALLOCATED
        and metadata.get_int32(offset + TYPE_ID_OFFSET) == type_id
        and metadata.get_int64(offset + KEY_OFFSET + REGISTRATION_ID_KEY_OFFSET) == registration_id
    )
