from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.broker import InvalidArgumentError
from aeromq.broker.store import (
    InboundMessage,
    create_message_id,
    decode_message_id,
    pack_host,
    tag_hash,
    unpack_host,
)
from aeromq.broker.store._message import decode_properties, encode_properties, index_keys


@pytest.mark.parametrize(
    ("tag", "java_hash_code"),
    [("", 0), ("a", 97), ("abc", 96354), ("Hello", 69609650), ("TagA", 2598919)],
)
def test_should_hash_tags_like_java_string_hash_code(tag: str, java_hash_code: int) -> None:
    assert tag_hash(tag) == java_hash_code


def test_should_wrap_tag_hashes_to_signed_32_bits() -> None:
    long_tag = "x" * 50
    expected = 0
    for ch in long_tag:
        expected = (31 * expected + ord(ch)) & 0xFFFFFFFF
    expected -= 1 << 32 if expected >= 1 << 31 else 0
    assert tag_hash(long_tag) == expected
    assert tag_hash("\U0001f600") == 31 * 0xD83D + 0xDE00  # UTF-16 code units, as Java


def test_should_encode_properties_as_rocketmq_strings() -> None:
    encoded = encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"})
    assert encoded == b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02"
    assert decode_properties(encoded) == {"TAGS": "TagA", "KEYS": "k1 k2"}
    assert encode_properties({}) == b"" and decode_properties(b"") == {}


def test_should_index_each_key_and_the_unique_key() -> None:
    assert index_keys({"KEYS": " a  b ", "UNIQ_KEY": "U1"}) == ["a", "b", "U1"]
    assert index_keys({"TAGS": "x"}) == []


@given(address=st.ip_addresses(v=4), port=st.integers(0, 65535), offset=st.integers(0, 2**63 - 1))
def test_should_round_trip_hosts_and_message_ids(address: object, port: int, offset: int) -> None:
    host = f"{address}:{port}"
    packed = pack_host(host)
    assert len(packed) == 8 and unpack_host(packed) == host
    message_id = create_message_id(packed, offset)
    assert len(message_id) == 32 and message_id == message_id.upper()
    assert decode_message_id(message_id) == (host, offset)


def test_should_reject_bad_hosts_and_ids() -> None:
    with pytest.raises(InvalidArgumentError, match="host='nohost'"):
        pack_host("nohost")
    with pytest.raises(InvalidArgumentError, match="message_id='zz'"):
        decode_message_id("zz")


def test_should_default_the_born_time_to_now() -> None:
    message = InboundMessage("T", 1, b"x", {"TAGS": "a"})
    assert message.born_timestamp_ms > 1_600_000_000_000
    assert message.tags == "a"
    assert "topic='T'" in repr(message)
