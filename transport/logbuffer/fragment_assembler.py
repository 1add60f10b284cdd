"""``FragmentAssembler``: a fragment handler that hands whole messages to another.

Unfragmented frames pass straight through. The fragments of a longer message are copied into a
:class:`~transport.logbuffer.buffer_builder.BufferBuilder` kept per session id (an image is one
session, a subscription sees several), and the delegate gets the message once its END fragment
arrives, with a header that describes the whole message. A fragment that is not the one expected
next (its term offset is not where the previous one ended: a gap, or a stream joined mid-message)
drops what was collected for that session.
"""

from __future__ import annotations

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.buffer_builder import BufferBuilder
from aeromq.transport.logbuffer.frame_descriptor import (
    BEGIN_FLAG,
    END_FLAG,
    FLAGS_FIELD_OFFSET,
    UNFRAGMENTED,
)
from aeromq.transport.logbuffer.handlers import FragmentHandler
from aeromq.transport.logbuffer.header import Header

__all__ = ["FragmentAssembler"]


class SessionBuilders:
    """The builders of an assembler, one per session id, and the rules for using them."""

    __slots__ = ("_builders", "_initial_buffer_length")

    def __init__(self, initial_buffer_length: int) -> None:
        self._initial_buffer_length = initial_buffer_length
        self._builders: dict[int, BufferBuilder] = {}

    def begin(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        """Start the session's message afresh with this BEGIN fragment."""
        session_id = header.session_id
        builder = self._builders.get(session_id)
        if builder is None:
            builder = self._builders[session_id] = BufferBuilder(self._initial_buffer_length)
        builder.reset().capture_header(header).append(buffer, offset, length)
        builder.next_term_offset = header.next_term_offset

    def continuing(self, header: Header) -> BufferBuilder | None:
        """The builder this later fragment continues, or None (and the builder reset) if none."""
        builder = self._builders.get(header.session_id)
        if builder is None:
            return None
        if header.term_offset != builder.next_term_offset:
            builder.reset()
            return None
        return builder

    def free_session_buffer(self, session_id: int) -> bool:
        """Drop the builder of a session that has gone (an image closed); whether it had one."""
        return self._builders.pop(session_id, None) is not None

    def clear(self) -> None:
        """Reset every session's builder: what was being assembled is dropped."""
        for builder in self._builders.values():
            builder.reset()


class FragmentAssembler(SessionBuilders):
    """Wrap ``delegate`` so it sees whole messages; pass the assembler where a handler goes."""

    __slots__ = ("delegate",)

    def __init__(self, delegate: FragmentHandler, initial_buffer_length: int = 0) -> None:
        super().__init__(initial_buffer_length)
        self.delegate = delegate

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        flags = header.buffer.get_uint8(header.offset + FLAGS_FIELD_OFFSET)  # header.flags, inlined
        if flags & UNFRAGMENTED == UNFRAGMENTED:
            self.delegate(buffer, offset, length, header)
        elif flags & BEGIN_FLAG:
            self.begin(buffer, offset, length, header)
        else:
            self.append_later(buffer, offset, length, header, flags)

    def append_later(
        self,
        buffer: AtomicBuffer,
        offset: int,
        length: int,
        header: Header,
        flags: int,
    ) -> None:
        """A fragment after the BEGIN one: appended to its session's message, which goes to
        the delegate whole at its END fragment (dropped on a gap)."""
        builder = self.continuing(header)
        if builder is None:
            return
        builder.append(buffer, offset, length)
        if flags & END_FLAG:
            self.delegate(builder.buffer, 0, builder.limit, builder.complete_header(header))
            builder.reset()
        else:
            builder.next_term_offset = header.next_term_offset
