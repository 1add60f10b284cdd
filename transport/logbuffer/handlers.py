"""The callback types of the log buffer layer.

``FragmentHandler(buffer, offset, length, header)`` is given each message fragment a reader
finds: the payload is ``buffer[offset:offset + length]`` and ``header`` describes its frame. Both
the buffer and the header belong to the reader and move on when the handler returns: copy what
must outlive the call. ``ControlledFragmentHandler`` returns an
:class:`~transport.concurrent.action.Action` to steer the reader.
``ReservedValueSupplier(term_buffer, frame_offset, frame_length)`` is called by an appender once
the frame's header and payload are written and before it is published; its result goes in the
frame's reserved value field (a checksum or a timestamp, say).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer.header import Header

__all__ = ["ControlledFragmentHandler", "ErrorHandler", "FragmentHandler", "ReservedValueSupplier"]

FragmentHandler: TypeAlias = Callable[[AtomicBuffer, int, int, Header], None]
ControlledFragmentHandler: TypeAlias = Callable[[AtomicBuffer, int, int, Header], Action]
ReservedValueSupplier: TypeAlias = Callable[[AtomicBuffer, int, int], int]
ErrorHandler: TypeAlias = Callable[[Exception], None]
