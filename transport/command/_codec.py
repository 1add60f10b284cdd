"""Checks and string blocks shared by the command codecs (private).

Decoders get a message as ``(buffer, offset, length)`` from the ring or broadcast buffer and
must never read past ``length``: every field is checked before it is read, and a message that
is too short or whose length fields do not add up raises :class:`MalformedCommandError` naming
the message, the field, its offset and the lengths. Bytes after the last known field are
ignored, as Aeron does, so that a newer peer may append fields.

Strings are an i32 length then the bytes (Agrona's ``putStringAscii`` layout). Aeron writes
ASCII; we encode UTF-8, which is the same bytes for ASCII text.
"""

from __future__ import annotations

from aeromq.transport._errors import (
    ConfigurationError,
    IndexOutOfBoundsError,
    MalformedCommandError,
)
from aeromq.transport.concurrent import AtomicBuffer

__all__ = [
    "LENGTH_PREFIX",
    "align4",
    "check_capacity",
    "check_region",
    "decode_text",
    "encode_text",
    "read_block",
    "require",
    "write_block",
]

LENGTH_PREFIX = 4
"""Bytes of the i32 length in front of a string or byte block."""


def align4(length: int) -> int:
    """``length`` rounded up to a multiple of 4 (a padded block in a 4-byte packed struct)."""
    return (length + 3) & ~3


def check_region(buffer: AtomicBuffer, offset: int, length: int, message: str) -> None:
    """Raise unless ``[offset, offset + length)`` lies inside ``buffer``."""
    if offset < 0 or length < 0 or offset + length > buffer.capacity:
        raise MalformedCommandError(
            "message lies outside its buffer",
            command=message,
            offset=offset,
            length=length,
            capacity=buffer.capacity,
        )


def require(message: str, field: str, field_offset: int, field_length: int, length: int) -> None:
    """Raise unless a field of ``field_length`` bytes at ``field_offset`` fits in ``length``."""
    if field_offset + field_length > length:
        raise MalformedCommandError(
            "message too short",
            command=message,
            field=field,
            field_offset=field_offset,
            field_length=field_length,
            length=length,
        )


def read_block(
    buffer: AtomicBuffer, offset: int, length: int, message: str, field: str, field_offset: int
) -> tuple[bytes, int]:
    """Read the length-prefixed block at ``field_offset``; return it and the offset after it."""
    require(message, f"{field}_length", field_offset, LENGTH_PREFIX, length)
    block_length = buffer.get_int32(offset + field_offset)
    start = field_offset + LENGTH_PREFIX
    if block_length < 0 or start + block_length > length:
        raise MalformedCommandError(
            "length field does not fit the message",
            command=message,
            field=field,
            field_offset=field_offset,
            field_length=block_length,
            length=length,
        )
    return buffer.get_bytes(offset + start, block_length), start + block_length


def decode_text(raw: bytes, message: str, field: str, field_offset: int) -> str:
    """Decode a name (channel, file name): UTF-8, so ASCII as Aeron writes it."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedCommandError(
            "text is not UTF-8",
            command=message,
            field=field,
            field_offset=field_offset,
            at=exc.start,
        ) from exc


def encode_text(value: str, field: str) -> bytes:
    """Encode a string field for the wire (UTF-8, which is ASCII for ASCII text)."""
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigurationError("text cannot be encoded", field=field, at=exc.start) from exc


def check_capacity(buffer: AtomicBuffer, offset: int, length: int, message: str) -> None:
    """Raise before writing anything if a message of ``length`` bytes does not fit."""
    if offset < 0 or offset + length > buffer.capacity:
        raise IndexOutOfBoundsError(
            "buffer too small for message",
            command=message,
            offset=offset,
            length=length,
            capacity=buffer.capacity,
        )


def write_block(buffer: AtomicBuffer, index: int, data: bytes) -> int:
    """Write an i32 length then ``data`` at ``index``; return the bytes written."""
    buffer.put_int32(index, len(data))
    if data:
        buffer.put_bytes(index + LENGTH_PREFIX, data)
    return LENGTH_PREFIX + len(data)
