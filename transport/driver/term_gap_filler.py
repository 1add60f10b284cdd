"""``try_fill_gap``: cover a hole in an unreliable image's term with a padding frame.

Aeron's ``TermGapFiller``. A subscription with ``reliable=false`` does not ask for lost data:
when the loss detector reports a gap, the receiver writes a PAD frame over it (the stream's
default header, type PAD, the gap's term id and offset, frame length = the gap) so subscribers
move past the loss instead of waiting for it. The gap is filled only while it is still all
zeros: a frame that arrived meanwhile wins, and the filler does nothing.
"""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH
from aeromq.transport.logbuffer.log_buffer_descriptor import apply_default_header
from aeromq.transport.protocol import (
    HDR_TYPE_PAD,
    TERM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
    TYPE_FIELD_OFFSET,
)

__all__ = ["try_fill_gap"]


def try_fill_gap(
    meta_data_buffer: AtomicBuffer,
    term_buffer: AtomicBuffer,
    term_id: int,
    gap_offset: int,
    gap_length: int,
) -> bool:
    """Pad ``[gap_offset, gap_offset + gap_length)`` if it is still empty; True if it was."""
    if gap_length < HDR_LENGTH or gap_offset < 0 or gap_offset + gap_length > term_buffer.capacity:
        return False
    offset = gap_offset + gap_length - FRAME_ALIGNMENT
    get_length = term_buffer.get_int32_volatile
    while offset >= gap_offset:
        if get_length(offset) != 0:
            return False
        offset -= FRAME_ALIGNMENT
    apply_default_header(meta_data_buffer, term_buffer, gap_offset)
    term_buffer.put_int16(gap_offset + TYPE_FIELD_OFFSET, HDR_TYPE_PAD)
    term_buffer.put_int32(gap_offset + TERM_OFFSET_FIELD_OFFSET, gap_offset)
    term_buffer.put_int32(gap_offset + TERM_ID_FIELD_OFFSET, term_id)
    term_buffer.put_int32_ordered(gap_offset, gap_length)
    return True
