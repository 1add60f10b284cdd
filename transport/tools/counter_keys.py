"""What a counter's key says: the identity, session, stream and channel that ``stat`` filters on.

A counter's 112-byte key is laid out by its type, as Aeron writes it (the layouts and their
diagrams are in :mod:`transport.driver.stream_counters` and
:mod:`transport.driver.udp.network_counters`, byte for byte Aeron's):

=========================================  =================================================
type ids                                   key
=========================================  =================================================
0 (system counters)                        the system counter id (i32 @0)
1-5, 9, 10, 12, 13 (stream counters:       registration id (i64 @0), session id (@8),
pub-lmt, snd-pos, rcv-hwm, sub-pos,        stream id (@12), channel length (@16),
rcv-pos, snd-lmt, per-image, pub-pos,      channel (ASCII @20)
snd-bpe)
6, 7 (snd-channel, rcv-channel)            channel length (@0), channel (ASCII @4)
anything else                              opaque here
=========================================  =================================================

A counter's *identity* is what AeronStat's ``identity`` filter matches: a system counter's id,
a stream counter's registration id, and (an extension here) the registration id in the value
record for every other counter, e.g. a client heartbeat's client id. Pure functions over the
key bytes; nothing here reads shared memory.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from aeromq.transport.driver.stream_counters import (
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POSITION_TYPE_ID,
    STREAM_KEY_CHANNEL_LENGTH_OFFSET,
    STREAM_KEY_CHANNEL_OFFSET,
    STREAM_KEY_REGISTRATION_ID_OFFSET,
    STREAM_KEY_SESSION_ID_OFFSET,
    STREAM_KEY_STREAM_ID_OFFSET,
    SUBSCRIBER_POSITION_TYPE_ID,
)
from aeromq.transport.driver.system_counters import SYSTEM_COUNTER_TYPE_ID
from aeromq.transport.driver.udp.network_counters import (
    CHANNEL_STATUS_KEY_CHANNEL_LENGTH_OFFSET,
    CHANNEL_STATUS_KEY_CHANNEL_OFFSET,
    RECEIVE_CHANNEL_STATUS_TYPE_ID,
    RECEIVER_HWM_TYPE_ID,
    RECEIVER_POSITION_TYPE_ID,
    SEND_CHANNEL_STATUS_TYPE_ID,
    SENDER_BPE_TYPE_ID,
    SENDER_LIMIT_TYPE_ID,
    SENDER_POSITION_TYPE_ID,
)

__all__ = [
    "CHANNEL_STATUS_TYPE_IDS",
    "PER_IMAGE_TYPE_ID",
    "STREAM_COUNTER_TYPE_IDS",
    "StreamKey",
    "counter_channel",
    "counter_identity",
    "read_stream_key",
    "stream_key",
]

PER_IMAGE_TYPE_ID = 10
"""Aeron's ``PerImageIndicator`` (a stream counter); our driver does not allocate one."""

STREAM_COUNTER_TYPE_IDS = frozenset(
    {
        PUBLISHER_LIMIT_TYPE_ID,
        SENDER_POSITION_TYPE_ID,
        RECEIVER_HWM_TYPE_ID,
        SUBSCRIBER_POSITION_TYPE_ID,
        RECEIVER_POSITION_TYPE_ID,
        SENDER_LIMIT_TYPE_ID,
        PER_IMAGE_TYPE_ID,
        PUBLISHER_POSITION_TYPE_ID,
        SENDER_BPE_TYPE_ID,
    }
)
"""Type ids whose key is a stream position key."""

CHANNEL_STATUS_TYPE_IDS = frozenset({SEND_CHANNEL_STATUS_TYPE_ID, RECEIVE_CHANNEL_STATUS_TYPE_ID})
"""Type ids whose key is a channel (endpoint status counters)."""

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


class StreamKey(NamedTuple):
    """The fields of a stream position key."""

    registration_id: int
    session_id: int
    stream_id: int
    channel: str


def _ascii(key: bytes, length_offset: int, text_offset: int) -> str:
    """A length-prefixed ASCII string in ``key``, its length clamped to what the key holds."""
    length = _I32.unpack_from(key, length_offset)[0]
    length = min(max(length, 0), max(len(key) - text_offset, 0))
    return key[text_offset : text_offset + length].decode("ascii", "replace")


def read_stream_key(key: bytes) -> StreamKey:
    """Decode a stream position key (at least 20 bytes; the channel is cut to what is there)."""
    return StreamKey(
        _I64.unpack_from(key, STREAM_KEY_REGISTRATION_ID_OFFSET)[0],
        _I32.unpack_from(key, STREAM_KEY_SESSION_ID_OFFSET)[0],
        _I32.unpack_from(key, STREAM_KEY_STREAM_ID_OFFSET)[0],
        _ascii(key, STREAM_KEY_CHANNEL_LENGTH_OFFSET, STREAM_KEY_CHANNEL_OFFSET),
    )


def stream_key(type_id: int, key: bytes) -> StreamKey | None:
    """The stream key of a stream counter, None for a counter of another type."""
    if type_id not in STREAM_COUNTER_TYPE_IDS or len(key) < STREAM_KEY_CHANNEL_OFFSET:
        return None
    return read_stream_key(key)


def counter_channel(type_id: int, key: bytes) -> str | None:
    """The channel in the key of a stream or channel status counter, None for other types."""
    stream = stream_key(type_id, key)
    if stream is not None:
        return stream.channel
    if type_id in CHANNEL_STATUS_TYPE_IDS and len(key) >= CHANNEL_STATUS_KEY_CHANNEL_OFFSET:
        return _ascii(
            key, CHANNEL_STATUS_KEY_CHANNEL_LENGTH_OFFSET, CHANNEL_STATUS_KEY_CHANNEL_OFFSET
        )
    return None


def counter_identity(type_id: int, key: bytes, registration_id: int) -> int:
    """A system counter's id, a stream counter's registration id, else ``registration_id``
    (the value record's)."""
    if type_id == SYSTEM_COUNTER_TYPE_ID and len(key) >= _I32.size:
        return int(_I32.unpack_from(key, 0)[0])
    stream = stream_key(type_id, key)
    return stream.registration_id if stream is not None else registration_id
