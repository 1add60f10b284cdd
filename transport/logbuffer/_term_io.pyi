from collections.abc import Callable

from typing_extensions import Buffer

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.handlers import (
    ControlledFragmentHandler,
    ErrorHandler,
    FragmentHandler,
)
from aeromq.transport.logbuffer.header import Header

class ImageReader:
    def __init__(
        self,
        term_buffers: tuple[AtomicBuffer, ...],
        position_buffer: AtomicBuffer,
        position_offset: int,
        position_bits_to_shift: int,
        header: Header,
        error_handler: ErrorHandler,
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    def poll(self, handler: FragmentHandler, fragment_limit: int, /) -> int: ...
    def controlled_poll(
        self, handler: ControlledFragmentHandler, fragment_limit: int, /
    ) -> int: ...
    def close(self) -> None: ...

class ImageRoundRobin:
    index: int
    def __init__(
        self,
        polls: tuple[Callable[[FragmentHandler, int], int], ...],
        controlled_polls: tuple[Callable[[ControlledFragmentHandler, int], int], ...],
        index: int,
    ) -> None: ...
    def poll(self, handler: FragmentHandler, fragment_limit: int, /) -> int: ...
    def controlled_poll(
        self, handler: ControlledFragmentHandler, fragment_limit: int, /
    ) -> int: ...

class ExclusiveTail:
    term_id: int
    term_offset: int
    active_index: int
    term_begin_position: int
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
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    def offer(self, buffer: Buffer, offset: int = 0, length: int = -1, /) -> int: ...
    def close(self) -> None: ...
