"""``AnswerAssembler``: the session's fragment handler, which copies a fragmented answer's raw
section out of the log buffer once.

A pull answer of a mebibyte comes in fragments (16 at the IPC sessions' 64 KiB MTU, about 750 at
UDP's). A :class:`~transport.FragmentAssembler` would copy them into its buffer, and the session
would then copy the raw section (the stored batches, :func:`~common.split_raw_section`) out of
that buffer into the ``bytes`` it hands on: two copies of every pulled byte. Here the first
fragment's head says where the raw section lies and how long it is, so its bytes go from each
fragment straight into that ``bytes`` (:class:`~transport.logbuffer.BytesFiller`); the few bytes
around it (the ids before it, the answer's control fields after it) are kept aside. At the last
fragment the session gets ``(data, raw, length)``: ``data`` the message without its raw section,
as the unfragmented path makes it.

Everything else passes as a :class:`~transport.FragmentAssembler` would pass it: unfragmented
messages straight through, and fragmented ones without a raw section (or whose raw section does
not begin in the first fragment, or whose first fragment is shorter than the envelope's head)
assembled in a per-session builder (it is one, with two of its steps overridden). A fragment
that is not the one expected next (a gap) drops what was collected for its session. A raw
section that runs past the longest message
(:data:`~transport.logbuffer.frame_descriptor.MAX_MESSAGE_LENGTH`) or past its own message's end
is reported to ``on_malformed`` with a :class:`~common.CorruptMessageError`, and the message is
dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.common import (
    ENVELOPE_HEAD_MAX_LENGTH,
    CorruptMessageError,
    RawSection,
    raw_section_past_message,
    split_raw_section,
)
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import BytesFiller, FragmentAssembler, FragmentHandler, Header
from aeromq.transport.logbuffer.frame_descriptor import END_FLAG, MAX_MESSAGE_LENGTH

__all__ = ["AnswerAssembler", "AnswerHandler", "MalformedHandler"]

AnswerHandler = Callable[[bytes, bytes, int], None]
"""``(data, raw, length)``: a whole answer, ``data`` without its raw section ``raw``, of
``length`` bytes in all."""
MalformedHandler = Callable[[bytes, CorruptMessageError], None]
"""``(head, error)``: a message dropped as malformed, with its first bytes (for its ids)."""


class _RawAnswer:
    """One session's fragmented answer whose raw section is being filled."""

    __slots__ = (
        "filler",
        "head",
        "ids",
        "next_term_offset",
        "position",
        "raw_end",
        "raw_offset",
        "tail",
    )

    def __init__(self, head: bytes, section: RawSection, next_term_offset: int) -> None:
        self.head = head  # the message's first bytes, for the ids of an error
        self.ids = head[: section.tag_offset]  # the envelope's ids: the raw section follows
        self.raw_offset = section.offset
        self.raw_end = section.offset + section.length
        self.filler = BytesFiller(section.length)
        self.tail = bytearray()  # the message's bytes after its raw section
        self.position = 0  # of the next fragment in the message
        self.next_term_offset = next_term_offset

    def route(self, buffer: AtomicBuffer, offset: int, length: int) -> None:
        """Put a fragment's bytes where they go: the raw section's into the filler, those
        after it into the tail (those before it are the head's)."""
        start = self.position
        end = start + length
        self.position = end
        first = max(start, self.raw_offset)
        last = min(end, self.raw_end)
        if first < last:
            self.filler.put(buffer, offset + first - start, last - first)
        after = max(start, self.raw_end)
        if after < end:
            self.tail += buffer.get_bytes(offset + after - start, end - after)


class AnswerAssembler(FragmentAssembler):
    """A :class:`~transport.FragmentAssembler` handing whole messages to ``on_whole``, except
    fragmented answers with a raw section, which go to ``on_answer`` (see the module doc);
    pass it where a fragment handler goes."""

    __slots__ = ("_on_answer", "_on_malformed", "_raw")

    def __init__(
        self,
        on_whole: FragmentHandler,
        on_answer: AnswerHandler,
        on_malformed: MalformedHandler,
        initial_buffer_length: int = 0,
    ) -> None:
        super().__init__(on_whole, initial_buffer_length)
        self._on_answer = on_answer
        self._on_malformed = on_malformed
        self._raw: dict[int, _RawAnswer] = {}

    def begin(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        """Start the session's message afresh with this BEGIN fragment: its raw section (if it
        begins here) goes into a filler, anything else into the session's builder."""
        session_id = header.session_id
        self._raw.pop(session_id, None)
        self._reset_builder(session_id)
        if length < ENVELOPE_HEAD_MAX_LENGTH:  # a tiny MTU: the head may go on in the next one
            super().begin(buffer, offset, length, header)
            return
        head = buffer.get_bytes(offset, ENVELOPE_HEAD_MAX_LENGTH)
        try:
            section = split_raw_section(head, MAX_MESSAGE_LENGTH)
        except CorruptMessageError as exc:  # longer than any message: dropped whole
            self._on_malformed(head, exc)
            return
        if section is None or section.offset > length:
            super().begin(buffer, offset, length, header)  # assembled whole, as before
            return
        raw = self._raw[session_id] = _RawAnswer(head, section, header.next_term_offset)
        raw.route(buffer, offset, length)

    def append_later(
        self,
        buffer: AtomicBuffer,
        offset: int,
        length: int,
        header: Header,
        flags: int,
    ) -> None:
        """Add a later fragment of the session's message: a piece of its raw section straight
        into the filler, the rest as :meth:`_continue_raw` or the builder takes it."""
        raw = self._raw.get(header.session_id)
        if raw is None:
            super().append_later(buffer, offset, length, header, flags)
            return
        start = raw.position
        end = start + length
        if (
            flags & END_FLAG
            or start < raw.raw_offset
            or end > raw.raw_end
            or header.term_offset != raw.next_term_offset
        ):
            self._continue_raw(raw, buffer, offset, length, header, flags)
            return
        raw.filler.put(buffer, offset, length)  # a fragment of the raw section only
        raw.position = end
        raw.next_term_offset = header.next_term_offset

    def _continue_raw(
        self,
        raw: _RawAnswer,
        buffer: AtomicBuffer,
        offset: int,
        length: int,
        header: Header,
        flags: int,
    ) -> None:
        session_id = header.session_id
        if header.term_offset != raw.next_term_offset:  # a gap: what was collected is dropped
            del self._raw[session_id]
            return
        if raw.position + length > MAX_MESSAGE_LENGTH:
            del self._raw[session_id]
            self._on_malformed(raw.head, _too_long(raw, raw.position + length))
            return
        raw.route(buffer, offset, length)
        if not flags & END_FLAG:
            raw.next_term_offset = header.next_term_offset
            return
        del self._raw[session_id]
        filler = raw.filler
        if filler.filled != filler.length:
            self._on_malformed(raw.head, _too_long(raw, raw.position))
            return
        self._on_answer(raw.ids + raw.tail, filler.take(), raw.position)

    def _reset_builder(self, session_id: int) -> None:
        builder = self._builders.get(session_id)
        if builder is not None:
            builder.reset()

    def free_session_buffer(self, session_id: int) -> bool:
        """Drop what a session that has gone left half assembled; whether it left anything."""
        had_raw = self._raw.pop(session_id, None) is not None
        return super().free_session_buffer(session_id) or had_raw

    def clear(self) -> None:
        """Drop every session's half-assembled message."""
        self._raw.clear()
        super().clear()


def _too_long(raw: _RawAnswer, message_length: int) -> CorruptMessageError:
    return raw_section_past_message(raw.ids, raw.filler.length, message_length)
