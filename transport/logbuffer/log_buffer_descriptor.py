"""Layout of a log buffer file and the functions that keep its shared state.

A log buffer is one file: three terms (partitions) of ``term_length`` bytes each, then the
metadata page; the file length is ``align(3 * term_length + 4096, page_size)`` and the metadata is
its last ``LOG_META_DATA_LENGTH`` bytes (straight after the terms when the page size is 4 KiB)::

    +----------------------------+  0
    |           Term 0           |
    +----------------------------+  term_length
    |           Term 1           |
    +----------------------------+  2 * term_length
    |           Term 2           |
    +----------------------------+  file_length - 4096
    |        Log Meta Data       |
    +----------------------------+  file_length

The metadata page, offsets in bytes (i32 unless marked; right column is the offset)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                     Tail Counter 0 (i64)                      |    0
    |                                                               |
    +---------------------------------------------------------------+
    |                     Tail Counter 1 (i64)                      |    8
    |                                                               |
    +---------------------------------------------------------------+
    |                     Tail Counter 2 (i64)                      |   16
    |                                                               |
    +---------------------------------------------------------------+
    |                       Active Term Count                       |   24
    +---------------------------------------------------------------+
    |                      Cache Line Padding                      ...  28
   ...                                                              |
    +---------------------------------------------------------------+
    |                 End of Stream Position (i64)                  |  128
    |                                                               |
    +---------------------------------------------------------------+
    |                         Is Connected                          |  136
    +---------------------------------------------------------------+
    |                    Active Transport Count                     |  140
    +---------------------------------------------------------------+
    |                      Cache Line Padding                      ...  144
   ...                                                              |
    +---------------------------------------------------------------+
    |              Registration / Correlation ID (i64)              |  256
    |                                                               |
    +---------------------------------------------------------------+
    |                        Initial Term ID                        |  264
    +---------------------------------------------------------------+
    |                  Default Frame Header Length                  |  268
    +---------------------------------------------------------------+
    |                          MTU Length                           |  272
    +---------------------------------------------------------------+
    |                          Term Length                          |  276
    +---------------------------------------------------------------+
    |                           Page Size                           |  280
    +---------------------------------------------------------------+
    |                   Publication Window Length                   |  284
    +---------------------------------------------------------------+
    |                    Receiver Window Length                     |  288
    +---------------------------------------------------------------+
    |                     Socket SNDBUF Length                      |  292
    +---------------------------------------------------------------+
    |                OS Default Socket SNDBUF Length                |  296
    +---------------------------------------------------------------+
    |                  OS Max Socket SNDBUF Length                  |  300
    +---------------------------------------------------------------+
    |                     Socket RCVBUF Length                      |  304
    +---------------------------------------------------------------+
    |                OS Default Socket RCVBUF Length                |  308
    +---------------------------------------------------------------+
    |                  OS Max Socket RCVBUF Length                  |  312
    +---------------------------------------------------------------+
    |                          Max Resend                           |  316
    +---------------------------------------------------------------+
    |              Default Frame Header (32 of 128 bytes)          ...  320
   ...                                                              |
    +---------------------------------------------------------------+
    |                       Entity Tag (i64)                        |  448
    |                                                               |
    +---------------------------------------------------------------+
    |                Response Correlation ID (i64)                  |  456
    |                                                               |
    +---------------------------------------------------------------+
    |                    Linger Timeout ns (i64)                    |  464
    |                                                               |
    +---------------------------------------------------------------+
    |           Untethered Window Limit Timeout ns (i64)            |  472
    |                                                               |
    +---------------------------------------------------------------+
    |              Untethered Resting Timeout ns (i64)              |  480
    |                                                               |
    +---------------+---------------+---------------+---------------+
    |     Group     |  Is Response  |    Rejoin     |   Reliable    |  488
    +---------------+---------------+---------------+---------------+
    |    Sparse     |  Signal EOS   | Spies Sim Con |    Tether     |  492
    +---------------+---------------+---------------+---------------+
    | Pub. Revoked  |     Type      |            Padding            |  496
    +---------------+---------------+-------------------------------+
    |        Untethered Linger Timeout ns (i64, 4-byte aligned)     |  500
    |                                                               |
    +---------------------------------------------------------------+
    |                    Unused up to 4096 bytes                   ...  508
   ...                                                              |
    +---------------------------------------------------------------+

Each raw tail counter packs ``term_id << 32 | term_offset``; the active partition is
``active_term_count % 3``. The live state (tails, active term count, end of stream, connection,
revocation) has the atomic accessors below; the fields the driver writes once, before it shares
the file, are on :class:`~transport.logbuffer.log_metadata.LogMetadata`.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Final

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.frame_descriptor import (
    FRAME_ALIGNMENT,
    HDR_LENGTH,
    HDR_TYPE_DATA,
    UNFRAGMENTED,
    align,
    is_power_of_two,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "LOG_ACTIVE_TERM_COUNT_OFFSET",
    "LOG_ACTIVE_TRANSPORT_COUNT_OFFSET",
    "LOG_CORRELATION_ID_OFFSET",
    "LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET",
    "LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH",
    "LOG_DEFAULT_FRAME_HEADER_OFFSET",
    "LOG_END_OF_STREAM_POSITION_OFFSET",
    "LOG_ENTITY_TAG_OFFSET",
    "LOG_GROUP_OFFSET",
    "LOG_INITIAL_TERM_ID_OFFSET",
    "LOG_IS_CONNECTED_OFFSET",
    "LOG_IS_PUBLICATION_REVOKED_OFFSET",
    "LOG_IS_RESPONSE_OFFSET",
    "LOG_LINGER_TIMEOUT_NS_OFFSET",
    "LOG_MAX_RESEND_OFFSET",
    "LOG_META_DATA_LENGTH",
    "LOG_META_DATA_USED_LENGTH",
    "LOG_MTU_LENGTH_OFFSET",
    "LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET",
    "LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET",
    "LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET",
    "LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET",
    "LOG_PAGE_SIZE_OFFSET",
    "LOG_PUBLICATION_WINDOW_LENGTH_OFFSET",
    "LOG_RECEIVER_WINDOW_LENGTH_OFFSET",
    "LOG_REJOIN_OFFSET",
    "LOG_RELIABLE_OFFSET",
    "LOG_RESPONSE_CORRELATION_ID_OFFSET",
    "LOG_SIGNAL_EOS_OFFSET",
    "LOG_SOCKET_RCVBUF_LENGTH_OFFSET",
    "LOG_SOCKET_SNDBUF_LENGTH_OFFSET",
    "LOG_SPARSE_OFFSET",
    "LOG_SPIES_SIMULATE_CONNECTION_OFFSET",
    "LOG_TERM_LENGTH_OFFSET",
    "LOG_TETHER_OFFSET",
    "LOG_TYPE_CONCURRENT",
    "LOG_TYPE_EXCLUSIVE",
    "LOG_TYPE_IMAGE",
    "LOG_TYPE_OFFSET",
    "LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET",
    "LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET",
    "LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET",
    "PAGE_MAX_SIZE",
    "PAGE_MIN_SIZE",
    "PARTITION_COUNT",
    "TERM_MAX_LENGTH",
    "TERM_MIN_LENGTH",
    "TERM_TAIL_COUNTERS_OFFSET",
    "active_raw_tail_volatile",
    "active_term_count",
    "active_transport_count",
    "apply_default_header",
    "cas_active_term_count",
    "cas_raw_tail",
    "check_page_size",
    "check_term_length",
    "compute_fragmented_frame_length",
    "compute_log_length",
    "compute_position",
    "compute_term_begin_position",
    "compute_term_count",
    "compute_term_id_from_position",
    "compute_term_offset_from_position",
    "default_frame_header",
    "end_of_stream_position",
    "fill_default_header",
    "index_by_position",
    "index_by_term",
    "index_by_term_count",
    "initialise_tail_with_term_id",
    "initialise_tails",
    "is_connected",
    "is_publication_revoked",
    "pack_tail",
    "position_bits_to_shift",
    "producer_position",
    "raw_tail",
    "raw_tail_volatile",
    "rotate_log",
    "set_active_term_count_ordered",
    "set_active_transport_count",
    "set_end_of_stream_position",
    "set_is_connected",
    "set_is_publication_revoked",
    "set_raw_tail",
    "store_default_frame_header",
    "tail_counter_offset",
    "term_id",
    "term_offset",
]

_SIZE_OF_BYTE: Final = 1
_SIZE_OF_INT: Final = 4
_SIZE_OF_LONG: Final = 8
_CACHE_LINE_LENGTH: Final = 64

PARTITION_COUNT: Final = 3
TERM_MIN_LENGTH: Final = 64 * 1024
TERM_MAX_LENGTH: Final = 1024 * 1024 * 1024
PAGE_MIN_SIZE: Final = 4 * 1024
PAGE_MAX_SIZE: Final = 1024 * 1024 * 1024

# Live state, one cache-line pair each so that writers and readers do not share lines.
TERM_TAIL_COUNTERS_OFFSET: Final = 0
LOG_ACTIVE_TERM_COUNT_OFFSET: Final = TERM_TAIL_COUNTERS_OFFSET + PARTITION_COUNT * _SIZE_OF_LONG
LOG_END_OF_STREAM_POSITION_OFFSET: Final = 2 * _CACHE_LINE_LENGTH
LOG_IS_CONNECTED_OFFSET: Final = LOG_END_OF_STREAM_POSITION_OFFSET + _SIZE_OF_LONG
LOG_ACTIVE_TRANSPORT_COUNT_OFFSET: Final = LOG_IS_CONNECTED_OFFSET + _SIZE_OF_INT

# Fields the driver writes once when it creates the log.
LOG_CORRELATION_ID_OFFSET: Final = LOG_END_OF_STREAM_POSITION_OFFSET + 2 * _CACHE_LINE_LENGTH
LOG_INITIAL_TERM_ID_OFFSET: Final = LOG_CORRELATION_ID_OFFSET + _SIZE_OF_LONG
LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET: Final = LOG_INITIAL_TERM_ID_OFFSET + _SIZE_OF_INT
LOG_MTU_LENGTH_OFFSET: Final = LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET + _SIZE_OF_INT
LOG_TERM_LENGTH_OFFSET: Final = LOG_MTU_LENGTH_OFFSET + _SIZE_OF_INT
LOG_PAGE_SIZE_OFFSET: Final = LOG_TERM_LENGTH_OFFSET + _SIZE_OF_INT
LOG_PUBLICATION_WINDOW_LENGTH_OFFSET: Final = LOG_PAGE_SIZE_OFFSET + _SIZE_OF_INT
LOG_RECEIVER_WINDOW_LENGTH_OFFSET: Final = LOG_PUBLICATION_WINDOW_LENGTH_OFFSET + _SIZE_OF_INT
LOG_SOCKET_SNDBUF_LENGTH_OFFSET: Final = LOG_RECEIVER_WINDOW_LENGTH_OFFSET + _SIZE_OF_INT
LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET: Final = LOG_SOCKET_SNDBUF_LENGTH_OFFSET + _SIZE_OF_INT
LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET: Final = (
    LOG_OS_DEFAULT_SOCKET_SNDBUF_LENGTH_OFFSET + _SIZE_OF_INT
)
LOG_SOCKET_RCVBUF_LENGTH_OFFSET: Final = LOG_OS_MAX_SOCKET_SNDBUF_LENGTH_OFFSET + _SIZE_OF_INT
LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET: Final = LOG_SOCKET_RCVBUF_LENGTH_OFFSET + _SIZE_OF_INT
LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET: Final = (
    LOG_OS_DEFAULT_SOCKET_RCVBUF_LENGTH_OFFSET + _SIZE_OF_INT
)
LOG_MAX_RESEND_OFFSET: Final = LOG_OS_MAX_SOCKET_RCVBUF_LENGTH_OFFSET + _SIZE_OF_INT
LOG_DEFAULT_FRAME_HEADER_OFFSET: Final = LOG_MAX_RESEND_OFFSET + _SIZE_OF_INT
LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH: Final = 2 * _CACHE_LINE_LENGTH
LOG_ENTITY_TAG_OFFSET: Final = LOG_DEFAULT_FRAME_HEADER_OFFSET + LOG_DEFAULT_FRAME_HEADER_MAX_LENGTH
LOG_RESPONSE_CORRELATION_ID_OFFSET: Final = LOG_ENTITY_TAG_OFFSET + _SIZE_OF_LONG
LOG_LINGER_TIMEOUT_NS_OFFSET: Final = LOG_RESPONSE_CORRELATION_ID_OFFSET + _SIZE_OF_LONG
LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET: Final = LOG_LINGER_TIMEOUT_NS_OFFSET + _SIZE_OF_LONG
LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET: Final = (
    LOG_UNTETHERED_WINDOW_LIMIT_TIMEOUT_NS_OFFSET + _SIZE_OF_LONG
)
LOG_GROUP_OFFSET: Final = LOG_UNTETHERED_RESTING_TIMEOUT_NS_OFFSET + _SIZE_OF_LONG
LOG_IS_RESPONSE_OFFSET: Final = LOG_GROUP_OFFSET + _SIZE_OF_BYTE
LOG_REJOIN_OFFSET: Final = LOG_IS_RESPONSE_OFFSET + _SIZE_OF_BYTE
LOG_RELIABLE_OFFSET: Final = LOG_REJOIN_OFFSET + _SIZE_OF_BYTE
LOG_SPARSE_OFFSET: Final = LOG_RELIABLE_OFFSET + _SIZE_OF_BYTE
LOG_SIGNAL_EOS_OFFSET: Final = LOG_SPARSE_OFFSET + _SIZE_OF_BYTE
LOG_SPIES_SIMULATE_CONNECTION_OFFSET: Final = LOG_SIGNAL_EOS_OFFSET + _SIZE_OF_BYTE
LOG_TETHER_OFFSET: Final = LOG_SPIES_SIMULATE_CONNECTION_OFFSET + _SIZE_OF_BYTE
LOG_IS_PUBLICATION_REVOKED_OFFSET: Final = LOG_TETHER_OFFSET + _SIZE_OF_BYTE
LOG_TYPE_OFFSET: Final = LOG_IS_PUBLICATION_REVOKED_OFFSET + _SIZE_OF_BYTE
# Two bytes of padding: the struct is packed to 4, so the next i64 is only 4-byte aligned.
LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET: Final = LOG_TYPE_OFFSET + _SIZE_OF_BYTE + 2
LOG_META_DATA_USED_LENGTH: Final = LOG_UNTETHERED_LINGER_TIMEOUT_NS_OFFSET + _SIZE_OF_LONG
LOG_META_DATA_LENGTH: Final = align(LOG_META_DATA_USED_LENGTH, PAGE_MIN_SIZE)

LOG_TYPE_CONCURRENT: Final = 0
LOG_TYPE_EXCLUSIVE: Final = 1
LOG_TYPE_IMAGE: Final = 2

_DEFAULT_HEADER = struct.Struct("<iBBHiiiiq")  # the 32-byte data frame header


def _wrap_i32(value: int) -> int:
    """``value`` as Java's int arithmetic leaves it: wrapped into the signed 32-bit range."""
    return ((value + 0x8000_0000) & 0xFFFF_FFFF) - 0x8000_0000


