"""``read``: deliver the complete fragments of a term to a handler, in order.

The reader starts at a frame boundary and stops at the first frame not yet published (length
``<= 0``), at the end of the term, or after ``fragments_limit`` fragments. Padding frames are
stepped over without a call. One 8-byte acquire load per frame gives both the length (low half)
and the type (top 16 bits), and the caller's one ``Header`` is moved from frame to frame, so a
poll allocates nothing per fragment.

A handler that raises is reported to ``error_handler`` and ends the read; its fragment counts as
consumed (as in Aeron, so a poison message is not redelivered forever). If ``error_handler``
itself raises, the exception propagates and the caller learns nothing of the read: it will
deliver those fragments again.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT, HDR_LENGTH
from aeromq.transport.logbuffer.handlers import ErrorHandler, FragmentHandler
from aeromq.transport.logbuffer.header import Header

__all__ = ["read"]

_LOW_32: Final = 0xFFFF_FFFF
_NEGATIVE: Final = 0x8000_0000
_TYPE_SHIFT: Final = 48  # the type field (offset 6) within the first 8-byte header word
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT


def read(
    term_buffer: AtomicBuffer,
    term_offset: int,
    handler: FragmentHandler,
    fragments_limit: int,
    header: Header,
    error_handler: ErrorHandler,
) -> tuple[int, int]:
    """Read from ``term_offset``; return ``(fragments_read, offset_after_last_frame_read)``."""
    fragments_read = 0
    offset = term_offset
    capacity = term_buffer.capacity
    get_word = term_buffer.get_int64_volatile
    header.buffer = term_buffer
    try:
        while fragments_read < fragments_limit and offset < capacity:
            word = get_word(offset)
            frame_length = word & _LOW_32
            if frame_length == 0 or frame_length & _NEGATIVE:
                break
            frame_offset = offset
            offset += (frame_length + _ALIGN_UP) & _ALIGN_DOWN
            if word >> _TYPE_SHIFT:  # not HDR_TYPE_PAD
                fragments_read += 1
                header.offset = frame_offset
                handler(term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header)
    except Exception as exc:  # the handler's: report it, keep what was consumed
        error_handler(exc)
    return fragments_read, offset
