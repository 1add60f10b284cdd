"""``BufferClaim``: a frame claimed in a term, to be written in place and then committed.

``try_claim`` gives the caller the term buffer itself and the region of the payload, so there is
no copy and no allocation: write the message with ``buffer.put_*(offset + i, ...)`` or
:meth:`BufferClaim.put_bytes`, then call :meth:`commit` (publish the frame) or :meth:`abort`
(turn it into padding, which readers skip). Until one of them is called the frame length is
negative and every reader of the log waits at this frame, so do both promptly; a writer that dies
holding a claim is unblocked by the driver (see :mod:`transport.logbuffer.term_unblocker`).
Commit or abort ends the claim: a second one, or an access after it, raises
:class:`~transport.TransportStateError` instead of touching a frame readers may have passed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.transport._errors import IndexOutOfBoundsError, TransportStateError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FLAGS_FIELD_OFFSET,
    HDR_LENGTH,
    HDR_TYPE_PAD,
    RESERVED_VALUE_FIELD_OFFSET,
    TYPE_FIELD_OFFSET,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BufferClaim"]

_SIZED_IN_BYTES = frozenset({bytes, bytearray, AtomicBuffer})  # len() is the length in bytes


class BufferClaim:
    """The claimed frame: ``buffer`` is the term, the payload is ``[offset, offset + length)``.

    Unlike Aeron's, whose buffer is a fresh view that starts at the frame, ``offset`` here is an
    index into the term buffer (the frame's offset plus the header length).
    """

    __slots__ = ("_buffer", "_frame_length", "_frame_offset")

    def __init__(self) -> None:
        self._buffer: AtomicBuffer | None = None
        self._frame_offset = 0
        self._frame_length = 0

    def wrap(self, buffer: AtomicBuffer, frame_offset: int, frame_length: int) -> None:
        """Point the claim at the frame of ``frame_length`` bytes at ``frame_offset``."""
        self._buffer = buffer
        self._frame_offset = frame_offset
        self._frame_length = frame_length

    @property
    def buffer(self) -> AtomicBuffer:
        """The term buffer the frame was claimed in; ``TransportStateError`` once the claim ended."""
        return self._claimed()

    @property
    def offset(self) -> int:
        """Index in :attr:`buffer` at which the payload starts."""
        return self._frame_offset + HDR_LENGTH

    @property
    def length(self) -> int:
        """Length of the payload claimed."""
        return self._frame_length - HDR_LENGTH

    @property
    def flags(self) -> int:
        """The frame's flags byte (BEGIN | END unless changed before :meth:`commit`)."""
        return self._claimed().get_uint8(self._frame_offset + FLAGS_FIELD_OFFSET)

    @flags.setter
    def flags(self, flags: int) -> None:
        self._claimed().put_int8(self._frame_offset + FLAGS_FIELD_OFFSET, flags)

    @property
    def header_type(self) -> int:
        """The frame's type, ``HDR_TYPE_DATA`` as claimed; settable before :meth:`commit`."""
        return self._claimed().get_uint16(self._frame_offset + TYPE_FIELD_OFFSET)

    @header_type.setter
    def header_type(self, header_type: int) -> None:
        self._claimed().put_int16(self._frame_offset + TYPE_FIELD_OFFSET, header_type)

    @property
    def reserved_value(self) -> int:
        """The frame header's 8-byte reserved value, free for the application to set."""
        return self._claimed().get_int64(self._frame_offset + RESERVED_VALUE_FIELD_OFFSET)

    @reserved_value.setter
    def reserved_value(self, value: int) -> None:
        self._claimed().put_int64(self._frame_offset + RESERVED_VALUE_FIELD_OFFSET, value)

    def put_bytes(self, src: Buffer, src_offset: int = 0, length: int = -1) -> None:
        """Copy ``src`` (or ``length`` bytes of it from ``src_offset``) into the payload."""
        buffer = self._claimed()
        if length < 0:
            if type(src) in _SIZED_IN_BYTES:
                length = len(src) - src_offset  # type: ignore[arg-type]  # a type of _SIZED_IN_BYTES: the check above, which mypy does not follow
            else:
                with memoryview(src) as view:
                    length = view.nbytes - src_offset
        if length > self._frame_length - HDR_LENGTH:
            raise IndexOutOfBoundsError(
                "source longer than the claimed payload",
                length=length,
                claimed=self._frame_length - HDR_LENGTH,
            )
        buffer.put_bytes(self._frame_offset + HDR_LENGTH, src, src_offset, length)

    def commit(self) -> None:
        """Publish the frame: store its positive length with release semantics."""
        buffer = self._buffer
        if buffer is None:
            raise TransportStateError("commit of a claim that holds no frame")
        buffer.put_int32_ordered(self._frame_offset, self._frame_length)
        self._buffer = None

    def abort(self) -> None:
        """Give the frame up: make it padding and publish it, so readers step over it."""
        buffer = self._buffer
        if buffer is None:
            raise TransportStateError("abort of a claim that holds no frame")
        buffer.put_int16(self._frame_offset + TYPE_FIELD_OFFSET, HDR_TYPE_PAD)
        buffer.put_int32_ordered(self._frame_offset, self._frame_length)
        self._buffer = None

    def _claimed(self) -> AtomicBuffer:
        buffer = self._buffer
        if buffer is None:
            raise TransportStateError("the claim holds no frame: call try_claim first")
        return buffer
