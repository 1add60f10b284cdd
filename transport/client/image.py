"""``Image``: one publisher's stream (a session) as a subscription sees it, and how it is read.

The driver gives a subscription an image per matching publication session (ON_AVAILABLE_IMAGE):
the log buffer to read and the subscriber position counter (sub-pos) this subscription owns.
Reading moves that position; the driver takes the slowest subscriber position to set the
publisher's limit, so a subscriber that stops reading back-pressures the publisher.

Polls read fragments from the term the position is in, never past its end, and store the new
position with a release store when they finish. ``controlled_poll`` lets the handler steer with
an :class:`~transport.concurrent.action.Action` (Aeron's table, ``Image.controlledPoll``):

========  ============================  ====================  ==================================
Action    fragments read                offset                subscriber position
========  ============================  ====================  ==================================
ABORT     this one not counted          back to before it     not moved for it; the poll stops
BREAK     counted                       after it              stored when the poll ends; stops
COMMIT    counted                       after it              stored at once (release); goes on
CONTINUE  counted                       after it              stored when the poll ends
========  ============================  ====================  ==================================

A handler that raises is reported to the error handler and ends the poll; the fragment it was
given counts as consumed, so a poison message is not redelivered forever (as Aeron).

``poll`` and ``controlled_poll`` run in one native call where the helper is built
(:class:`~transport.logbuffer.term_io.ImageReader`: the handler is the only Python entered, and
an empty poll enters none); the Python loops below are the reference it is tested against and
the fallback where it is not built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from aeromq.transport._errors import ConfigurationError, TransportStateError
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer
from aeromq.transport.concurrent.position import Position
from aeromq.transport.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    TERM_ID_FIELD_OFFSET,
)
from aeromq.transport.logbuffer.handlers import (
    ControlledFragmentHandler,
    ErrorHandler,
    FragmentHandler,
)
from aeromq.transport.logbuffer.header import Header
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    PARTITION_COUNT,
    active_transport_count,
    end_of_stream_position,
    position_bits_to_shift,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_io import ImageReader
from aeromq.transport.logbuffer.term_scanner import scan_for_block

if TYPE_CHECKING:
    from aeromq.transport.client.subscription import Subscription

__all__ = ["BlockHandler", "Image"]

BlockHandler = Callable[[AtomicBuffer, int, int, int, int], object]
"""``(term_buffer, offset, length, session_id, term_id)``: a block of whole frames, raw."""

_LOW_32: Final = 0xFFFF_FFFF
_NEGATIVE: Final = 0x8000_0000
_TYPE_SHIFT: Final = 48
_ALIGN_UP: Final = FRAME_ALIGNMENT - 1
_ALIGN_DOWN: Final = -FRAME_ALIGNMENT
_ABORT: Final = Action.ABORT
_BREAK: Final = Action.BREAK
_COMMIT: Final = Action.COMMIT


class Image:
    """A publication session's log as read by one subscription (made by the client conductor)."""

    __slots__ = (
        "_error_handler",
        "_final_position",
        "_get_position",
        "_header",
        "_is_closed",
        "_is_eos",
        "_log_buffers",
        "_meta",
        "_position",
        "_position_bits",
        "_reader",
        "_set_position",
        "_term_buffers",
        "_term_length_mask",
        "controlled_poll_call",
        "correlation_id",
        "initial_term_id",
        "join_position",
        "poll_call",
        "session_id",
        "source_identity",
        "subscriber_position_id",
        "subscription",
        "term_buffer_length",
    )

    def __init__(
        self,
        subscription: Subscription,
        session_id: int,
        subscriber_position: Position,
        log_buffers: LogBuffers,
        error_handler: ErrorHandler,
        source_identity: str,
        correlation_id: int,
    ) -> None:
        term_length = log_buffers.term_length
        self.subscription = subscription
        self.session_id = session_id
        self.source_identity = source_identity
        self.correlation_id = correlation_id
        self.subscriber_position_id = subscriber_position.id
        self.term_buffer_length = term_length
        self.initial_term_id = log_buffers.metadata.initial_term_id
        self._position = subscriber_position
        self._get_position = subscriber_position.get
        self._set_position = subscriber_position.set_ordered
        self._log_buffers = log_buffers
        self._meta = log_buffers.meta_data_buffer
        self._term_buffers: tuple[AtomicBuffer, ...] = log_buffers.term_buffers
        self._term_length_mask = term_length - 1
        self._position_bits = position_bits_to_shift(term_length)
        self._header = Header(self.initial_term_id, self._position_bits, self)
        self._error_handler = error_handler
        self.join_position = subscriber_position.get()
        self._final_position = self.join_position
        self._is_eos = False
        self._is_closed = False
        self._reader: ImageReader | None = None
        self.poll_call: Callable[[FragmentHandler, int], int] = self.python_poll
        """What ``poll`` runs: the native reader's poll, or :meth:`python_poll` (a subscription
        calls it straight, one Python frame less a poll)."""
        self.controlled_poll_call: Callable[[ControlledFragmentHandler, int], int] = (
            self.python_controlled_poll
        )
        """What ``controlled_poll`` runs, as :attr:`poll_call`."""
        if ImageReader is not None:
            reader = ImageReader(
                self._term_buffers,
                subscriber_position.values_buffer,
                subscriber_position.offset,
                self._position_bits,
                self._header,
                error_handler,
            )
            self._reader = reader
            self.poll_call = reader.poll
            self.controlled_poll_call = reader.controlled_poll

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def is_closed(self) -> bool:
        """True once the image went away (ON_UNAVAILABLE_IMAGE or subscription close)."""
        return self._is_closed

    @property
    def position(self) -> int:
        """The subscriber position: where the next poll starts (the final one once closed)."""
        if self._is_closed:
            return self._final_position
        return self._get_position()

    def set_position(self, new_position: int) -> None:
        """Move the subscriber position, e.g. to skip ahead or to re-read within the term.

        It must lie between the current position and the end of the current term, on a frame
        boundary (a multiple of 32); otherwise :class:`~transport.ConfigurationError`.
        """
        if self._is_closed:
            raise TransportStateError("image is closed", correlation_id=self.correlation_id)
        current = self._get_position()
        limit = (current - (current & self._term_length_mask)) + self._term_length_mask + 1
        if new_position < current or new_position > limit:
            raise ConfigurationError(
                "new position out of range",
                new_position=new_position,
                current_position=current,
                limit_position=limit,
            )
        if new_position & (FRAME_ALIGNMENT - 1):
            raise ConfigurationError(
                "new position not aligned to the frame alignment",
                new_position=new_position,
                frame_alignment=FRAME_ALIGNMENT,
            )
        self._set_position(new_position)

    @property
    def is_end_of_stream(self) -> bool:
        """Whether the publisher ended the stream and this image has read all of it."""
        if self._is_closed:
            return self._is_eos
        return self._get_position() >= end_of_stream_position(self._meta)

    @property
    def end_of_stream_position(self) -> int:
        """Where the publisher ended the stream; ``2**63 - 1`` until it does."""
        return end_of_stream_position(self._meta)

    @property
    def active_transport_count(self) -> int:
        """How many transports feed the image, as the driver reports.

        UDP: 1 while datagrams arrive within the image liveness timeout, else 0; IPC: 0.
        """
        return active_transport_count(self._meta)

    @property
    def log_buffers(self) -> LogBuffers:
        """The mapped log the image reads (shared with others of its registration)."""
        return self._log_buffers

    def close(self) -> None:
        """Mark closed (the conductor's side, on ON_UNAVAILABLE_IMAGE or subscription close)."""
        if not self._is_closed:
            if self._reader is not None:
                self._reader.close()
            self._final_position = self._get_position()
            self._is_eos = self._final_position >= end_of_stream_position(self._meta)
            self._is_closed = True

    def __repr__(self) -> str:
        return (
            f"Image(session_id={self.session_id}, correlation_id={self.correlation_id}, "
            f"position={self.position}, closed={self._is_closed})"
        )

    # ----------------------------------------------------------------------------------------
    # Polls

    def poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """Give up to ``fragment_limit`` fragments to ``handler(buffer, offset, length, header)``;
        return how many were read."""
        return self.poll_call(handler, fragment_limit)

    def controlled_poll(self, handler: ControlledFragmentHandler, fragment_limit: int) -> int:
        """As :meth:`poll`, with the handler's :class:`Action` applied as in the module table."""
        return self.controlled_poll_call(handler, fragment_limit)

    def python_poll(self, handler: FragmentHandler, fragment_limit: int) -> int:
        """:meth:`poll` in Python: the reference of the native reader, and its fallback."""
        if self._is_closed:
            return 0
        position = self._get_position()
        term_offset = position & self._term_length_mask
        term_buffer = self._term_buffers[(position >> self._position_bits) % PARTITION_COUNT]
        # term_reader.read inlined on purpose, measured: poll(1) ~500 -> ~455 ns
        header = self._header
        header.buffer = term_buffer
        get_word = term_buffer.get_int64_volatile
        capacity = term_buffer.capacity
        fragments_read = 0
        offset = term_offset
        failed = False
        try:
            while fragments_read < fragment_limit and offset < capacity:
                word = get_word(offset)
                frame_length = word & _LOW_32
                if frame_length == 0 or frame_length & _NEGATIVE:
                    break
                frame_offset = offset
                offset += (frame_length + _ALIGN_UP) & _ALIGN_DOWN
                if word >> _TYPE_SHIFT:  # not padding
                    fragments_read += 1
                    header.offset = frame_offset
                    handler(
                        term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header
                    )
        except Exception as exc:  # the handler's: report it, keep what was consumed
            failed = True
            self._error_handler(exc)
        if offset > term_offset:
            self._set_position(position + offset - term_offset)
        if (
            offset >= capacity
            and not failed
            and fragments_read < fragment_limit
            and not self._is_closed
        ):
            # the term ended here (its last frame, or the padding before a rotation): read on
            # into the next term. A poll that consumed only padding must not return 0 while a
            # fragment waits behind it: an agent sleeping until rung would miss that fragment,
            # whose ring came before its last look at the doorbell (transport/concurrent/doorbell.py)
            return fragments_read + self.python_poll(handler, fragment_limit - fragments_read)
        return fragments_read

    def python_controlled_poll(
        self, handler: ControlledFragmentHandler, fragment_limit: int
    ) -> int:
        """:meth:`controlled_poll` in Python: the native reader's reference and fallback."""
        # bounded_controlled_poll inlined on purpose, measured: controlled_poll(1) ~700 -> ~530 ns
        if self._is_closed:
            return 0
        initial_position = self._get_position()
        initial_offset = initial_position & self._term_length_mask
        term_buffer = self._term_buffers[
            (initial_position >> self._position_bits) % PARTITION_COUNT
        ]
        header = self._header
        header.buffer = term_buffer
        get_word = term_buffer.get_int64_volatile
        capacity = term_buffer.capacity
        fragments_read = 0
        offset = initial_offset
        stopped = False  # by the handler (ABORT, BREAK, an exception), not the term's end
        try:
            while fragments_read < fragment_limit and offset < capacity:
                word = get_word(offset)
                frame_length = word & _LOW_32
                if frame_length == 0 or frame_length & _NEGATIVE:
                    break
                frame_offset = offset
                aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
                offset += aligned_length
                if not word >> _TYPE_SHIFT:  # padding
                    continue
                fragments_read += 1
                header.offset = frame_offset
                action = handler(
                    term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header
                )
                if action is _ABORT:
                    fragments_read -= 1
                    offset -= aligned_length
                    stopped = True
                    break
                if action is _BREAK:
                    stopped = True
                    break
                if action is _COMMIT:
                    initial_position += offset - initial_offset
                    initial_offset = offset
                    if not self._is_closed:
                        self._set_position(initial_position)
        except Exception as exc:
            stopped = True
            self._error_handler(exc)
        finally:
            if offset > initial_offset and not self._is_closed:
                self._set_position(initial_position + offset - initial_offset)
        if (
            offset >= capacity
            and not stopped
            and fragments_read < fragment_limit
            and not self._is_closed
        ):  # the term ended here: read on into the next term, as poll does
            return fragments_read + self.python_controlled_poll(
                handler, fragment_limit - fragments_read
            )
        return fragments_read

    def bounded_poll(
        self, handler: FragmentHandler, limit_position: int, fragment_limit: int
    ) -> int:
        """As :meth:`poll`, but not reading frames that start at or past ``limit_position``."""
        # The loop repeats bounded_controlled_poll's on purpose, measured: this poll made of
        # that one with a handler adapter costs ~50 ns a fragment (~200 -> ~250 ns).
        if self._is_closed:
            return 0
        initial_position = self._get_position()
        if initial_position >= limit_position:
            return 0
        initial_offset = initial_position & self._term_length_mask
        term_buffer = self._term_buffers[
            (initial_position >> self._position_bits) % PARTITION_COUNT
        ]
        limit_offset = min(term_buffer.capacity, limit_position - initial_position + initial_offset)
        header = self._header
        header.buffer = term_buffer
        get_word = term_buffer.get_int64_volatile
        fragments_read = 0
        offset = initial_offset
        try:
            while fragments_read < fragment_limit and offset < limit_offset:
                word = get_word(offset)
                frame_length = word & _LOW_32
                if frame_length == 0 or frame_length & _NEGATIVE:
                    break
                frame_offset = offset
                offset += (frame_length + _ALIGN_UP) & _ALIGN_DOWN
                if not word >> _TYPE_SHIFT:  # padding
                    continue
                fragments_read += 1
                header.offset = frame_offset
                handler(term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header)
        except Exception as exc:
            self._error_handler(exc)
        finally:
            if offset > initial_offset and not self._is_closed:
                self._set_position(initial_position + offset - initial_offset)
        return fragments_read

    def bounded_controlled_poll(
        self, handler: ControlledFragmentHandler, limit_position: int, fragment_limit: int
    ) -> int:
        """As :meth:`controlled_poll`, but not reading frames at or past ``limit_position``."""
        if self._is_closed:
            return 0
        initial_position = self._get_position()
        if initial_position >= limit_position:
            return 0
        initial_offset = initial_position & self._term_length_mask
        term_buffer = self._term_buffers[
            (initial_position >> self._position_bits) % PARTITION_COUNT
        ]
        limit_offset = min(term_buffer.capacity, limit_position - initial_position + initial_offset)
        header = self._header
        header.buffer = term_buffer
        get_word = term_buffer.get_int64_volatile
        fragments_read = 0
        offset = initial_offset
        try:
            while fragments_read < fragment_limit and offset < limit_offset:
                word = get_word(offset)
                frame_length = word & _LOW_32
                if frame_length == 0 or frame_length & _NEGATIVE:
                    break
                frame_offset = offset
                aligned_length = (frame_length + _ALIGN_UP) & _ALIGN_DOWN
                offset += aligned_length
                if not word >> _TYPE_SHIFT:  # padding
                    continue
                fragments_read += 1
                header.offset = frame_offset
                action = handler(
                    term_buffer, frame_offset + HDR_LENGTH, frame_length - HDR_LENGTH, header
                )
                if action is _ABORT:
                    fragments_read -= 1
                    offset -= aligned_length
                    break
                if action is _BREAK:
                    break
                if action is _COMMIT:
                    initial_position += offset - initial_offset
                    initial_offset = offset
                    if not self._is_closed:
                        self._set_position(initial_position)
        except Exception as exc:
            self._error_handler(exc)
        finally:
            if offset > initial_offset and not self._is_closed:
                self._set_position(initial_position + offset - initial_offset)
        return fragments_read

    def block_poll(self, handler: BlockHandler, block_length_limit: int) -> int:
        """Give ``handler(term_buffer, offset, length, session_id, term_id)`` the whole frames
        available from the position, at most ``block_length_limit`` bytes and within the term
        (a padding frame first is a block by itself); return the bytes consumed."""
        if self._is_closed:
            return 0
        position = self._get_position()
        term_offset = position & self._term_length_mask
        term_buffer = self._term_buffers[(position >> self._position_bits) % PARTITION_COUNT]
        limit_offset = min(term_offset + block_length_limit, term_buffer.capacity)
        resulting_offset = scan_for_block(term_buffer, term_offset, limit_offset)
        length = resulting_offset - term_offset
        if length > 0:
            try:
                term_id = term_buffer.get_int32(term_offset + TERM_ID_FIELD_OFFSET)
                handler(term_buffer, term_offset, length, self.session_id, term_id)
            except Exception as exc:
                self._error_handler(exc)
            finally:
                self._set_position(position + length)
        return length
