"""``Publication``: what concurrent and exclusive publications share, and the offer results.

A publication appends messages to the log buffer of one (channel, stream id, session id) that the
media driver created for it. The hot path (``offer``, ``offer_vectored``, ``offer_batch``,
``try_claim``) returns the new stream position (> 0) or one of the codes below; it raises only for
a caller's bug (a message longer than :attr:`Publication.max_message_length`, a claim longer than
:attr:`Publication.max_payload_length`, a region outside its buffer).

======================  ====  ==============================================================
``NOT_CONNECTED``        -1   no subscriber is connected: nothing was appended
``BACK_PRESSURED``       -2   the slowest subscriber is a term window behind: try again later
``ADMIN_ACTION``         -3   the log moved to its next term during the call: try again now
``CLOSED``               -4   the publication (or its client) is closed
``MAX_POSITION_EXCEEDED``-5   the stream reached ``term_length * 2**31``: open a new one
======================  ====  ==============================================================

The publication limit (``position_limit``) is a counter the driver moves to the slowest
subscriber's position plus the term window; an append starts only below it. A message longer than
``max_payload_length`` (MTU - 32) is cut into fragments flagged BEGIN and END; the longest message
is ``max_message_length`` = min(term length / 8, 16 MiB).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

from aeromq.transport._errors import ConfigurationError, MessageTooLongError
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.position import ReadablePosition
from aeromq.transport.logbuffer.buffer_vector import DirectBufferVector
from aeromq.transport.logbuffer.frame_descriptor import HDR_LENGTH, compute_max_message_length
from aeromq.transport.logbuffer.handlers import ReservedValueSupplier
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_ACTIVE_TERM_COUNT_OFFSET,
    PARTITION_COUNT,
    compute_position,
    default_frame_header,
    is_connected,
    position_bits_to_shift,
    raw_tail_volatile,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from aeromq.transport.client.client_conductor import ClientConductor

__all__ = [
    "ADMIN_ACTION",
    "BACK_PRESSURED",
    "CLOSED",
    "MAX_POSITION_EXCEEDED",
    "NOT_CONNECTED",
    "Publication",
    "VectorPiece",
    "to_vectors",
]

NOT_CONNECTED: Final = -1
BACK_PRESSURED: Final = -2
ADMIN_ACTION: Final = -3
CLOSED: Final = -4
MAX_POSITION_EXCEEDED: Final = -5

VectorPiece: TypeAlias = "Buffer | DirectBufferVector"
"""One piece of a vectored message: a whole buffer, or ``(buffer, offset, length)``."""


def to_vectors(pieces: Sequence[VectorPiece]) -> list[DirectBufferVector]:
    """The pieces of a vectored offer as ``DirectBufferVector``s (whole buffers become one each)."""
    vectors: list[DirectBufferVector] = []
    append = vectors.append
    for piece in pieces:
        kind = type(piece)
        if kind is memoryview:  # the broker's views of its commit log: the common piece
            append(_vector(piece, 0, piece.nbytes))  # type: ignore[arg-type, union-attr]  # a memoryview:  # narrowed by kind, which mypy does not follow
        elif kind is bytes:
            append(_vector(piece, 0, len(piece)))  # type: ignore[arg-type]  # bytes:  # narrowed by kind, which mypy does not follow
        elif isinstance(piece, DirectBufferVector):
            append(piece)
        else:
            with memoryview(piece) as view:
                append(DirectBufferVector(piece, 0, view.nbytes))
    return vectors


def _vector(buffer: Buffer, offset: int, length: int) -> DirectBufferVector:
    """``DirectBufferVector(buffer, offset, length)`` without the named tuple's Python-level
    ``__new__`` (a large share of a piece's cost on a pull answer of ~170 pieces)."""
    return tuple.__new__(DirectBufferVector, (buffer, offset, length))


class Publication:
    """The state and checks shared by :class:`ConcurrentPublication` and
    :class:`ExclusivePublication` (made by ``Aeron.add_publication`` and
    ``Aeron.add_exclusive_publication``; never constructed by applications)."""

    __slots__ = (
        "_conductor",
        "_header_writer",
        "_is_closed",
        "_log_buffers",
        "_meta",
        "_position_limit",
        "_session_id_high",
        "_stream_id_low",
        "_term_buffers",
        "_version_flags_type",
        "channel",
        "channel_status_id",
        "initial_term_id",
        "max_message_length",
        "max_payload_length",
        "max_possible_position",
        "original_registration_id",
        "position_bits_to_shift",
        "position_limit_id",
        "registration_id",
        "session_id",
        "stream_id",
        "term_buffer_length",
    )

    def __init__(
        self,
        conductor: ClientConductor,
        channel: str,
        stream_id: int,
        session_id: int,
        position_limit_id: int,
        channel_status_id: int,
        log_buffers: LogBuffers,
        original_registration_id: int,
        registration_id: int,
    ) -> None:
        meta = log_buffers.meta_data_buffer
        metadata = log_buffers.metadata
        term_length = log_buffers.term_length
        self._conductor = conductor
        self._log_buffers = log_buffers
        self._meta = meta
        self._term_buffers: tuple[AtomicBuffer, ...] = log_buffers.term_buffers
        self._is_closed = False
        self.channel = channel
        self.stream_id = stream_id
        self.session_id = session_id
        self.channel_status_id = channel_status_id
        self.original_registration_id = original_registration_id
        self.registration_id = registration_id
        self.position_limit_id = position_limit_id
        values = conductor.counters_values_buffer
        self._position_limit: Callable[[], int] = ReadablePosition(
            values, position_limit_id
        ).get_volatile
        self.initial_term_id = metadata.initial_term_id
        self.term_buffer_length = term_length
        self.position_bits_to_shift = position_bits_to_shift(term_length)
        self.max_payload_length = metadata.mtu_length - HDR_LENGTH
        self.max_message_length = compute_max_message_length(term_length)
        self.max_possible_position = term_length * (1 << 31)
        header = HeaderWriter(default_frame_header(meta))
        self._header_writer = header
        # the header's words, for the single-frame appends inlined in the subclasses
        self._version_flags_type = header.version_flags_type
        self._session_id_high = header.session_id_high
        self._stream_id_low = header.stream_id_low
        self._init_appends()

    def _init_appends(self) -> None:
        """The subclass's appenders and append state over the mapped log (``__init__``'s last
        step)."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def is_closed(self) -> bool:
        """True once closed by the application, or by the client closing or stopping."""
        return self._is_closed

    @property
    def is_connected(self) -> bool:
        """Whether a subscriber is connected (the driver's flag in the log metadata)."""
        return not self._is_closed and is_connected(self._meta)

    @property
    def position(self) -> int:
        """The position the next message will start at, or ``CLOSED``."""
        if self._is_closed:
            return CLOSED
        meta = self._meta
        index = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET) % PARTITION_COUNT
        raw_tail = raw_tail_volatile(meta, index)
        term_offset = min(raw_tail & 0xFFFF_FFFF, self.term_buffer_length)
        return compute_position(
            raw_tail >> 32, term_offset, self.position_bits_to_shift, self.initial_term_id
        )

    @property
    def position_limit(self) -> int:
        """The position up to which appends may start (the driver's pub-lmt), or ``CLOSED``."""
        if self._is_closed:
            return CLOSED
        return self._position_limit()

    @property
    def available_window(self) -> int:
        """Bytes that may still be appended before back pressure, or ``CLOSED``."""
        if self._is_closed:
            return CLOSED
        return self._position_limit() - self.position

    @property
    def log_buffers(self) -> LogBuffers:
        """The mapped log the publication appends to."""
        return self._log_buffers

    def close(self) -> None:
        """Release the publication (REMOVE_PUBLICATION to the driver); idempotent."""
        if not self._is_closed:
            self._conductor.release_publication(self)

    def internal_close(self) -> None:
        """Mark closed without telling the driver (the conductor's side of a close)."""
        self._is_closed = True

    def __enter__(self) -> Publication:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(channel={self.channel!r}, stream_id={self.stream_id}, "
            f"session_id={self.session_id}, registration_id={self.registration_id}, "
            f"closed={self._is_closed})"
        )

    # ----------------------------------------------------------------------------------------
    # Appends (the subclasses')

    def offer(
        self,
        buffer: Buffer,
        offset: int = 0,
        length: int = -1,
        reserved_value_supplier: ReservedValueSupplier | None = None,
    ) -> int:
        """Append one message: the new position, or one of the codes of the module (each
        subclass appends its own way)."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------------------
    # Shared checks (cold: called only off the common path)

    def offer_first_alone(
        self,
        first: Buffer,
        taken: int,
        position: int,
        limit: int,
        reserved_value_supplier: ReservedValueSupplier | None,
    ) -> int:
        """``offer_batch`` when its first message cannot go in a block (``taken`` <= 0)."""
        if taken == 0:  # a long message first: on its own
            result = self.offer(first, 0, -1, reserved_value_supplier)
            return 1 if result > 0 else result
        if position >= limit:
            return self.back_pressure_status(position, buffer_length(first))
        # The first message does not fit in the rest of the term: pad it and rotate.
        return self.offer(first, 0, -1, reserved_value_supplier)

    def back_pressure_status(self, position: int, length: int) -> int:
        """Why an append at ``position`` did not start: max position, back pressure or no one."""
        if position + length >= self.max_possible_position:
            return MAX_POSITION_EXCEEDED
        if is_connected(self._meta):
            return BACK_PRESSURED
        return NOT_CONNECTED

    def check_max_message_length(self, length: int) -> None:
        """Raise ``MessageTooLongError`` if ``length`` bytes exceed :attr:`max_message_length`."""
        if length > self.max_message_length:
            raise MessageTooLongError(
                "message exceeds the publication's max message length",
                length=length,
                max_message_length=self.max_message_length,
                channel=self.channel,
                stream_id=self.stream_id,
            )

    def check_payload_length(self, length: int) -> None:
        """Raise ``MessageTooLongError`` if ``length`` exceeds a frame's payload (MTU - 32)."""
        if length > self.max_payload_length:
            raise MessageTooLongError(
                "claim exceeds the publication's max payload length (MTU - 32)",
                length=length,
                max_payload_length=self.max_payload_length,
                channel=self.channel,
                stream_id=self.stream_id,
            )
        if length < 0:
            raise ConfigurationError("claim length is negative", length=length)


_BYTE_TYPES: Final = frozenset((bytes, bytearray, AtomicBuffer))


def buffer_length(buffer: Buffer) -> int:
    """Bytes in ``buffer``: ``len`` for the common byte types, else through a memoryview.

    A buffer that is not contiguous is refused here, before anything is appended (a copy
    failing after the frame was claimed would leave the log blocked until the driver
    unblocks it).
    """
    if type(buffer) in _BYTE_TYPES:
        return len(buffer)  # type: ignore[arg-type]  # bytes, bytearray or AtomicBuffer: the type check above, which mypy does not follow
    with memoryview(buffer) as view:
        if not view.c_contiguous:
            raise ConfigurationError(
                "message buffer is not contiguous", shape=view.shape, strides=view.strides
            )
        return view.nbytes


def region_error(offset: int, length: int, capacity: int) -> ConfigurationError:
    return ConfigurationError(
        "message region outside its buffer", offset=offset, length=length, capacity=capacity
    )
