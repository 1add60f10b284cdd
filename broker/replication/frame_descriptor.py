"""Layout of the replication frames between the members of a broker group.

The leader sends APPEND and HEARTBEAT to each follower (Aeron UDP, stream 1001); a follower
sends FETCH and ACK to the leader (stream 1002). One frame is one Aeron message; integers are
little-endian. Every frame starts with the same 8-byte header; the 32-bit word at 4 is the
frame's own (APPEND's payload length, FETCH's and ACK's member id, HEARTBEAT's reserved 0), so
that every i64 after it is 8-byte aligned::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |    Version    |     Flags     |          Type (u16)           |
    +---------------+---------------+-------------------------------+
  4 |       Length (APPEND) / Member Id (FETCH, ACK) / 0 (i32)      |
    +---------------------------------------------------------------+  8 HEADER_LENGTH

APPEND (type 1): the commit log bytes ``[offset, offset + length)`` of the leader, whole
batches or blank fillers (a batch larger than a frame spans frames), all of one epoch (a
transfer never crosses an epoch boundary: ``offset >= epoch_start_offset``). ``Epoch`` and
``Epoch Start Offset`` say which epoch the bytes belong to (a follower catching up is sent bytes
of older epochs and writes them into its epoch file); ``Leader Epoch`` is the epoch of the
leader that sends them, never below ``Epoch``: the follower refuses a frame whose leader epoch
is not the one it follows (a deposed leader's frames), as it refuses every other frame by its
``Epoch``::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +---------------+---------------+-------------------------------+
  0 |    Version    |     Flags     |           Type = 1            |
    +---------------+---------------+-------------------------------+
  4 |                      Payload Length (i32)                     |
    +---------------------------------------------------------------+
  8 |                          Epoch (i64)                          |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                   Epoch Start Offset (i64)                    |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                 Offset (i64, of the first byte)               |
    |                                                               |
    +---------------------------------------------------------------+
 32 |                     High Watermark (i64)                      |
    |                                                               |
    +---------------------------------------------------------------+
 40 |                      Leader Epoch (i64)                       |
    |                                                               |
    +---------------------------------------------------------------+
 48 |                    Commit Log Bytes (Length)                 ...
   ...                                                              |
    +---------------------------------------------------------------+

HEARTBEAT (type 2, 32 bytes), every ``heartbeat_interval_ms`` (250 ms, at most a quarter of
``replica_lag_max_ms``) to a follower it has sent nothing for::

    +---------------+---------------+-------------------------------+
  0 |    Version    |     Flags     |           Type = 2            |
    +---------------+---------------+-------------------------------+
  4 |                         Reserved (0)                          |
    +---------------------------------------------------------------+
  8 |                          Epoch (i64)                          |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                  Leader Log End Offset (i64)                  |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                     High Watermark (i64)                      |
    |                                                               |
    +---------------------------------------------------------------+

FETCH (type 3, 24 bytes): (re)start streaming from ``from_offset`` (after a truncation, a lost
image, a gap)::

    +---------------+---------------+-------------------------------+
  0 |    Version    |     Flags     |           Type = 3            |
    +---------------+---------------+-------------------------------+
  4 |                       Member Id (i32)                         |
    +---------------------------------------------------------------+
  8 |                          Epoch (i64)                          |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                       From Offset (i64)                       |
    |                                                               |
    +---------------------------------------------------------------+

ACK (type 4, 32 bytes): how far the follower has written (LEO) and fsynced its log::

    +---------------+---------------+-------------------------------+
  0 |    Version    |     Flags     |           Type = 4            |
    +---------------+---------------+-------------------------------+
  4 |                       Member Id (i32)                         |
    +---------------------------------------------------------------+
  8 |                          Epoch (i64)                          |
    |                                                               |
    +---------------------------------------------------------------+
 16 |                     Fsynced Offset (i64)                      |
    |                                                               |
    +---------------------------------------------------------------+
 24 |                     Log End Offset (i64)                      |
    |                                                               |
    +---------------------------------------------------------------+

Version is :data:`CURRENT_VERSION`; a frame of another version is refused. Flags are reserved:
senders write 0, receivers ignore them. Epochs, offsets, member ids and the payload length are
never negative. The payload length of an APPEND is at most ``max_frame_bytes`` (a setting of
the group, bounded by the publication's maximum message length less the header).

Caller: :mod:`aeromq.broker.replication.frame_codec` (encode, check, decode); nothing else
hard-codes an offset of these frames.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = [
    "ACK_FRAME_LENGTH",
    "ACK_STRUCT",
    "ACK_TYPE",
    "APPEND_HEADER_LENGTH",
    "APPEND_HEADER_STRUCT",
    "APPEND_TYPE",
    "CURRENT_VERSION",
    "EPOCH_OFFSET",
    "EPOCH_START_OFFSET_OFFSET",
    "FETCH_FRAME_LENGTH",
    "FETCH_STRUCT",
    "FETCH_TYPE",
    "FLAGS_OFFSET",
    "FOLLOWER_STREAM_ID",
    "FRAME_LENGTHS",
    "FROM_OFFSET_OFFSET",
    "FSYNCED_OFFSET_OFFSET",
    "HEADER_LENGTH",
    "HEADER_STRUCT",
    "HEARTBEAT_FRAME_LENGTH",
    "HEARTBEAT_HIGH_WATERMARK_OFFSET",
    "HEARTBEAT_STRUCT",
    "HEARTBEAT_TYPE",
    "HIGH_WATERMARK_OFFSET",
    "LEADER_EPOCH_OFFSET",
    "LEADER_LEO_OFFSET",
    "LEADER_STREAM_ID",
    "LENGTH_OFFSET",
    "LEO_OFFSET",
    "MEMBER_ID_OFFSET",
    "NO_FLAGS",
    "OFFSET_OFFSET",
    "PAYLOAD_OFFSET",
    "TYPE_OFFSET",
    "VERSION_OFFSET",
]

CURRENT_VERSION: Final = 1
NO_FLAGS: Final = 0

# Streams of the replication channels: leader -> follower, and follower -> leader.
LEADER_STREAM_ID: Final = 1001
FOLLOWER_STREAM_ID: Final = 1002

APPEND_TYPE: Final = 1
HEARTBEAT_TYPE: Final = 2
FETCH_TYPE: Final = 3
ACK_TYPE: Final = 4

# The common header.
VERSION_OFFSET: Final = 0
FLAGS_OFFSET: Final = VERSION_OFFSET + 1
TYPE_OFFSET: Final = FLAGS_OFFSET + 1
LENGTH_OFFSET: Final = TYPE_OFFSET + 2  # APPEND
MEMBER_ID_OFFSET: Final = LENGTH_OFFSET  # FETCH, ACK (HEARTBEAT: reserved)
HEADER_LENGTH: Final = LENGTH_OFFSET + 4

# Every frame's epoch follows the header.
EPOCH_OFFSET: Final = HEADER_LENGTH

# APPEND
EPOCH_START_OFFSET_OFFSET: Final = EPOCH_OFFSET + 8
OFFSET_OFFSET: Final = EPOCH_START_OFFSET_OFFSET + 8
HIGH_WATERMARK_OFFSET: Final = OFFSET_OFFSET + 8
LEADER_EPOCH_OFFSET: Final = HIGH_WATERMARK_OFFSET + 8
PAYLOAD_OFFSET: Final = LEADER_EPOCH_OFFSET + 8
APPEND_HEADER_LENGTH: Final = PAYLOAD_OFFSET

# HEARTBEAT (its high watermark follows the leader's LEO)
LEADER_LEO_OFFSET: Final = EPOCH_OFFSET + 8
HEARTBEAT_HIGH_WATERMARK_OFFSET: Final = LEADER_LEO_OFFSET + 8
HEARTBEAT_FRAME_LENGTH: Final = HEARTBEAT_HIGH_WATERMARK_OFFSET + 8

# FETCH
FROM_OFFSET_OFFSET: Final = EPOCH_OFFSET + 8
FETCH_FRAME_LENGTH: Final = FROM_OFFSET_OFFSET + 8

# ACK
FSYNCED_OFFSET_OFFSET: Final = EPOCH_OFFSET + 8
LEO_OFFSET: Final = FSYNCED_OFFSET_OFFSET + 8
ACK_FRAME_LENGTH: Final = LEO_OFFSET + 8

# The length of each type's frame without payload (an APPEND's is its header's).
FRAME_LENGTHS: Final = {
    APPEND_TYPE: APPEND_HEADER_LENGTH,
    HEARTBEAT_TYPE: HEARTBEAT_FRAME_LENGTH,
    FETCH_TYPE: FETCH_FRAME_LENGTH,
    ACK_TYPE: ACK_FRAME_LENGTH,
}

# The structs the codec packs with (each one's size is the documented length): version, flags,
# type, the i32 word, then the frame's i64s in the order of the diagram.
HEADER_STRUCT: Final = struct.Struct("<BBHi")
APPEND_HEADER_STRUCT: Final = struct.Struct("<BBHiqqqqq")
HEARTBEAT_STRUCT: Final = struct.Struct("<BBHiqqq")
FETCH_STRUCT: Final = struct.Struct("<BBHiqq")
ACK_STRUCT: Final = struct.Struct("<BBHiqqq")

assert HEADER_STRUCT.size == HEADER_LENGTH == 8
assert APPEND_HEADER_STRUCT.size == APPEND_HEADER_LENGTH == 48
assert HEARTBEAT_STRUCT.size == HEARTBEAT_FRAME_LENGTH == 32
assert FETCH_STRUCT.size == FETCH_FRAME_LENGTH == 24
assert ACK_STRUCT.size == ACK_FRAME_LENGTH == 32
