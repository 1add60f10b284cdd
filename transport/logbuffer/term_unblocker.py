"""``unblock``: free a term held up by a writer that claimed space and never published it.

A reader stops at a frame whose length is not positive. If the writer of that frame died (or is
stuck) the log never moves again, so the driver, after the unblock timeout, calls this at the
consumer's blocked offset with the publication's tail offset (Aeron's TermUnblocker):

- length < 0: the header was written; the frame becomes padding of that length.
- length 0: scan forward a frame alignment at a time, up to the tail, for the next frame with a
  non-zero length; if everything between is still zero, the gap becomes padding up to it. If the
  scan reaches the end of the term and the blocked frame is still zero, the rest of the term
  becomes padding (``UNBLOCKED_TO_END``: the caller then moves the log on).
- length > 0: nothing is blocked.
"""

from __future__ import annotations

from enum import IntEnum

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_TYPE_PAD,
    frame_length_ordered,
    frame_length_volatile,
    set_frame_term_id,
    set_frame_term_offset,
    set_frame_type,
)
from aeromq.transport.logbuffer.log_buffer_descriptor import apply_default_header

__all__ = ["UnblockStatus", "unblock"]


class UnblockStatus(IntEnum):
    """What :func:`unblock` did to the term."""

    NO_ACTION = 0
    """Nothing was blocked, or the gap may still be written: nothing was changed."""
    UNBLOCKED = 1
    """The blocked frame was turned into padding; readers can go on."""
    UNBLOCKED_TO_END = 2
    """The rest of the term was turned into padding."""


def unblock(
    meta_data_buffer: AtomicBuffer,
    term_buffer: AtomicBuffer,
    blocked_offset: int,
    tail_offset: int,
    term_id: int,
) -> UnblockStatus:
    """Try to unblock ``term_buffer`` at ``blocked_offset``; frames up to ``tail_offset`` are claimed."""
    frame_length = frame_length_volatile(term_buffer, blocked_offset)
    if frame_length < 0:
        _reset_header(meta_data_buffer, term_buffer, blocked_offset, term_id, -frame_length)
        return UnblockStatus.UNBLOCKED
    if frame_length > 0:
        return UnblockStatus.NO_ACTION

    status = UnblockStatus.NO_ACTION
    current_offset = blocked_offset + FRAME_ALIGNMENT
    while current_offset < tail_offset:
        if frame_length_volatile(term_buffer, current_offset) != 0:
            if _all_zero_back_to(term_buffer, current_offset, blocked_offset):
                length = current_offset - blocked_offset
                _reset_header(meta_data_buffer, term_buffer, blocked_offset, term_id, length)
                status = UnblockStatus.UNBLOCKED
            break
        current_offset += FRAME_ALIGNMENT

    if (
        current_offset == term_buffer.capacity
        and frame_length_volatile(term_buffer, blocked_offset) == 0
    ):
        length = current_offset - blocked_offset
        _reset_header(meta_data_buffer, term_buffer, blocked_offset, term_id, length)
        status = UnblockStatus.UNBLOCKED_TO_END
    return status


def _reset_header(
    meta_data_buffer: AtomicBuffer,
    term_buffer: AtomicBuffer,
    term_offset: int,
    term_id: int,
    frame_length: int,
) -> None:
    apply_default_header(meta_data_buffer, term_buffer, term_offset)
    set_frame_type(term_buffer, term_offset, HDR_TYPE_PAD)
    set_frame_term_offset(term_buffer, term_offset)
    set_frame_term_id(term_buffer, term_offset, term_id)
    frame_length_ordered(term_buffer, term_offset, frame_length)


def _all_zero_back_to(term_buffer: AtomicBuffer, from_offset: int, limit_offset: int) -> bool:
    """Whether every frame length from ``from_offset`` back down to ``limit_offset`` is still 0."""
    offset = from_offset - FRAME_ALIGNMENT
    while offset >= limit_offset:
        if frame_length_volatile(term_buffer, offset) != 0:
            return False
        offset -= FRAME_ALIGNMENT
    return True
