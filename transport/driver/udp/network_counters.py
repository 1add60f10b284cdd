"""Counters of UDP streams and channel endpoints, with Aeron's type ids, keys and labels.

Aeron's ``aeron_position.c`` / ``SenderPos``, ``SenderLimit``, ``SenderBpe``, ``ReceiverHwm``,
``ReceiverPos``, ``ChannelEndpointStatus`` and ``LocalSocketAddressStatus``:

=====================  =======  ===============================================================
label                  type id  value
=====================  =======  ===============================================================
``snd-pos``            2        how far the sender has sent (a stream position)
``snd-lmt``            9        how far flow control lets it send
``snd-bpe``            13       times the sender found itself at its limit (back pressure)
``snd-naks-received``  19       NAKs received for the publication (Aeron 1.53)
``rcv-hwm``            3        the highest position received (the high-water mark)
``rcv-pos``            5        how far the term is rebuilt without gaps
``rcv-naks-sent``      20       NAKs the image sent for its gaps (Aeron 1.53)
``snd-channel``        6        a send endpoint's status: 0 initialising, 1 active, 2 closing,
``rcv-channel``        7        -1 errored (and the same for a receive endpoint)
``snd-local-sockaddr`` 14       1 while the endpoint's socket is bound to the address in its
``rcv-local-sockaddr``          key and label
=====================  =======  ===============================================================

Stream counters use the stream position key and label of
:mod:`transport.driver.stream_counters` (``snd-pos: <registration id> <session> <stream>
<channel>``); an image's counters carry the image's correlation id. A channel status key is the
channel (4-byte packed)::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                        Channel Length                         |
    +---------------------------------------------------------------+
  4 |              Channel (ASCII, at most 108 bytes)              ...
   ...                                                              |
    +---------------------------------------------------------------+

and labelled ``snd-channel: <channel> <bound address:port>``. A local socket address key::

     0                   1                   2                   3
     0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
    +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
  0 |                   Channel Status Counter ID                   |
    +---------------------------------------------------------------+
  4 |                     Socket Address Length                     |
    +---------------------------------------------------------------+
  8 |          Socket Address (ASCII ``host:port``, at most 104)   ...
   ...                                                              |
    +---------------------------------------------------------------+

labelled ``rcv-local-sockaddr: <channel status id> <host:port>``: how a test or a tool finds the
port a subscription on ``endpoint=127.0.0.1:0`` was given.
"""

from __future__ import annotations

from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.stream_counters import stream_counter_key

__all__ = [
    "CHANNEL_STATUS_ACTIVE",
    "CHANNEL_STATUS_CLOSING",
    "CHANNEL_STATUS_ERRORED",
    "CHANNEL_STATUS_INITIALIZING",
    "CHANNEL_STATUS_KEY_CHANNEL_LENGTH_OFFSET",
    "CHANNEL_STATUS_KEY_CHANNEL_OFFSET",
    "LOCAL_SOCKADDR_KEY_ADDRESS_LENGTH_OFFSET",
    "LOCAL_SOCKADDR_KEY_ADDRESS_OFFSET",
    "LOCAL_SOCKADDR_KEY_CHANNEL_STATUS_ID_OFFSET",
    "LOCAL_SOCKADDR_TYPE_ID",
    "RECEIVER_HWM_TYPE_ID",
    "RECEIVER_NAKS_SENT_TYPE_ID",
    "RECEIVER_POSITION_TYPE_ID",
    "RECEIVE_CHANNEL_STATUS_TYPE_ID",
    "SENDER_BPE_TYPE_ID",
    "SENDER_LIMIT_TYPE_ID",
    "SENDER_NAKS_RECEIVED_TYPE_ID",
    "SENDER_POSITION_TYPE_ID",
    "SEND_CHANNEL_STATUS_TYPE_ID",
    "allocate_channel_status",
    "allocate_local_sockaddr",
    "allocate_stream_counter",
    "channel_status_key",
    "local_sockaddr_key",
]

SENDER_POSITION_TYPE_ID = 2
RECEIVER_HWM_TYPE_ID = 3
RECEIVER_POSITION_TYPE_ID = 5
SEND_CHANNEL_STATUS_TYPE_ID = 6
RECEIVE_CHANNEL_STATUS_TYPE_ID = 7
SENDER_LIMIT_TYPE_ID = 9
SENDER_BPE_TYPE_ID = 13
LOCAL_SOCKADDR_TYPE_ID = 14
SENDER_NAKS_RECEIVED_TYPE_ID = 19
RECEIVER_NAKS_SENT_TYPE_ID = 20

