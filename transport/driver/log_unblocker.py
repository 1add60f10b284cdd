"""``unblock_log``: free a whole log held up at a position by a writer that died mid-claim.

Aeron's ``LogBufferUnblocker``. The term-level work is
:func:`transport.logbuffer.term_unblocker.unblock`; this picks the term from the blocked
position and rotates the log when needed:

- the blocked position is the first byte of the next term, and the log has not rotated yet (a
  writer died between padding the end of a term and rotating): rotate it;
- otherwise unblock the frame at the position's offset in its term, bounded by that term's tail;
  when the rest of the term was turned into padding, rotate the log past it.

Returns whether anything was unblocked (the caller counts ``Unblocked Publications``).
:func:`is_possibly_blocked` is the test a publication runs before it waits out the unblock
timeout: its consumer position is stuck behind the producer, or in another term.
"""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    active_term_count,
    index_by_term_count,
    raw_tail_volatile,
    rotate_log,
    term_id,
    term_offset,
)
from aeromq.transport.logbuffer.term_unblocker import UnblockStatus, unblock

__all__ = ["is_possibly_blocked", "unblock_log"]


def is_possibly_blocked(
    meta_data_buffer: AtomicBuffer,
    position_bits_to_shift: int,
    producer_position: int,
    consumer_position: int,
) -> bool:
    """Whether a writer may be stuck at ``consumer_position`` (Aeron's ``isPossiblyBlocked``)."""
    producer_term_count = active_term_count(meta_data_buffer)
    if producer_term_count != consumer_position >> position_bits_to_shift:
        return True
    return producer_position > consumer_position


def unblock_log(
    term_buffers: Sequence[AtomicBuffer],
    meta_data_buffer: AtomicBuffer,
    blocked_position: int,
    term_length: int,
) -> bool:
    """Try to unblock the log at ``blocked_position`` (see module)."""
    position_bits_to_shift = term_length.bit_length() - 1
    blocked_term_count = blocked_position >> position_bits_to_shift
    blocked_offset = blocked_position & (term_length - 1)
    current_term_count = active_term_count(meta_data_buffer)

    if current_term_count == blocked_term_count - 1 and blocked_offset == 0:
        index = index_by_term_count(current_term_count)
        current_term_id = term_id(raw_tail_volatile(meta_data_buffer, index))
        return rotate_log(meta_data_buffer, current_term_count, current_term_id)

    blocked_index = index_by_term_count(blocked_term_count)
    raw_tail = raw_tail_volatile(meta_data_buffer, blocked_index)
    blocked_term_id = term_id(raw_tail)
    tail_offset = term_offset(raw_tail, term_length)
    status = unblock(
        meta_data_buffer, term_buffers[blocked_index], blocked_offset, tail_offset, blocked_term_id
    )
    if status is UnblockStatus.UNBLOCKED_TO_END:
        rotate_log(meta_data_buffer, blocked_term_count, blocked_term_id)
        return True
    return status is UnblockStatus.UNBLOCKED
