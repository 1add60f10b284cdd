"""Decoding counter keys as the driver writes them (and as Aeron does)."""

from __future__ import annotations

from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.driver.stream_counters import (
    CLIENT_HEARTBEAT_TYPE_ID,
    PUBLISHER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
    stream_counter_key,
)
from aeromq.transport.driver.udp.network_counters import (
    LOCAL_SOCKADDR_TYPE_ID,
    RECEIVE_CHANNEL_STATUS_TYPE_ID,
    SENDER_POSITION_TYPE_ID,
    channel_status_key,
    local_sockaddr_key,
)
from aeromq.transport.tools.counter_keys import (
    CHANNEL_STATUS_TYPE_IDS,
    STREAM_COUNTER_TYPE_IDS,
    StreamKey,
    counter_channel,
    counter_identity,
    read_stream_key,
    stream_key,
)


def padded(key: bytes) -> bytes:
    """The key area as a reader copies it: zero padded to MAX_KEY_LENGTH."""
    return key.ljust(MAX_KEY_LENGTH, b"\0")


def test_should_know_aeron_stream_and_channel_status_type_ids() -> None:
    assert frozenset({1, 2, 3, 4, 5, 9, 10, 12, 13}) == STREAM_COUNTER_TYPE_IDS
    assert frozenset({6, 7}) == CHANNEL_STATUS_TYPE_IDS


def test_should_decode_a_stream_key_written_by_the_driver() -> None:
    key = padded(stream_counter_key(77, -5, 1001, "aeron:udp?endpoint=localhost:40123"))
    expected = StreamKey(77, -5, 1001, "aeron:udp?endpoint=localhost:40123")
    assert read_stream_key(key) == expected
    assert stream_key(SUBSCRIBER_POSITION_TYPE_ID, key) == expected
    assert counter_channel(SENDER_POSITION_TYPE_ID, key) == expected.channel


def test_should_cut_a_channel_longer_than_the_key_holds() -> None:
    channel = "aeron:ipc?alias=" + "x" * 200
    key = padded(stream_counter_key(1, 2, 3, channel))
    decoded = read_stream_key(key)
    assert decoded.channel == channel[: MAX_KEY_LENGTH - 20]
    forged = bytearray(key)
    forged[16:20] = (10_000).to_bytes(4, "little")  # a length past the key: clamp, never raise
    assert read_stream_key(bytes(forged)).channel == decoded.channel
    forged[16:20] = (-1).to_bytes(4, "little", signed=True)
    assert read_stream_key(bytes(forged)).channel == ""


def test_should_not_read_a_stream_key_from_other_counter_types() -> None:
    key = padded(stream_counter_key(77, 5, 1001, "aeron:ipc"))
    assert stream_key(CLIENT_HEARTBEAT_TYPE_ID, key) is None
    assert stream_key(0, key) is None
    assert counter_channel(LOCAL_SOCKADDR_TYPE_ID, padded(local_sockaddr_key(3, "h:1"))) is None


def test_should_read_the_channel_of_a_channel_status_key() -> None:
    key = padded(channel_status_key("aeron:udp?endpoint=127.0.0.1:0"))
    assert counter_channel(RECEIVE_CHANNEL_STATUS_TYPE_ID, key) == "aeron:udp?endpoint=127.0.0.1:0"
    assert stream_key(RECEIVE_CHANNEL_STATUS_TYPE_ID, key) is None


def test_should_take_the_identity_aeron_stat_filters_on() -> None:
    system_key = padded((15).to_bytes(4, "little"))
    assert counter_identity(0, system_key, registration_id=99) == 15
    position_key = padded(stream_counter_key(77, 5, 1001, "aeron:ipc"))
    assert counter_identity(PUBLISHER_POSITION_TYPE_ID, position_key, registration_id=99) == 77
    heartbeat_key = padded((42).to_bytes(8, "little"))
    assert counter_identity(CLIENT_HEARTBEAT_TYPE_ID, heartbeat_key, registration_id=42) == 42
    assert counter_identity(1001, padded(b""), registration_id=-3) == -3
