"""Scans of a term for complete frames, without delivering them.

``scan_for_availability`` is the sender's: how many bytes from an offset are ready to go, up to a
maximum length, stopping before a frame that would not fit and at padding (whose length is
returned apart, so the sender sends only its header but advances past all of it).
``scan_for_block`` is the block poll's: the offset up to which whole frames are ready, up to a
limit, so that a block handler gets complete fragments only.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH

__all__ = ["scan_for_availability", "scan_for_block"]

_LOW_32: Final = 0xFFFF_FFFF
_NEGATIVE: Final = 0x8000_0000
_TYPE_SHIFT: Final = 48
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT


def scan_for_availability(
    term_buffer: AtomicBuffer, offset: int, max_length: int
) -> tuple[int, int]:
    """Return ``(available, padding)``: bytes ready from ``offset`` and padding to skip after.

    ``available`` covers whole aligned frames and is at most ``max_length`` (and the rest of the
    term). When the scan ends on a padding frame, ``available`` includes only its header and
    ``padding`` is the rest of it, so the position advances by ``available + padding``.
    """
    limit = min(max_length, term_buffer.capacity - offset)
    available = 0
    padding = 0
    get_word = term_buffer.get_int64_volatile
    while available < limit:
        word = get_word(offset + available)
        frame_length = word & _LOW_32
        if frame_length == 0 or frame_length & _NEGATIVE:
            break
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        if not word >> _TYPE_SHIFT:  # padding: send its header, skip the rest
            padding = aligned_length - HDR_LENGTH
            aligned_length = HDR_LENGTH
        available += aligned_length
        if available > limit:
            available -= aligned_length
            padding = 0
            break
        if padding != 0:
            break
    return available, padding


def scan_for_block(term_buffer: AtomicBuffer, term_offset: int, limit_offset: int) -> int:
    """The offset, at most ``limit_offset``, up to which whole frames are ready from ``term_offset``.

    Padding ends a block: a padding frame at ``term_offset`` is a block by itself (the result is
    past its end, which may be beyond ``limit_offset``), one later ends the block before it.
    """
    offset = term_offset
    get_word = term_buffer.get_int64_volatile
    while offset < limit_offset:
        word = get_word(offset)
        frame_length = word & _LOW_32
        if frame_length == 0 or frame_length & _NEGATIVE:
            break
        aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
        if not word >> _TYPE_SHIFT:
            if offset == term_offset:
                offset += aligned_length
            break
        if offset + aligned_length > limit_offset:
            break
        offset += aligned_length
    return offset
