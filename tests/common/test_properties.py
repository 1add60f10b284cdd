from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_SEPARATOR,
    RESERVED_PROPERTY_NAMES,
    decode_properties,
    encode_properties,
)

_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"))


def test_should_encode_properties_as_rocketmq_strings() -> None:
    encoded = encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"})
    assert encoded == b"TAGS\x01TagA\x02KEYS\x01k1 k2\x02"
    assert decode_properties(encoded) == {"TAGS": "TagA", "KEYS": "k1 k2"}
    assert encode_properties({}) == b"" and decode_properties(b"") == {}
    assert (NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR) == ("\x01", "\x02")


@given(st.dictionaries(_TEXT.filter(bool), _TEXT, max_size=8))
def test_should_decode_what_it_encodes(properties: dict[str, str]) -> None:
    assert decode_properties(encode_properties(properties)) == properties


def test_should_reserve_the_system_property_names() -> None:
    assert {"TAGS", "KEYS", "UNIQ_KEY", "WAIT"} <= RESERVED_PROPERTY_NAMES
