"""``ControlledFragmentAssembler``: the fragment assembler for ``controlled_poll``.

As :class:`~transport.logbuffer.fragment_assembler.FragmentAssembler`, but the delegate returns
an :class:`~transport.concurrent.action.Action` and the assembler returns it to the reader. If the
delegate answers ``ABORT`` to a whole message, the reader will deliver the END fragment again, so
the builder is rolled back to just before that fragment: the next delivery completes the same
message again. Fragments that only add to a message answer ``CONTINUE``.
"""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer.fragment_assembler import SessionBuilders
from aeromq.transport.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    FLAGS_FIELD_OFFSET,
    UNFRAGMENTED,
)
from aeromq.transport.logbuffer.handlers import ControlledFragmentHandler
from aeromq.transport.logbuffer.header import Header

__all__ = ["ControlledFragmentAssembler"]


class ControlledFragmentAssembler(SessionBuilders):
    """Wrap ``delegate`` so it sees whole messages; pass the assembler to ``controlled_poll``."""

    __slots__ = ("delegate",)

    def __init__(self, delegate: ControlledFragmentHandler, initial_buffer_length: int = 0) -> None:
        super().__init__(initial_buffer_length)
        self.delegate = delegate

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        flags = header.buffer.get_uint8(header.offset + FLAGS_FIELD_OFFSET)  # header.flags, inlined
        if flags & UNFRAGMENTED == UNFRAGMENTED:
            return self.delegate(buffer, offset, length, header)
        if flags & BEGIN_FLAG:
            self.begin(buffer, offset, length, header)
            return Action.CONTINUE
        builder = self.continuing(header)
        if builder is None:
            return Action.CONTINUE
        limit = builder.limit
        builder.append(buffer, offset, length)
        if not flags & END_FLAG:
            builder.next_term_offset = header.next_term_offset
            return Action.CONTINUE
        action = self.delegate(builder.buffer, 0, builder.limit, builder.complete_header(header))
        if action == Action.ABORT:
            builder.limit = limit
        else:
            builder.reset()
        return action
