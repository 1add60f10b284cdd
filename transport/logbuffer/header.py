"""``Header``: the data frame header of the fragment a handler is given; ``HeaderWriter``.

A reader keeps one ``Header`` and moves its ``(buffer, offset)`` from frame to frame, so handing
it to a handler allocates nothing; its fields are read from the frame when asked for. A handler
that wants to keep a value must copy it before returning: the header moves on with the reader.
The layout is drawn in :mod:`transport.logbuffer.frame_descriptor`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FLAGS_FIELD_OFFSET,
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    RESERVED_VALUE_FIELD_OFFSET,
    SESSION_ID_FIELD_OFFSET,
    STREAM_ID_FIELD_OFFSET,
    TERM_ID_FIELD_OFFSET,
    TERM_OFFSET_FIELD_OFFSET,
    TYPE_FIELD_OFFSET,
    VERSION_FIELD_OFFSET,
)
from aeromq.transport.logbuffer.log_buffer_descriptor import compute_position

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["Header", "HeaderWriter"]

_EMPTY = AtomicBuffer(bytearray(HDR_LENGTH))
_VERSION_FLAGS_MASK = 0xFFFF << 32  # version and flags bytes of the first word; type is 0 (PAD)


class Header:
    """The header of the frame at ``offset`` in ``buffer``.

    ``initial_term_id`` and ``position_bits_to_shift`` are the stream's, for :attr:`position`.
    ``fragmented_frame_length`` is set only on the header of a message put together from
    fragments: the bytes of term the whole message took, so that ``position`` is the position
    after its last fragment. ``context`` is free for the owner (Aeron passes the Image there).
    """

    __slots__ = (
        "buffer",
        "context",
        "fragmented_frame_length",
        "initial_term_id",
        "offset",
        "position_bits_to_shift",
    )

    def __init__(
        self, initial_term_id: int, position_bits_to_shift: int, context: object = None
    ) -> None:
        self.initial_term_id = initial_term_id
        self.position_bits_to_shift = position_bits_to_shift
        self.context = context
        self.buffer: AtomicBuffer = _EMPTY
        self.offset = 0
        self.fragmented_frame_length = -1

    @property
    def frame_length(self) -> int:
        """The frame length: header plus payload (of the whole message for an assembled one)."""
        return self.buffer.get_int32(self.offset)

    @property
    def version(self) -> int:
        """The protocol version byte (0)."""
        return self.buffer.get_uint8(self.offset + VERSION_FIELD_OFFSET)

    @property
    def flags(self) -> int:
        """The flags byte: BEGIN (0x80), END (0x40), EOS (0x20); 0xC0 for a whole message."""
        return self.buffer.get_uint8(self.offset + FLAGS_FIELD_OFFSET)

    @property
    def type(self) -> int:
        """The frame type: ``HDR_TYPE_DATA`` for what a handler is given."""
        return self.buffer.get_uint16(self.offset + TYPE_FIELD_OFFSET)

    @property
    def term_offset(self) -> int:
        """Where the frame starts in its term, in bytes (the first fragment's, if assembled)."""
        return self.buffer.get_int32(self.offset + TERM_OFFSET_FIELD_OFFSET)

    @property
    def session_id(self) -> int:
        """The session of the publication that wrote the frame."""
        return self.buffer.get_int32(self.offset + SESSION_ID_FIELD_OFFSET)

    @property
    def stream_id(self) -> int:
        """The stream the frame belongs to."""
        return self.buffer.get_int32(self.offset + STREAM_ID_FIELD_OFFSET)

    @property
    def term_id(self) -> int:
        """The id of the term the frame is in."""
        return self.buffer.get_int32(self.offset + TERM_ID_FIELD_OFFSET)

    @property
    def reserved_value(self) -> int:
        """The 8 bytes the publisher's reserved value supplier stamped (0 by default)."""
        return self.buffer.get_int64(self.offset + RESERVED_VALUE_FIELD_OFFSET)

    @property
    def next_term_offset(self) -> int:
        """Where the frame (or the fragments of an assembled message) ends, aligned."""
        length = self.fragmented_frame_length
        if length < 0:
            length = self.buffer.get_int32(self.offset)
        term_offset = self.buffer.get_int32(self.offset + TERM_OFFSET_FIELD_OFFSET)
        return (term_offset + length + FRAME_ALIGNMENT - 1) & -FRAME_ALIGNMENT

    @property
    def position(self) -> int:
        """The stream position just after this frame (after the whole message if assembled)."""
        return compute_position(
            self.term_id, self.next_term_offset, self.position_bits_to_shift, self.initial_term_id
        )

    def __repr__(self) -> str:
        return (
            f"Header(frame_length={self.frame_length}, flags=0x{self.flags:02x}, type={self.type}, "
            f"term_id={self.term_id}, term_offset={self.term_offset}, "
            f"session_id={self.session_id}, stream_id={self.stream_id})"
        )


class HeaderWriter:
    """Writes a stream's default data header at the start of each frame an appender claims.

    The first 8 bytes (frame length, version, flags, type) go first, with the length negated,
    as one release store; then term offset with session id and stream id with term id, as two
    plain 8-byte stores. The appender publishes the positive length once the payload is in.
    The three pre-shifted words are public so appenders can inline the writes on their hot path.
    """

    __slots__ = ("session_id_high", "stream_id_low", "version_flags_type")

    def __init__(self, default_header: Buffer) -> None:
        with memoryview(default_header) as view:
            if view.nbytes < HDR_LENGTH:
                raise ConfigurationError(
                    "default header shorter than a data header",
                    length=view.nbytes,
                    required=HDR_LENGTH,
                )
            raw = view.tobytes()
        word = int.from_bytes(raw[VERSION_FIELD_OFFSET : VERSION_FIELD_OFFSET + 4], "little")
        session_id = int.from_bytes(
            raw[SESSION_ID_FIELD_OFFSET : SESSION_ID_FIELD_OFFSET + 4], "little", signed=True
        )
        stream_id = int.from_bytes(
            raw[STREAM_ID_FIELD_OFFSET : STREAM_ID_FIELD_OFFSET + 4], "little"
        )
        # Signed so that every word written stays in the int64 range put_int64 takes.
        self.version_flags_type = (word - (1 << 32) if word & 0x8000_0000 else word) << 32
        self.session_id_high = session_id << 32
        self.stream_id_low = stream_id

    def write(self, term_buffer: AtomicBuffer, offset: int, length: int, term_id: int) -> None:
        """Write the header of a frame of ``length`` at ``offset``, length negated (claimed)."""
        term_buffer.put_int64_ordered(offset, self.version_flags_type | (-length & 0xFFFF_FFFF))
        term_buffer.put_int64(offset + TERM_OFFSET_FIELD_OFFSET, self.session_id_high | offset)
        term_buffer.put_int64(offset + STREAM_ID_FIELD_OFFSET, self.stream_id_low | (term_id << 32))

    def write_padding(
        self, term_buffer: AtomicBuffer, offset: int, length: int, term_id: int
    ) -> None:
        """Write and publish a padding frame of ``length`` at ``offset`` (type PAD, same flags)."""
        pad_word = self.version_flags_type & _VERSION_FLAGS_MASK
        term_buffer.put_int64_ordered(offset, pad_word | (-length & 0xFFFF_FFFF))
        term_buffer.put_int64(offset + TERM_OFFSET_FIELD_OFFSET, self.session_id_high | offset)
        term_buffer.put_int64(offset + STREAM_ID_FIELD_OFFSET, self.stream_id_low | (term_id << 32))
        term_buffer.put_int32_ordered(offset, length)
