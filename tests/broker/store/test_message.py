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
    unpack_host,
)
from aeromq.broker.store._message import index_keys


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
