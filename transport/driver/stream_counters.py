"""Per-stream and per-client counters: pub-pos, pub-lmt, sub-pos and client-heartbeat.

Aeron's ``aeron_position.c`` / ``StreamCounter``: type ids, keys and labels as Aeron writes them,
so AeronStat and clients that search counters by type and key find ours.

A stream position counter's key (4-byte packed, at most 112 bytes)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
    |                     Registration ID (i64)                     |
    |                                                               |
    +---------------------------------------------------------------+
    |                          Session ID                           |
    +---------------------------------------------------------------+
    |                           Stream ID                           |
    +---------------------------------------------------------------+
    |                        Channel Length                         |
    +---------------------------------------------------------------+
    |              Channel (ASCII, at most 92 bytes)               ...
   ...                                                              |
    +---------------------------------------------------------------+

A client heartbeat counter's key is the client id (i64). Labels, as Aeron 1.53 writes them:
``pub-pos (concurrent): <registration id> <session id> <stream id> <channel>`` (``exclusive``
for an exclusive publication), ``pub-lmt: ...`` with the same fields, ``sub-pos: ...
@<join position>`` and ``client-heartbeat: id=<client id>``. The value record's registration id
is the registration id of the publication, subscription or client; pub-pos, pub-lmt and sub-pos
carry the owning client's id as owner id, and sub-pos the image's correlation id (for IPC, the
publication's registration id) as reference id. ``tests/interop/`` checks all of it against
the real C driver (pyaeron).
"""

from __future__ import annotations

from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.concurrent.counters_manager import CountersManager

__all__ = [
    "CLIENT_HEARTBEAT_NAME",
    "CLIENT_HEARTBEAT_TYPE_ID",
    "PUBLISHER_LIMIT_NAME",
    "PUBLISHER_LIMIT_TYPE_ID",
    "PUBLISHER_POSITION_CONCURRENT_NAME",
    "PUBLISHER_POSITION_EXCLUSIVE_NAME",
    "PUBLISHER_POSITION_TYPE_ID",
    "STREAM_KEY_CHANNEL_LENGTH_OFFSET",
    "STREAM_KEY_CHANNEL_OFFSET",
    "STREAM_KEY_MAX_CHANNEL_LENGTH",
    "STREAM_KEY_REGISTRATION_ID_OFFSET",
    "STREAM_KEY_SESSION_ID_OFFSET",
    "STREAM_KEY_STREAM_ID_OFFSET",
    "SUBSCRIBER_POSITION_NAME",
    "SUBSCRIBER_POSITION_TYPE_ID",
    "allocate_client_heartbeat",
    "allocate_publisher_limit",
    "allocate_publisher_position",
    "allocate_subscriber_position",
    "stream_counter_key",
]

PUBLISHER_LIMIT_TYPE_ID = 1
SUBSCRIBER_POSITION_TYPE_ID = 4
CLIENT_HEARTBEAT_TYPE_ID = 11
PUBLISHER_POSITION_TYPE_ID = 12

PUBLISHER_LIMIT_NAME = "pub-lmt"
SUBSCRIBER_POSITION_NAME = "sub-pos"
CLIENT_HEARTBEAT_NAME = "client-heartbeat"
PUBLISHER_POSITION_CONCURRENT_NAME = "pub-pos (concurrent)"
PUBLISHER_POSITION_EXCLUSIVE_NAME = "pub-pos (exclusive)"

STREAM_KEY_REGISTRATION_ID_OFFSET = 0
STREAM_KEY_SESSION_ID_OFFSET = STREAM_KEY_REGISTRATION_ID_OFFSET + 8
STREAM_KEY_STREAM_ID_OFFSET = STREAM_KEY_SESSION_ID_OFFSET + 4
STREAM_KEY_CHANNEL_LENGTH_OFFSET = STREAM_KEY_STREAM_ID_OFFSET + 4
STREAM_KEY_CHANNEL_OFFSET = STREAM_KEY_CHANNEL_LENGTH_OFFSET + 4
STREAM_KEY_MAX_CHANNEL_LENGTH = MAX_KEY_LENGTH - STREAM_KEY_CHANNEL_OFFSET


def stream_counter_key(
    registration_id: int, session_id: int, stream_id: int, channel: str
) -> bytes:
    """The key bytes of a stream position counter; the channel is cut to fit."""
    encoded = channel.encode("ascii", "replace")[:STREAM_KEY_MAX_CHANNEL_LENGTH]
    return (
        registration_id.to_bytes(8, "little", signed=True)
        + session_id.to_bytes(4, "little", signed=True)
        + stream_id.to_bytes(4, "little", signed=True)
        + len(encoded).to_bytes(4, "little")
        + encoded
    )


def _allocate_stream_counter(
    manager: CountersManager,
    name: str,
    type_id: int,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    owner_id: int,
    suffix: str = "",
    reference_id: int = 0,
) -> int:
    label = f"{name}: {registration_id} {session_id} {stream_id} {channel}{suffix}"
    key = stream_counter_key(registration_id, session_id, stream_id, channel)
    return manager.allocate(
        label,
        type_id,
        key,
        registration_id=registration_id,
        owner_id=owner_id,
        reference_id=reference_id,
    )


def allocate_publisher_position(
    manager: CountersManager,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    owner_id: int,
    *,
    is_exclusive: bool = False,
) -> int:
    """pub-pos: the producer position, sampled by the driver; named for the publication's kind."""
    return _allocate_stream_counter(
        manager,
        PUBLISHER_POSITION_EXCLUSIVE_NAME if is_exclusive else PUBLISHER_POSITION_CONCURRENT_NAME,
        PUBLISHER_POSITION_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
        owner_id,
    )


def allocate_publisher_limit(
    manager: CountersManager,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    owner_id: int,
) -> int:
    """pub-lmt: the position publishers may not pass (flow control)."""
    return _allocate_stream_counter(
        manager,
        PUBLISHER_LIMIT_NAME,
        PUBLISHER_LIMIT_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
        owner_id,
    )


def allocate_subscriber_position(
    manager: CountersManager,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    join_position: int,
    owner_id: int,
    reference_id: int = 0,
) -> int:
    """sub-pos: one subscription's position in one image, labelled with where it joined;
    ``reference_id`` is the image's correlation id (IPC: the publication's registration id)."""
    return _allocate_stream_counter(
        manager,
        SUBSCRIBER_POSITION_NAME,
        SUBSCRIBER_POSITION_TYPE_ID,
        registration_id,
        session_id,
        stream_id,
        channel,
        owner_id,
        f" @{join_position}",
        reference_id,
    )


def allocate_client_heartbeat(manager: CountersManager, client_id: int) -> int:
    """client-heartbeat: the client's last heartbeat (epoch ms), keyed by the client id."""
    return manager.allocate(
        f"{CLIENT_HEARTBEAT_NAME}: id={client_id}",
        CLIENT_HEARTBEAT_TYPE_ID,
        client_id.to_bytes(8, "little", signed=True),
        registration_id=client_id,
        owner_id=client_id,
    )
