"""``AnswerAssembler``: the session's fragment handler, which copies a fragmented answer's raw
section out of the log buffer once.

A pull answer of a mebibyte comes in fragments (16 at the IPC sessions' 64 KiB MTU, about 750 at
UDP's). A :class:`~transport.FragmentAssembler` would copy them into its buffer, and the session
would then copy the raw section (the stored batches, :mod:`common._envelope`) out of that buffer
into the ``bytes`` it hands on: two copies of every pulled byte. Here the first fragment's head
says where the raw section lies and how long it is, so its bytes go from each fragment straight
into that ``bytes`` (:class:`BytesFiller`); the few bytes around it (the ids before it, the
answer's control fields after it) are kept aside. At the last fragment the session gets
``(data, raw, length)``: ``data`` the message without its raw section, as the unfragmented path
makes it.

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

from aeromq.common import CorruptMessageError
from aeromq.common._envelope import (
    ENVELOPE_HEAD_MAX_LENGTH,
    RawSection,
    raw_section_past_message,
    split_raw_section,
)
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.fragment_assembler import FragmentAssembler
from aeromq.transport.logbuffer.frame_descriptor import END_FLAG, MAX_MESSAGE_LENGTH
from aeromq.transport.logbuffer.handlers import FragmentHandler
from aeromq.transport.logbuffer.header import Header

__all__ = ["AnswerAssembler", "AnswerHandler", "BytesFiller", "MalformedHandler"]

AnswerHandler = Callable[[bytes, bytes, int], None]
"""``(data, raw, length)``: a whole answer, ``data`` without its raw section ``raw``, of
``length`` bytes in all."""
MalformedHandler = Callable[[bytes, CorruptMessageError], None]
"""``(head, error)``: a message dropped as malformed, with its first bytes (for its ids)."""


class _PyBytesFiller:
    """:class:`BytesFiller` where the C helper is not built (one more copy, at ``take``)."""

    __slots__ = ("_buffer", "filled", "length")

    def __init__(self, length: int) -> None:
        if not 0 <= length <= 0x7FFF_FFFF:
            raise ValueError(f"length outside 0..2^31-1: length={length}")
        self._buffer: bytearray | None = bytearray(length)
        self.length = length
        self.filled = 0

    def put(self, source: AtomicBuffer, offset: int, length: int) -> int:
        buffer = self._buffer
        if buffer is None:
            raise ValueError("the bytes were taken")
        if length < 0 or length > self.length - self.filled:
            raise ValueError(
                f"more bytes than are left to fill: length={length} "
                f"left={self.length - self.filled}"
            )
        view = memoryview(source)
        if offset < 0 or offset > len(view) - length:
            raise ValueError(
                f"source range outside its buffer: offset={offset} length={length} "
                f"capacity={len(view)}"
            )
        buffer[self.filled : self.filled + length] = view[offset : offset + length]
        self.filled += length
        return self.filled

    def take(self) -> bytes:
        buffer = self._buffer
        if buffer is None:
            raise ValueError("the bytes were taken")
        if self.filled != self.length:
            raise ValueError(f"not full: filled={self.filled} length={self.length}")
        self._buffer = None
        return bytes(buffer)


try:
    from aeromq.transport.logbuffer._gather import BytesFiller
except ImportError:  # not built: the Python filler
    BytesFiller = _PyBytesFiller  # type: ignore[assignment,misc]


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
        had_raw = self._raw.pop(session_id, None) is not None
        return super().free_session_buffer(session_id) or had_raw

    def clear(self) -> None:
        self._raw.clear()
        super().clear()


def _too_long(raw: _RawAnswer, message_length: int) -> CorruptMessageError:
    return raw_section_past_message(raw.ids, raw.filler.length, message_length)
