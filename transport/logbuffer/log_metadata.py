"""``LogMetadata``: typed access to the fields of a log's metadata page that are written once.

The driver fills these in when it creates a log buffer, before it hands the file to anyone; after
that they are read-only, so plain loads and stores are enough. The layout is drawn in
:mod:`transport.logbuffer.log_buffer_descriptor`. The live, shared state of the same page (tails,
active term count, end of stream, connection, revocation) has atomic accessors in that module
and is deliberately not here.
"""

from __future__ import annotations

from typing import overload

from transport._errors import ConfigurationError
from transport.concurrent import AtomicBuffer
from transport.logbuffer import log_buffer_descriptor as d

__all__ = ["LogMetadata"]


class _Int32Field:
    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    @overload
    def __get__(self, obj: None, owner: type) -> _Int32Field: ...
    @overload
    def __get__(self, obj: LogMetadata, owner: type) -> int: ...
    def __get__(self, obj: LogMetadata | None, owner: type) -> int | _Int32Field:
        return self if obj is None else obj.buffer.get_int32(self.offset)

    def __set__(self, obj: LogMetadata, value: int) -> None:
        obj.buffer.put_int32(self.offset, value)


class _Int64Field:
    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    @overload
    def __get__(self, obj: None, owner: type) -> _Int64Field: ...
    @overload
    def __get__(self, obj: LogMetadata, owner: type) -> int: ...
    def __get__(self, obj: LogMetadata | None, owner: type) -> int | _Int64Field:
        return self if obj is None else obj.buffer.get_int64(self.offset)

    def __set__(self, obj: LogMetadata, value: int) -> None:
        obj.buffer.put_int64(self.offset, value)


class _Uint8Field:
    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    @overload
    def __get__(self, obj: None, owner: type) -> _Uint8Field: ...
    @overload
    def __get__(self, obj: LogMetadata, owner: type) -> int: ...
    def __get__(self, obj: LogMetadata | None, owner: type) -> int | _Uint8Field:
        return self if obj is None else obj.buffer.get_uint8(self.offset)

    def __set__(self, obj: LogMetadata, value: int) -> None:
        obj.buffer.put_int8(self.offset, value)


class _BoolField:
    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    @overload
    def __get__(self, obj: None, owner: type) -> _BoolField: ...
    @overload
    def __get__(self, obj: LogMetadata, owner: type) -> bool: ...
    def __get__(self, obj: LogMetadata | None, owner: type) -> bool | _BoolField:
        return self if obj is None else obj.buffer.get_uint8(self.offset) != 0

    def __set__(self, obj: LogMetadata, value: bool) -> None:
        obj.buffer.put_int8(self.offset, 1 if value else 0)


class LogMetadata:
    """A view over a log's metadata page (``LOG_META_DATA_LENGTH`` bytes at its start)."""

    __slots__ = ("buffer",)

    correlation_id = _Int64Field(d.LOG_CORRELATION_ID_OFFSET)
    initial_term_id = _Int32Field(d.LOG_INITIAL_TERM_ID_OFFSET)
    default_frame_header_length = _Int32Field(d.LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET)
    mtu_length = _Int32Field(d.LOG_MTU_LENGTH_OFFSET)
    term_length = _Int32Field(d.LOG_TERM_LENGTH_OFFSET)
    page_size = _Int32Field(d.LOG_PAGE_SIZE_OFFSET)
    publication_window_length = _Int32Field(d.LOG_PUBLICATION_WINDOW_LENGTH_OFFSET)
    receiver_window_length = _Int32Field(d.LOG_RECEIVER_WINDOW_LENGTH_OFFSET)
    socket_sndbuf_length = _Int32Field(d.LOG_SOCKET_SNDBUF_LENGTH_OFFSET)
    os_default_socket_sndbuf_length = _Int32Field(d.LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET)
    os_max_socket_sndbuf_length = _Int32Field(d.LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET)
    socket_rcvbuf_length = _Int32Field(d.LOG_SOCKET_RCVBUF_LENGTH_OFFSET)
    os_default_socket_rcvbuf_length = _Int32Field(d.LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET)
    os_max_socket_rcvbuf_length = _Int32Field(d.LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET)
    max_resend = _Int32Field(d.LOG_MAX_RESEND_OFFSET)
    entity_tag = _Int64Field(d.LOG_ENTITY_TAG_OFFSET)
    response_correlation_id = _Int64Field(d.LOG_RESPONSE_CORRELATION_ID_OFFSET)
    linger_timeout_ns = _Int64Field(d.LOG_LINGER_TIMEOUT_NS_OFFSET)
    untethered_window_limit_timeout_ns = _Int64Field(
        d.LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET
    )
    untethered_resting_timeout_ns = _Int64Field(d.LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET)
    group = _BoolField(d.LOG_GROUP_OFFSET)
    is_response = _BoolField(d.LOG_IS_RESPONSE_OFFSET)
    rejoin = _BoolField(d.LOG_REJOIN_OFFSET)
    reliable = _BoolField(d.LOG_RELIABLE_OFFSET)
    sparse = _BoolField(d.LOG_SPARSE_OFFSET)
    signal_eos = _BoolField(d.LOG_SIGNAL_EOS_OFFSET)
    spies_simulate_connection = _BoolField(d.LOG_SPIES_SIMULATE_CONNECTION_OFFSET)
    tether = _BoolField(d.LOG_TETHER_OFFSET)
    log_type = _Uint8Field(d.LOG_TYPE_OFFSET)
    """``LOG_TYPE_CONCURRENT``, ``LOG_TYPE_EXCLUSIVE`` or ``LOG_TYPE_IMAGE``."""
    untethered_linger_timeout_ns = _Int64Field(d.LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET)

    def __init__(self, buffer: AtomicBuffer) -> None:
        if buffer.capacity < d.LOG_META_DATA_LENGTH:
            raise ConfigurationError(
                "metadata buffer shorter than the metadata page",
                capacity=buffer.capacity,
                required=d.LOG_META_DATA_LENGTH,
            )
        self.buffer = buffer
