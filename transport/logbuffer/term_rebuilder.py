"""``insert``: put a received packet of frames into a term at the offset its header gives.

Frames arrive over UDP out of order and more than once. Inserting writes the packet's payload
first and its first header last, with the first 8 header bytes (frame length and type) as one
release store, so a reader never sees a length before the bytes it covers. A packet whose offset
is already filled is a duplicate and is ignored, so the term only ever fills in.
"""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    HDR_LENGTH,
    RESERVED_VALUE_FIELD_OFFSET,
    STREAM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
)

__all__ = ["insert"]


def insert(
    term_buffer: AtomicBuffer,
    term_offset: int,
    packet: AtomicBuffer,
    packet_offset: int,
    length: int,
) -> None:
    """Copy ``length`` bytes of frames from ``packet[packet_offset:]`` to ``term_offset``."""
    if term_buffer.get_int32(term_offset) != 0:
        return
    term_buffer.put_bytes(
        term_offset + HDR_LENGTH, packet, packet_offset + HDR_LENGTH, length - HDR_LENGTH
    )
    get = packet.get_int64
    put = term_buffer.put_int64
    put(term_offset + RESERVED_VALUE_FIELD_OFFSET, get(packet_offset + RESERVED_VALUE_FIELD_OFFSET))
    put(term_offset + STREAM_ID_FIELD_OFFSET, get(packet_offset + STREAM_ID_FIELD_OFFSET))
    put(term_offset + TERM_OFFSET_FIELD_OFFSET, get(packet_offset + TERM_OFFSET_FIELD_OFFSET))
    term_buffer.put_int64_ordered(term_offset, get(packet_offset))
