"""``LogMetadata``: typed access to the fields of a log's metadata page that are written once.

The driver fills these in when it creates a log buffer, before it hands the file to anyone; after
that they are read-only, so plain loads and stores are enough. The layout is drawn in
:mod:`transport.logbuffer.log_buffer_descriptor`. The live, shared state of the same page (tails,
active term count, end of stream, connection, revocation) has atomic accessors in that module
and is deliberately not here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, overload

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import log_buffer_descriptor as d

__all__ = ["LogMetadata"]


T = TypeVar("T")


class _Field(Generic[T]):
    """A field of the metadata page read and written with the given accessors."""

    __slots__ = ("get", "offset", "put")

    def __init__(
        self,
        offset: int,
        get: Callable[[AtomicBuffer, int], T],
        put: Callable[[AtomicBuffer, int, T], None],
    ) -> None:
        self.offset = offset
        self.get = get
        self.put = put

    @overload
    def __get__(self, obj: None, owner: type) -> _Field[T]: ...
    @overload
    def __get__(self, obj: LogMetadata, owner: type) -> T: ...
    def __get__(self, obj: LogMetadata | None, owner: type) -> T | _Field[T]:
        return self if obj is None else self.get(obj.buffer, self.offset)

    def __set__(self, obj: LogMetadata, value: T) -> None:
        self.put(obj.buffer, self.offset, value)


def _get_bool(buffer: AtomicBuffer, offset: int) -> bool:
    return buffer.get_uint8(offset) != 0


def _put_bool(buffer: AtomicBuffer, offset: int, value: bool) -> None:
    buffer.put_int8(offset, 1 if value else 0)


def _int32(offset: int) -> _Field[int]:
    return _Field(offset, AtomicBuffer.get_int32, AtomicBuffer.put_int32)


def _int64(offset: int) -> _Field[int]:
    return _Field(offset, AtomicBuffer.get_int64, AtomicBuffer.put_int64)


def _uint8(offset: int) -> _Field[int]:
    return _Field(offset, AtomicBuffer.get_uint8, AtomicBuffer.put_int8)


def _bool(offset: int) -> _Field[bool]:
    return _Field(offset, _get_bool, _put_bool)


class LogMetadata:
    """A view over a log's metadata page (``LOG_META_DATA_LENGTH`` bytes at its start)."""

    __slots__ = ("buffer",)

    correlation_id = _int64(d.LOG_CORRELATION_ID_OFFSET)
    initial_term_id = _int32(d.LOG_INITIAL_TERM_ID_OFFSET)
    default_frame_header_length = _int32(d.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET)
    mtu_length = _int32(d.LOG_MTU_LENGTH_OFFSET)
    term_length = _int32(d.LOG_TERM_LENGTH_OFFSET)
    page_size = _int32(d.LOG_PAGE_SIZE_OFFSET)
    publication_window_length = _int32(d.LOG_PUBLICATION_WINDOW_LENGTH_OFFSET)
    receiver_window_length = _int32(d.LOG_RECEIVER_WINDOW_LENGTH_OFFSET)
    socket_sndbuf_length = _int32(d.LOG_SOCKET_SNDBUF_LENGTH_OFFSET)
    os_default_socket_sndbuf_length = _int32(d.LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET)
    os_max_socket_sndbuf_length = _int32(d.LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET)
    socket_rcvbuf_length = _int32(d.LOG_SOCKET_RCVBUF_LENGTH_OFFSET)
    os_default_socket_rcvbuf_length = _int32(d.LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET)
    os_max_socket_rcvbuf_length = _int32(d.LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET)
    max_resend = _int32(d.LOG_MAX_RESEND_OFFSET)
    entity_tag = _int64(d.LOG_ENTITY_TAG_OFFSET)
    response_correlation_id = _int64(d.LOG_RESPONSE_CORRELATION_ID_OFFSET)
    linger_timeout_ns = _int64(d.LOG_LINGER_TIMEOUT_NS_OFFSET)
    untethered_window_limit_timeout_ns = _int64(d.LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET)
    untethered_resting_timeout_ns = _int64(d.LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET)
    group = _bool(d.LOG_GROUP_OFFSET)
    is_response = _bool(d.LOG_IS_RESPONSE_OFFSET)
    rejoin = _bool(d.LOG_REJOIN_OFFSET)
    reliable = _bool(d.LOG_RELIABLE_OFFSET)
    sparse = _bool(d.LOG_SPARSE_OFFSET)
    signal_eos = _bool(d.LOG_SIGNAL_EOS_OFFSET)
    spies_simulate_connection = _bool(d.LOG_SPIES_SIMULATE_CONNECTION_OFFSET)
    tether = _bool(d.LOG_TETHER_OFFSET)
    log_type = _uint8(d.LOG_TYPE_OFFSET)
    """``LOG_TYPE_CONCURRENT``, ``LOG_TYPE_EXCLUSIVE`` or ``LOG_TYPE_IMAGE``."""
    untethered_linger_timeout_ns = _int64(d.LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET)

    def __init__(self, buffer: AtomicBuffer) -> None:
        if buffer.capacity < d.LOG_META_DATA_LENGTH:
            raise ConfigurationError(
                "metadata buffer shorter than the metadata page",
                capacity=buffer.capacity,
                required=d.LOG_META_DATA_LENGTH,
            )
        self.buffer = buffer