# --------------------------------------------------------------------------------------------
# Lengths and positions (pure)


def check_term_length(term_length: int) -> None:
    """Raise :class:`ConfigurationError` unless 64 KiB <= term_length <= 1 GiB, a power of 2."""
    _check_power_of_two_in_range(
        "term length", "term_length", term_length, "length", TERM_MIN_LENGTH, TERM_MAX_LENGTH
    )


def check_page_size(page_size: int) -> None:
    """Raise :class:`ConfigurationError` unless 4 KiB <= page_size <= 1 GiB, a power of 2."""
    _check_power_of_two_in_range(
        "page size", "page_size", page_size, "size", PAGE_MIN_SIZE, PAGE_MAX_SIZE
    )


def _check_power_of_two_in_range(
    what: str, key: str, value: int, unit: str, min_value: int, max_value: int
) -> None:
    if value < min_value:
        raise ConfigurationError(
            f"{what} less than min {unit}", **{key: value, f"min_{unit}": min_value}
        )
    if value > max_value:
        raise ConfigurationError(
            f"{what} more than max {unit}", **{key: value, f"max_{unit}": max_value}
        )
    if not is_power_of_two(value):
        raise ConfigurationError(f"{what} not a power of 2", **{key: value})


def compute_log_length(term_length: int, page_size: int) -> int:
    """Length of the log buffer file: three terms and the metadata, aligned to the page size."""
    return align(PARTITION_COUNT * term_length + LOG_META_DATA_LENGTH, page_size)


