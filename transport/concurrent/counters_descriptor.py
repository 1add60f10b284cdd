"""Layout of the counters in cnc.dat: a values buffer and a metadata buffer, one record each per id.

Byte for byte the layout of Agrona's ``CountersReader`` and Aeron's ``aeron_counters_manager.h``,
so a real Aeron tool (AeronStat) reads our counters and we read theirs. Little-endian.

Values buffer: one 128-byte record per counter id (two cache lines, so that counters updated by
different threads do not share a line), at ``counter_id * COUNTER_LENGTH``::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                        Counter Value                          |
    |                                                               |
    +---------------------------------------------------------------+
    |                       Registration Id                         |
    |                                                               |
    +---------------------------------------------------------------+
    |                          Owner Id                             |
    |                                                               |
    +---------------------------------------------------------------+
    |                        Reference Id                           |
    |                                                               |
    +---------------------------------------------------------------+
    |                     96 bytes of padding                      ...
   ...                                                              |
    +---------------------------------------------------------------+

Metadata buffer: one 512-byte record per counter id, at ``counter_id * METADATA_LENGTH``::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                        Record State                           |
    +---------------------------------------------------------------+
    |                          Type Id                              |
    +---------------------------------------------------------------+
    |                 Free-for-reuse Deadline (ms)                  |
    |                                                               |
    +---------------------------------------------------------------+
    |                      112 bytes for key                       ...
   ...                                                              |
    +-+-------------------------------------------------------------+
    |R|                      Label Length                           |
    +-+-------------------------------------------------------------+
    |                     380 bytes of Label                       ...
   ...                                                              |
    +---------------------------------------------------------------+

Record state: ``RECORD_UNUSED`` (0, never allocated: readers stop scanning there),
``RECORD_ALLOCATED`` (1), ``RECORD_RECLAIMED`` (-1, freed; reusable once the clock passes the
free-for-reuse deadline). The state is stored last, with release order, so a reader that sees
ALLOCATED (acquire) sees the whole record. An allocated record's deadline is
``NOT_FREE_TO_REUSE``. The label is UTF-8 (ASCII for Aeron's own counters), truncated to
``MAX_LABEL_LENGTH`` bytes.
"""

from __future__ import annotations

from aeromq.transport._errors import IndexOutOfBoundsError

__all__ = [
    "COUNTER_LENGTH",
    "DEFAULT_OWNER_ID",
    "DEFAULT_REFERENCE_ID",
    "DEFAULT_REGISTRATION_ID",
    "DEFAULT_TYPE_ID",
    "FREE_FOR_REUSE_DEADLINE_OFFSET",
    "FULL_LABEL_LENGTH",
    "KEY_OFFSET",
    "LABEL_LENGTH_OFFSET",
    "LABEL_OFFSET",
    "MAX_KEY_LENGTH",
    "MAX_LABEL_LENGTH",
    "METADATA_LENGTH",
    "NOT_FREE_TO_REUSE",
    "NULL_COUNTER_ID",
    "OWNER_ID_OFFSET",
    "RECORD_ALLOCATED",
    "RECORD_RECLAIMED",
    "RECORD_UNUSED",
    "REFERENCE_ID_OFFSET",
    "REGISTRATION_ID_OFFSET",
    "STATE_OFFSET",
    "TYPE_ID_OFFSET",
    "VALUE_OFFSET",
    "checked_counter_offset",
    "counter_offset",
    "metadata_offset",
]

_SIZE_OF_INT = 4
_SIZE_OF_LONG = 8
_CACHE_LINE_LENGTH = 64

# Values record.
VALUE_OFFSET = 0
REGISTRATION_ID_OFFSET = VALUE_OFFSET + _SIZE_OF_LONG
OWNER_ID_OFFSET = REGISTRATION_ID_OFFSET + _SIZE_OF_LONG
REFERENCE_ID_OFFSET = OWNER_ID_OFFSET + _SIZE_OF_LONG
COUNTER_LENGTH = _CACHE_LINE_LENGTH * 2

# Metadata record.
STATE_OFFSET = 0
TYPE_ID_OFFSET = STATE_OFFSET + _SIZE_OF_INT
FREE_FOR_REUSE_DEADLINE_OFFSET = TYPE_ID_OFFSET + _SIZE_OF_INT
KEY_OFFSET = FREE_FOR_REUSE_DEADLINE_OFFSET + _SIZE_OF_LONG
LABEL_LENGTH_OFFSET = _CACHE_LINE_LENGTH * 2
MAX_KEY_LENGTH = LABEL_LENGTH_OFFSET - KEY_OFFSET
LABEL_OFFSET = LABEL_LENGTH_OFFSET + _SIZE_OF_INT
FULL_LABEL_LENGTH = _CACHE_LINE_LENGTH * 6
MAX_LABEL_LENGTH = FULL_LABEL_LENGTH - _SIZE_OF_INT
METADATA_LENGTH = LABEL_LENGTH_OFFSET + FULL_LABEL_LENGTH

RECORD_UNUSED = 0
RECORD_ALLOCATED = 1
RECORD_RECLAIMED = -1

NULL_COUNTER_ID = -1
DEFAULT_TYPE_ID = 0
DEFAULT_REGISTRATION_ID = 0
DEFAULT_OWNER_ID = 0
DEFAULT_REFERENCE_ID = 0
NOT_FREE_TO_REUSE = 2**63 - 1


def counter_offset(counter_id: int) -> int:
    """Offset of a counter's value record in the values buffer."""
    return counter_id * COUNTER_LENGTH


def metadata_offset(counter_id: int) -> int:
    """Offset of a counter's metadata record in the metadata buffer."""
    return counter_id * METADATA_LENGTH


def checked_counter_offset(values_capacity: int, counter_id: int) -> int:
    """``counter_offset(counter_id)``, or ``IndexOutOfBoundsError`` if the record is not inside
    a values buffer of ``values_capacity`` bytes."""
    offset = counter_id * COUNTER_LENGTH
    if counter_id < 0 or offset + COUNTER_LENGTH > values_capacity:
        raise IndexOutOfBoundsError(
            "counter id out of range",
            counter_id=counter_id,
            max_counter_id=values_capacity // COUNTER_LENGTH - 1,
        )
    return offset
