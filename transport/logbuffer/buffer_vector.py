"""``DirectBufferVector``: one piece of a message gathered from several buffers.

A publication can offer a message as a sequence of ``(buffer, offset, length)`` pieces, which the
appender copies one after the other into the frame (Aeron's ``DirectBufferVector``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from aeromq.transport._errors import ConfigurationError

if TYPE_CHECKING:
    from typing_extensions import Buffer

try:
    from aeromq.transport.logbuffer._gather import vectors_length as _vectors_length
except ImportError:  # not built (see transport/logbuffer/_gather.c): the Python check alone
    _vectors_length = None  # type: ignore[assignment]  # the native check is optional: None when not built

__all__ = ["DirectBufferVector", "validate_and_compute_length"]

_MAX_LENGTH = 0x7FFF_FFFF


class DirectBufferVector(NamedTuple):
    buffer: Buffer
    offset: int
    length: int


def validate_and_compute_length(vectors: Sequence[DirectBufferVector]) -> int:
    """The total length of ``vectors``; raises if a piece lies outside its buffer or it overflows.

    One C call over the list where ``_gather`` is built; the loop below finds the error."""
    if _vectors_length is not None:
        checked: int = _vectors_length(vectors)
        if checked >= 0:
            return checked
    total = 0
    for index, (buffer, offset, length) in enumerate(vectors):
        with memoryview(buffer) as view:
            capacity = view.nbytes
        if offset < 0 or length < 0 or offset + length > capacity:
            raise ConfigurationError(
                "vector outside its buffer",
                index=index,
                offset=offset,
                length=length,
                capacity=capacity,
            )
        total += length
        if total > _MAX_LENGTH:
            raise ConfigurationError("vectors longer than the maximum length", length=total)
    return total
