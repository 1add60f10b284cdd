"""``scan_for_gap``: find the first hole in a term being rebuilt from received frames.

From the rebuilt (contiguous) offset, walk complete frames up to a limit (the high-water mark);
at the first frame not there, measure the gap by stepping a frame alignment at a time until a
non-zero length appears, and report ``(term_id, gap_offset, gap_length)`` to the handler, which
sends a NAK for it. Returns the offset of the first gap (the end of the contiguous frames).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeAlias

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH, align

__all__ = ["GapHandler", "scan_for_gap"]

GapHandler: TypeAlias = Callable[[int, int, int], None]
"""``handler(term_id, offset, length)`` for a gap found in the term."""

_ALIGNED_HEADER_LENGTH: Final = align(HDR_LENGTH, FRAME_ALIGNMENT)


def scan_for_gap(
    term_buffer: AtomicBuffer,
    term_id: int,
    term_offset: int,
    limit_offset: int,
    handler: GapHandler,
) -> int:
    """Scan ``[term_offset, limit_offset)``; report the first gap to ``handler``; return its offset."""
    offset = term_offset
    get_length = term_buffer.get_int32_volatile
    while offset < limit_offset:
        frame_length = get_length(offset)
        if frame_length <= 0:
            break
        offset += align(frame_length, FRAME_ALIGNMENT)

    gap_begin_offset = offset
    if offset < limit_offset:
        limit = limit_offset - _ALIGNED_HEADER_LENGTH
        while offset < limit:
            offset += FRAME_ALIGNMENT
            if get_length(offset) != 0:
                offset -= _ALIGNED_HEADER_LENGTH
                break
        handler(term_id, gap_begin_offset, offset - gap_begin_offset + _ALIGNED_HEADER_LENGTH)
    return gap_begin_offset
