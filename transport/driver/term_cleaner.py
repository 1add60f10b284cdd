"""``clean_term``: zero a log behind its slowest reader, so appenders write over zeroed memory.

Aeron's ``cleanBufferTo`` (IPC publications, network publications and images each call it): from
the clean position towards ``position``, at most to the end of the clean position's term, the
term is zeroed, the first 8 bytes of the cleaned range last and ordered (a frame's length field
is the word readers and appenders look at). Returns the new clean position.
"""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.log_buffer_descriptor import PARTITION_COUNT

__all__ = ["clean_term"]


def clean_term(
    term_buffers: Sequence[AtomicBuffer],
    clean_position: int,
    position: int,
    term_length: int,
    position_bits_to_shift: int,
) -> int:
    """Zero from ``clean_position`` towards ``position`` (see module); the new clean position."""
    if position <= clean_position:
        return clean_position
    term_buffer = term_buffers[(clean_position >> position_bits_to_shift) % PARTITION_COUNT]
    term_offset = clean_position & (term_length - 1)
    length = min(position - clean_position, term_length - term_offset)
    if length > 8:
        term_buffer.set_memory(term_offset + 8, length - 8, 0)
    term_buffer.put_int64_ordered(term_offset, 0)
    return clean_position + length