_NAMES = {
    SENDER_POSITION_TYPE_ID: "snd-pos",
    RECEIVER_HWM_TYPE_ID: "rcv-hwm",
    RECEIVER_POSITION_TYPE_ID: "rcv-pos",
    SEND_CHANNEL_STATUS_TYPE_ID: "snd-channel",
    RECEIVE_CHANNEL_STATUS_TYPE_ID: "rcv-channel",
    SENDER_LIMIT_TYPE_ID: "snd-lmt",
    SENDER_BPE_TYPE_ID: "snd-bpe",
    SENDER_NAKS_RECEIVED_TYPE_ID: "snd-naks-received",
    RECEIVER_NAKS_SENT_TYPE_ID: "rcv-naks-sent",
}
_LOCAL_SOCKADDR_NAMES = {
    SEND_CHANNEL_STATUS_TYPE_ID: "snd-local-sockaddr",
    RECEIVE_CHANNEL_STATUS_TYPE_ID: "rcv-local-sockaddr",
}

CHANNEL_STATUS_INITIALIZING = 0
CHANNEL_STATUS_ERRORED = -1
CHANNEL_STATUS_ACTIVE = 1
CHANNEL_STATUS_CLOSING = 2

CHANNEL_STATUS_KEY_CHANNEL_LENGTH_OFFSET = 0
CHANNEL_STATUS_KEY_CHANNEL_OFFSET = CHANNEL_STATUS_KEY_CHANNEL_LENGTH_OFFSET + 4
_CHANNEL_STATUS_MAX_CHANNEL_LENGTH = MAX_KEY_LENGTH - CHANNEL_STATUS_KEY_CHANNEL_OFFSET

LOCAL_SOCKADDR_KEY_CHANNEL_STATUS_ID_OFFSET = 0
LOCAL_SOCKADDR_KEY_ADDRESS_LENGTH_OFFSET = LOCAL_SOCKADDR_KEY_CHANNEL_STATUS_ID_OFFSET + 4
LOCAL_SOCKADDR_KEY_ADDRESS_OFFSET = LOCAL_SOCKADDR_KEY_ADDRESS_LENGTH_OFFSET + 4
_LOCAL_SOCKADDR_MAX_ADDRESS_LENGTH = MAX_KEY_LENGTH - LOCAL_SOCKADDR_KEY_ADDRESS_OFFSET


def allocate_stream_counter(
    manager: CountersManager,
    type_id: int,
    registration_id: int,
    session_id: int,
    stream_id: int,
    channel: str,
    owner_id: int = 0,
) -> int:
    """A snd-pos, snd-lmt, snd-bpe, snd-naks-received, rcv-hwm, rcv-pos or rcv-naks-sent
    counter (by ``type_id``)."""
    label = f"{_NAMES[type_id]}: {registration_id} {session_id} {stream_id} {channel}"
    key = stream_counter_key(registration_id, session_id, stream_id, channel)
    return manager.allocate(label, type_id, key, registration_id=registration_id, owner_id=owner_id)


def channel_status_key(channel: str) -> bytes:
    encoded = channel.encode("ascii", "replace")[:_CHANNEL_STATUS_MAX_CHANNEL_LENGTH]
    return len(encoded).to_bytes(4, "little") + encoded


def allocate_channel_status(
    manager: CountersManager,
    type_id: int,
    registration_id: int,
    channel: str,
    local_address: str,
) -> int:
    """A snd-channel or rcv-channel status counter, labelled with the bound address."""
    return manager.allocate(
        f"{_NAMES[type_id]}: {channel} {local_address}",
        type_id,
        channel_status_key(channel),
        registration_id=registration_id,
    )


def local_sockaddr_key(channel_status_id: int, local_address: str) -> bytes:
    encoded = local_address.encode("ascii", "replace")[:_LOCAL_SOCKADDR_MAX_ADDRESS_LENGTH]
    return (
        channel_status_id.to_bytes(4, "little", signed=True)
        + len(encoded).to_bytes(4, "little")
        + encoded
    )


def allocate_local_sockaddr(
    manager: CountersManager,
    channel_status_type_id: int,
    registration_id: int,
    channel_status_id: int,
    local_address: str,
) -> int:
    """The snd- or rcv-local-sockaddr counter of an endpoint (by its status counter's type)."""
    name = _LOCAL_SOCKADDR_NAMES[channel_status_type_id]
    return manager.allocate(
        f"{name}: {channel_status_id} {local_address}",
        LOCAL_SOCKADDR_TYPE_ID,
        local_sockaddr_key(channel_status_id, local_address),
        registration_id=registration_id,
    )
