"""``ImageReader``, ``ImageRoundRobin``, ``ExclusiveTail``: polls and a one-frame offer in one call.

All three are the native helper's (``transport/logbuffer/_term_io.c`` says why and what each
call does), used by ``transport.client.Image``, ``Subscription`` and ``ExclusivePublication``.
:data:`NATIVE_TERM_IO` says whether it is built. Where it is not, ``ImageReader`` and
``ImageRoundRobin`` are None (images and subscriptions poll in Python, the references the native
calls are tested against) and ``ExclusiveTail`` is :class:`PyExclusiveTail`: the same append
state, whose :meth:`~PyExclusiveTail.offer` never appends, so the publication's Python path does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aeromq.transport.concurrent import AtomicBuffer

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "NATIVE_TERM_IO",
    "ExclusiveTail",
    "ImageReader",
    "ImageRoundRobin",
    "PyExclusiveTail",
]


class PyExclusiveTail:
    """An exclusive publication's append state where the native helper is not built.

    Takes the native ``ExclusiveTail``'s arguments; keeps ``term_id``, ``term_offset``,
    ``active_index`` and ``term_begin_position`` for the publication's Python paths.
    """

    __slots__ = ("active_index", "closed", "term_begin_position", "term_id", "term_offset")

    def __init__(
        self,
        term_buffers: tuple[AtomicBuffer, ...],
        meta_buffer: AtomicBuffer,
        limit_buffer: AtomicBuffer,
        limit_offset: int,
        header_words: tuple[int, int, int],
        term_length: int,
        max_payload_length: int,
        term_id: int,
        term_offset: int,
        active_index: int,
        term_begin_position: int,
    ) -> None:
        self.term_id = term_id
        self.term_offset = term_offset
        self.active_index = active_index
        self.term_begin_position = term_begin_position
        self.closed = False

    def offer(self, buffer: Buffer, offset: int = 0, length: int = -1, /) -> int:
        """0: nothing appended here; the publication's Python path appends."""
        return 0

    def close(self) -> None:
        """Mark closed (the native one's offers then return 0)."""
        self.closed = True


try:
    from aeromq.transport.logbuffer._term_io import ExclusiveTail, ImageReader, ImageRoundRobin

    NATIVE_TERM_IO: Final = True
except ImportError:  # not built (see transport/logbuffer/_term_io.c): the Python paths alone
    ExclusiveTail = PyExclusiveTail  # type: ignore[assignment,misc]  # the same state, in Python
    ImageReader = None  # type: ignore[assignment,misc]  # the native reader is optional: None when not built
    ImageRoundRobin = None  # type: ignore[assignment,misc]  # as ImageReader: None when not built
    NATIVE_TERM_IO = False  # type: ignore[misc]  # Final on the import's branch, this on the other