def position_bits_to_shift(term_length: int) -> int:
    """log2(term_length): how far a term count is shifted to make a position."""
    check_term_length(term_length)
    return term_length.bit_length() - 1


def compute_term_count(term_id: int, initial_term_id: int) -> int:
    """Terms passed since the initial one; term ids wrap as 32-bit integers."""
    return _wrap_i32(term_id - initial_term_id)


def compute_position(
    active_term_id: int, term_offset: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    """The stream position: ``((term_id - initial_term_id) << bits) + term_offset``."""
    term_count = _wrap_i32(active_term_id - initial_term_id)
    return (term_count << position_bits_to_shift) + term_offset


def compute_term_begin_position(
    active_term_id: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    return _wrap_i32(active_term_id - initial_term_id) << position_bits_to_shift


def compute_term_id_from_position(
    position: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    return _wrap_i32((position >> position_bits_to_shift) + initial_term_id)


def compute_term_offset_from_position(position: int, position_bits_to_shift: int) -> int:
    return position & ((1 << position_bits_to_shift) - 1)


def index_by_term(initial_term_id: int, active_term_id: int) -> int:
    return _wrap_i32(active_term_id - initial_term_id) % PARTITION_COUNT


def index_by_term_count(term_count: int) -> int:
    return term_count % PARTITION_COUNT


def index_by_position(position: int, position_bits_to_shift: int) -> int:
    return (position >> position_bits_to_shift) % PARTITION_COUNT


def compute_fragmented_frame_length(length: int, max_payload_length: int) -> int:
    """Bytes of term a message of ``length`` takes once cut into ``max_payload_length`` pieces."""
    full_frames, remaining = divmod(length, max_payload_length)
    last_frame_length = align(remaining + HDR_LENGTH, FRAME_ALIGNMENT) if remaining > 0 else 0
    return full_frames * (max_payload_length + HDR_LENGTH) + last_frame_length


def term_id(raw_tail: int) -> int:
    """The term id packed in the high 32 bits of a raw tail."""
    return raw_tail >> 32


def term_offset(raw_tail: int, term_length: int) -> int:
    """The offset packed in the low 32 bits of a raw tail, capped at ``term_length``."""
    return min(raw_tail & 0xFFFF_FFFF, term_length)


def pack_tail(term_id: int, term_offset: int) -> int:
    return (term_id << 32) | (term_offset & 0xFFFF_FFFF)


# --------------------------------------------------------------------------------------------
# Tails and rotation: raw_tail / set_raw_tail are plain, for setting up a log before it is
# shared; everything else here is atomic.


def tail_counter_offset(partition_index: int) -> int:
    return TERM_TAIL_COUNTERS_OFFSET + partition_index * _SIZE_OF_LONG


def raw_tail(meta: AtomicBuffer, partition_index: int) -> int:
    return meta.get_int64(TERM_TAIL_COUNTERS_OFFSET + partition_index * _SIZE_OF_LONG)


def set_raw_tail(meta: AtomicBuffer, partition_index: int, raw_tail: int) -> None:
    meta.put_int64(TERM_TAIL_COUNTERS_OFFSET + partition_index * _SIZE_OF_LONG, raw_tail)


def raw_tail_volatile(meta: AtomicBuffer, partition_index: int) -> int:
    return meta.get_int64_volatile(TERM_TAIL_COUNTERS_OFFSET + partition_index * _SIZE_OF_LONG)


def active_raw_tail_volatile(meta: AtomicBuffer) -> int:
    """The raw tail of the partition the active term count points at."""
    index = meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET) % PARTITION_COUNT
    return meta.get_int64_volatile(TERM_TAIL_COUNTERS_OFFSET + index * _SIZE_OF_LONG)


def producer_position(
    meta: AtomicBuffer, term_length: int, position_bits_to_shift: int, initial_term_id: int
) -> int:
    """Where the next frame will be appended: the active term's raw tail as a stream position."""
    raw_tail = active_raw_tail_volatile(meta)
    return compute_position(
        raw_tail >> 32,
        min(raw_tail & 0xFFFF_FFFF, term_length),
        position_bits_to_shift,
        initial_term_id,
    )


def cas_raw_tail(meta: AtomicBuffer, partition_index: int, expected: int, update: int) -> bool:
    offset = TERM_TAIL_COUNTERS_OFFSET + partition_index * _SIZE_OF_LONG
    return meta.compare_and_set_int64(offset, expected, update)


def initialise_tail_with_term_id(meta: AtomicBuffer, partition_index: int, term_id: int) -> None:
    set_raw_tail(meta, partition_index, term_id << 32)


def initialise_tails(
    meta: AtomicBuffer, initial_term_id: int, term_id: int | None = None, term_offset: int = 0
) -> None:
    """Set up the tails and the active term count for a log that starts at (term_id, term_offset).

    The active partition gets ``pack_tail(term_id, term_offset)``; each other partition gets the
    term id it held three terms earlier, so that :func:`rotate_log` recognises it as the one to
    reuse. Without ``term_id`` the log starts at the beginning of ``initial_term_id``.
    """
    active_term_id = initial_term_id if term_id is None else term_id
    term_count = compute_term_count(active_term_id, initial_term_id)
    active_index = index_by_term_count(term_count)
    set_raw_tail(meta, active_index, pack_tail(active_term_id, term_offset))
    for i in range(1, PARTITION_COUNT):
        expected_term_id = _wrap_i32(active_term_id + i - PARTITION_COUNT)
        set_raw_tail(meta, (active_index + i) % PARTITION_COUNT, pack_tail(expected_term_id, 0))
    set_active_term_count_ordered(meta, term_count)


def active_term_count(meta: AtomicBuffer) -> int:
    return meta.get_int32_volatile(LOG_ACTIVE_TERM_COUNT_OFFSET)


def set_active_term_count_ordered(meta: AtomicBuffer, term_count: int) -> None:
    meta.put_int32_ordered(LOG_ACTIVE_TERM_COUNT_OFFSET, term_count)


def cas_active_term_count(meta: AtomicBuffer, expected: int, update: int) -> bool:
    return meta.compare_and_set_int32(LOG_ACTIVE_TERM_COUNT_OFFSET, expected, update)


def rotate_log(meta: AtomicBuffer, current_term_count: int, current_term_id: int) -> bool:
    """Move the log on to the next term; safe to race from many writers.

    The next partition's tail is reset to ``next_term_id << 32`` only while it still holds the
    term id three terms back (a compare-and-set, so one writer wins and the others see the new
    value), then the active term count is advanced with a compare-and-set. Returns whether this
    caller advanced the count.
    """
    next_term_id = _wrap_i32(current_term_id + 1)
    next_term_count = current_term_count + 1
    tail_offset = TERM_TAIL_COUNTERS_OFFSET + (next_term_count % PARTITION_COUNT) * _SIZE_OF_LONG
    expected_term_id = _wrap_i32(next_term_id - PARTITION_COUNT)
    new_raw_tail = next_term_id << 32
    while True:
        raw = meta.get_int64_volatile(tail_offset)
        if raw >> 32 != expected_term_id:
            break
        if meta.compare_and_set_int64(tail_offset, raw, new_raw_tail):
            break
    return meta.compare_and_set_int32(
        LOG_ACTIVE_TERM_COUNT_OFFSET, current_term_count, next_term_count
    )


# --------------------------------------------------------------------------------------------
# Stream state


def end_of_stream_position(meta: AtomicBuffer) -> int:
    return meta.get_int64_volatile(LOG_END_OF_STREAM_POSITION_OFFSET)


def set_end_of_stream_position(meta: AtomicBuffer, position: int) -> None:
    meta.put_int64_ordered(LOG_END_OF_STREAM_POSITION_OFFSET, position)


def is_connected(meta: AtomicBuffer) -> bool:
    return meta.get_int32_volatile(LOG_IS_CONNECTED_OFFSET) == 1


def set_is_connected(meta: AtomicBuffer, connected: bool) -> None:
    meta.put_int32_ordered(LOG_IS_CONNECTED_OFFSET, 1 if connected else 0)


def active_transport_count(meta: AtomicBuffer) -> int:
    return meta.get_int32_volatile(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET)


def set_active_transport_count(meta: AtomicBuffer, count: int) -> None:
    meta.put_int32_ordered(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET, count)


# The revoked flag is one byte; atomics work on the aligned i32 that holds it (with the type
# byte and the padding), so the other bytes are preserved.
_REVOKED_WORD_OFFSET: Final = LOG_IS_PUBLICATION_REVOKED_OFFSET & ~3
_REVOKED_SHIFT: Final = 8 * (LOG_IS_PUBLICATION_REVOKED_OFFSET - _REVOKED_WORD_OFFSET)


def is_publication_revoked(meta: AtomicBuffer) -> bool:
    word = meta.get_int32_volatile(_REVOKED_WORD_OFFSET)
    return (word >> _REVOKED_SHIFT) & 0xFF != 0


def set_is_publication_revoked(meta: AtomicBuffer, revoked: bool) -> None:
    byte = 1 if revoked else 0
    mask = 0xFF << _REVOKED_SHIFT
    while True:
        word = meta.get_int32_volatile(_REVOKED_WORD_OFFSET)
        update = _wrap_i32((word & ~mask) | (byte << _REVOKED_SHIFT))
        if meta.compare_and_set_int32(_REVOKED_WORD_OFFSET, word, update):
            return


# --------------------------------------------------------------------------------------------
# Default frame header


def store_default_frame_header(meta: AtomicBuffer, default_header: Buffer) -> None:
    """Copy a 32-byte data frame header into the metadata and record its length."""
    with memoryview(default_header) as view:
        length = view.nbytes
    if length != HDR_LENGTH:
        raise ConfigurationError(
            "default header length not equal to the data header length",
            length=length,
            expected=HDR_LENGTH,
        )
    meta.put_int32(LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET, HDR_LENGTH)
    meta.put_bytes(LOG_DEFAULT_FRAME_HEADER_OFFSET, default_header, 0, HDR_LENGTH)


def fill_default_header(
    meta: AtomicBuffer, session_id: int, stream_id: int, initial_term_id: int
) -> None:
    """Write the default data header of a stream: unfragmented DATA, frame length 0."""
    header = _DEFAULT_HEADER.pack(
        0, 0, UNFRAGMENTED, HDR_TYPE_DATA, 0, session_id, stream_id, initial_term_id, 0
    )
    store_default_frame_header(meta, header)


def default_frame_header(meta: AtomicBuffer) -> bytes:
    """A copy of the stored default header (no view is kept on the metadata)."""
    length = meta.get_int32(LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET)
    return meta.get_bytes(LOG_DEFAULT_FRAME_HEADER_OFFSET, length)


def apply_default_header(meta: AtomicBuffer, term_buffer: AtomicBuffer, term_offset: int) -> None:
    """Copy the default header over the frame at ``term_offset``."""
    length = meta.get_int32(LOG_DEFAULT_FRAME_HEADER_LENGTH_OFFSET)
    term_buffer.put_bytes(term_offset, meta, LOG_DEFAULT_FRAME_HEADER_OFFSET, length)
