"""Network counters: Aeron's type ids, key layouts (as documented) and labels."""

from __future__ import annotations

import struct

from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.driver.stream_counters import STREAM_KEY_CHANNEL_OFFSET
from aeromq.transport.driver.udp import network_counters as n
from tests.transport.udp.support import system_counters


def test_should_use_aerons_type_ids() -> None:
    assert (
        n.SENDER_POSITION_TYPE_ID,
        n.RECEIVER_HWM_TYPE_ID,
        n.RECEIVER_POSITION_TYPE_ID,
        n.SEND_CHANNEL_STATUS_TYPE_ID,
        n.RECEIVE_CHANNEL_STATUS_TYPE_ID,
        n.SENDER_LIMIT_TYPE_ID,
        n.SENDER_BPE_TYPE_ID,
        n.LOCAL_SOCKADDR_TYPE_ID,
    ) == (2, 3, 5, 6, 7, 9, 13, 14)
    assert (n.CHANNEL_STATUS_INITIALIZING, n.CHANNEL_STATUS_ERRORED) == (0, -1)
    assert (n.CHANNEL_STATUS_ACTIVE, n.CHANNEL_STATUS_CLOSING) == (1, 2)


def test_should_lay_out_the_keys_as_the_diagrams_show() -> None:
    assert n.CHANNEL_STATUS_KEY_CHANNEL_OFFSET == struct.calcsize("<i") == 4
    assert n.LOCAL_SOCKADDR_KEY_ADDRESS_OFFSET == struct.calcsize("<ii") == 8
    assert MAX_KEY_LENGTH - n.CHANNEL_STATUS_KEY_CHANNEL_OFFSET == 108
    assert MAX_KEY_LENGTH - n.LOCAL_SOCKADDR_KEY_ADDRESS_OFFSET == 104
    key = n.channel_status_key("aeron:udp?endpoint=127.0.0.1:1")
    assert struct.unpack_from("<i", key)[0] == 30 and key[4:] == b"aeron:udp?endpoint=127.0.0.1:1"
    assert len(n.channel_status_key("x" * 500)) == MAX_KEY_LENGTH
    sockaddr = n.local_sockaddr_key(7, "127.0.0.1:40123")
    assert struct.unpack_from("<ii", sockaddr) == (7, 15)
    assert sockaddr[8:] == b"127.0.0.1:40123"


def test_should_label_stream_and_endpoint_counters_as_aeron() -> None:
    counters, _ = system_counters()
    channel = "aeron:udp?endpoint=127.0.0.1:40123"
    snd_pos = n.allocate_stream_counter(counters, n.SENDER_POSITION_TYPE_ID, 42, 7, 1001, channel)
    assert counters.get_counter_label(snd_pos) == f"snd-pos: 42 7 1001 {channel}"
    assert counters.get_counter_type_id(snd_pos) == 2
    key = counters.get_counter_key(snd_pos)
    assert key[STREAM_KEY_CHANNEL_OFFSET:].rstrip(b"\0") == channel.encode()
    status = n.allocate_channel_status(
        counters, n.RECEIVE_CHANNEL_STATUS_TYPE_ID, 9, channel, "127.0.0.1:40123"
    )
    assert counters.get_counter_label(status) == f"rcv-channel: {channel} 127.0.0.1:40123"
    sockaddr = n.allocate_local_sockaddr(
        counters, n.RECEIVE_CHANNEL_STATUS_TYPE_ID, 9, status, "127.0.0.1:40123"
    )
    assert counters.get_counter_label(sockaddr) == f"rcv-local-sockaddr: {status} 127.0.0.1:40123"
    assert counters.get_counter_type_id(sockaddr) == 14
    for type_id, name in ((3, "rcv-hwm"), (5, "rcv-pos"), (9, "snd-lmt"), (13, "snd-bpe")):
        counter_id = n.allocate_stream_counter(counters, type_id, 1, 2, 3, channel)
        assert counters.get_counter_label(counter_id).startswith(f"{name}: 1 2 3 ")
