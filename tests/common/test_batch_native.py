"""The C encoder, checker and merger of record batches (``common/record_batch/_encoder.c``,
``_checker.c``, ``_merger.c``) agree with the Python reference (``encode_batch_py``,
``check_batch_py``, ``merge_batches_py``) on valid batches and on every kind of broken one;
``encode_batch`` and ``check_batch`` go through C."""

from __future__ import annotations

import struct
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from aeromq.common import hash_code
from aeromq.common.record_batch import (
    CRC_OFFSET,
    CRC_START,
    RECORD_COUNT_OFFSET,
    TOPIC_LENGTH_OFFSET,
    BatchCheck,
    batch_header_length,
    check_batch,
    check_batch_py,
    checker,
    encode_batch,
    encode_batch_py,
    encoder,
    merge_batches_py,
    merger,
)
from aeromq.common.record_batch import _native as native

TOPIC = b"TopicTest"
HOST = bytes((127, 0, 0, 1)) + struct.pack("<i", 10911)

_tag_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters=" \t\n\r\f\v|"), max_size=6
)
_property_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x01\x02"),
    min_size=1,
    max_size=8,
)


@st.composite
def _records(draw: st.DrawFn) -> dict[str, Any]:
    """The arguments of a valid batch: bodies, tags (some None, some non-BMP), properties."""
    count = draw(st.integers(1, 6))
    bodies = draw(st.lists(st.binary(min_size=1, max_size=20), min_size=count, max_size=count))
    tags = draw(
        st.one_of(
            st.none(), st.lists(st.one_of(st.none(), _tag_text), min_size=count, max_size=count)
        )
    )
    pairs = st.lists(st.tuples(_property_text, _property_text | st.just("")), max_size=3)
    properties = [
        "".join(f"{name}\x01{value}\x02" for name, value in draw(pairs)).encode()
        for _ in range(count)
    ]
    flags = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=count, max_size=count))
    return {
        "bodies": bodies,
        "tags": tags,
        "properties": properties,
        "flags": flags,
        "born_timestamp_ms": draw(st.integers(0, 2**62)),
        "born_deltas_ms": draw(st.lists(st.integers(0, 1000), min_size=count, max_size=count)),
        "reconsume_times": draw(st.integers(0, 16)),
        # any sys flag but COMPRESSED_FLAG (bit 0), which says the bodies are one block
        "attributes": draw(st.integers(0, 0xFFFF)) & ~1,
    }


def _codes(data: bytes | bytearray, **kwargs: Any) -> tuple[int, int]:
    """(C, Python) codes of one check of ``data``, for every combination of the switches."""
    topic = kwargs.get("topic")
    c = native.check(
        data,
        topic,
        kwargs.get("max_body_length", 2**31 - 1),
        kwargs.get("max_body_total", 1 << 62),
        kwargs.get("max_records", 2**31 - 1),
        kwargs.get("check_crc", True),
        kwargs.get("check_content", True),
    )
    return c, int(check_batch_py(data, **kwargs)[0])


def _recrc(data: bytearray) -> bytearray:
    struct.pack_into("<I", data, CRC_OFFSET, zlib.crc32(memoryview(data)[CRC_START:]))
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_records())
def test_should_encode_the_same_bytes_in_c_as_in_python(records: dict[str, Any]) -> None:
    python = encode_batch_py(TOPIC, born_host=HOST, **records)
    assert (
        native.encode(
            TOPIC,
            records["bodies"],
            records["tags"],
            records["properties"],
            None,
            records["flags"],
            records["born_timestamp_ms"],
            records["born_deltas_ms"],
            HOST,
            records["reconsume_times"],
            records["attributes"],
        )
        == python
    )
    assert encode_batch(TOPIC, born_host=HOST, **records) == python
    joined = dict(records, properties=b"".join(records["properties"]))
    lengths = [len(item) for item in records["properties"]]
    assert encode_batch(TOPIC, born_host=HOST, property_lengths=lengths, **joined) == python
    assert encode_batch_py(TOPIC, born_host=HOST, property_lengths=lengths, **joined) == python
    assert _codes(python, topic=TOPIC) == (0, 0)


_MUTATIONS = st.sampled_from(
    [
        "flip", "flip_recrc", "truncate", "extend", "count", "length", "topic_length",
        "hash", "tag_byte", "property_byte", "topic_byte", "magic", "empty_body",
    ]
)  # fmt: skip


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _records(),
    _MUTATIONS,
    st.integers(0, 1 << 20),
    st.integers(0, 255),
    st.sampled_from([None, TOPIC, b"Other"]),
    st.booleans(),
    st.booleans(),
    st.integers(0, 40),
)
def test_should_refuse_every_broken_batch_with_the_same_code_in_c_as_in_python(
    records: dict[str, Any],
    mutation: str,
    where: int,
    byte: int,
    topic: bytes | None,
    check_crc: bool,
    check_content: bool,
    limit: int,
) -> None:
    if mutation == "empty_body":
        records["bodies"][where % len(records["bodies"])] = b""
    data = encode_batch_py(TOPIC, born_host=HOST, **records)
    count = len(records["bodies"])
    header = batch_header_length(len(TOPIC))
    variable = header + 28 * count
    if mutation in ("flip", "flip_recrc"):
        data[CRC_START + where % (len(data) - CRC_START)] ^= 1 << (byte % 8)
        if mutation == "flip_recrc":
            _recrc(data)
    elif mutation == "truncate":
        del data[where % len(data) :]
    elif mutation == "extend":
        data += bytes([byte]) * (1 + where % 9)
    elif mutation == "count":
        struct.pack_into("<i", data, RECORD_COUNT_OFFSET, byte - 128)
        _recrc(data)
    elif mutation == "length":  # a body, tag or property length column value
        struct.pack_into("<i", data, header + 8 * count + 4 * (where % (3 * count)), byte - 128)
        _recrc(data)
    elif mutation == "topic_length":
        struct.pack_into("<H", data, TOPIC_LENGTH_OFFSET, where % 300)
        _recrc(data)
    elif mutation == "hash":
        struct.pack_into("<q", data, header + 8 * (where % count), byte - 128)
        _recrc(data)
    elif mutation in ("tag_byte", "property_byte"):  # an invalid UTF-8 byte, a separator, ...
        tags = sum(len(t.encode()) for t in records["tags"] or () if t)
        properties = sum(len(p) for p in records["properties"])
        span = tags if mutation == "tag_byte" else properties
        start = len(data) - properties - (tags if mutation == "tag_byte" else 0)
        if span:
            data[start + where % span] = byte
            _recrc(data)
    elif mutation == "topic_byte":
        data[76 + where % len(TOPIC)] = byte
        _recrc(data)
    elif mutation == "magic":
        data[4 + where % 4] ^= 1 << (byte % 8)
    assert variable <= len(data) or mutation in ("truncate", "count", "length", "topic_length")
    kwargs = {
        "topic": topic,
        "check_crc": check_crc,
        "check_content": check_content,
        "max_body_length": 2**31 - 1 if limit % 3 else limit,
        "max_body_total": 1 << 62 if limit % 4 else 4 * limit,
        "max_records": limit // 4 if limit % 7 == 0 else 2**31 - 1,
    }
    c, python = _codes(data, **kwargs)
    event(f"{mutation}: {BatchCheck(python).name}")
    assert c == python
    assert check_batch(data, **kwargs) == check_batch_py(data, **kwargs)


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        (b"\xc0\x80", BatchCheck.BAD_TAG),  # overlong NUL
        (b"\xed\xa0\x80", BatchCheck.BAD_TAG),  # a surrogate
        (b"\xf4\x90\x80\x80", BatchCheck.BAD_TAG),  # above U+10FFFF
        (b"\xe2\x82", BatchCheck.BAD_TAG),  # cut short
        (b"\x0b", BatchCheck.BAD_TAG),  # vertical tab is whitespace
        (b"\r", BatchCheck.BAD_TAG),
        (b"\x1c", BatchCheck.OK),  # a separator, not whitespace for bytes patterns
        (b"\xf0\x9f\x98\x80", BatchCheck.OK),  # U+1F600: two UTF-16 units in the hash
        (b"\xc2\xa0", BatchCheck.OK),  # NO-BREAK SPACE is not ASCII whitespace
    ],
)
def test_should_judge_tag_bytes_as_pythons_utf8_decoder_does(
    tag: bytes, expected: BatchCheck
) -> None:
    data = encode_batch_py(TOPIC, [b"x"], ["a" * len(tag)])
    data[-len(tag) :] = tag
    hashed = hash_code(tag.decode()) if expected is BatchCheck.OK else 0
    struct.pack_into("<q", data, batch_header_length(len(TOPIC)), hashed)
    _recrc(data)
    assert _codes(data) == (expected, expected)


@pytest.mark.parametrize(
    "properties",
    [b"a\x01b", b"\x01b\x02", b"a\x01b\x01c\x02", b"a\x00\x01b\x02", b"a\x01\xff\x02", b"a\x02"],
)
def test_should_refuse_malformed_properties_in_c_as_in_python(properties: bytes) -> None:
    data = encode_batch_py(TOPIC, [b"x"], None, [properties])
    assert _codes(data) == (BatchCheck.BAD_PROPERTIES, BatchCheck.BAD_PROPERTIES)


def test_should_refuse_a_record_whose_properties_end_inside_a_pair() -> None:
    data = encode_batch_py(TOPIC, [b"x", b"y"], None, [b"a\x01", b"b\x02"])
    assert _codes(data) == (BatchCheck.BAD_PROPERTIES, BatchCheck.BAD_PROPERTIES)


def test_should_word_a_refusal_found_in_c_with_the_python_text() -> None:
    data = encode_batch(TOPIC, [b"a", b"b" * 11])
    check, text = check_batch(data, max_body_length=10)
    assert check is BatchCheck.BODY_TOO_LARGE and "index=1" in text and "body_length=11" in text


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"bodies": []}, ValueError),
        ({"topic": b"t" * 256}, ValueError),
        ({"flags": [2**31]}, struct.error),
        ({"flags": [1, 2]}, struct.error),
        ({"born_deltas_ms": [-(2**31) - 1]}, struct.error),
        ({"reconsume_times": 2**31}, struct.error),
        ({"attributes": -1}, struct.error),
        ({"properties": b"a\x01b\x02"}, ValueError),
        ({"properties": b"a\x01b\x02", "property_lengths": [3]}, ValueError),
    ],
)
def test_should_raise_the_same_error_in_c_as_in_python_for_values_that_cannot_be_encoded(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    arguments: dict[str, Any] = {"topic": TOPIC, "bodies": [b"x"], **kwargs}
    with pytest.raises(error):
        encode_batch_py(**arguments)
    with pytest.raises(error):
        encode_batch(**arguments)


def test_should_use_the_native_module_when_it_is_built() -> None:
    assert encoder._native is checker._native is merger._native is native


@pytest.mark.parametrize("bodies", [[b""], [b"", b"x"], [b"x", b""], [b"x", b"", b"y"]])
def test_should_find_an_empty_body_anywhere_in_c_as_in_python(bodies: list[bytes]) -> None:
    data = encode_batch_py(TOPIC, bodies)
    assert _codes(data) == (BatchCheck.EMPTY_BODY, BatchCheck.EMPTY_BODY)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=400), st.integers(1, 12), st.integers(0, 20), st.booleans())
def test_should_agree_with_python_on_random_bytes_behind_a_plausible_header(
    tail: bytes, count: int, topic_length: int, recrc: bool
) -> None:
    """Random columns and data behind a header whose framing fields hold: no crash, one code."""
    data = bytearray(struct.pack("<iI", 0, 0x31425141)) + bytearray(68) + bytearray(tail)
    struct.pack_into("<i", data, RECORD_COUNT_OFFSET, count)
    struct.pack_into("<H", data, TOPIC_LENGTH_OFFSET, topic_length)
    struct.pack_into("<i", data, 0, len(data))
    if recrc:
        _recrc(data)
    for topic in (None, TOPIC):
        c, python = _codes(data, topic=topic)
        assert c == python


# -- merge: a producer's sends joined into one request --------------------------------------


@st.composite
def _mergeable(draw: st.DrawFn) -> list[bytes]:
    """1 to 5 batches of one topic, born host, reconsume times and attributes, each with its
    own base born time."""
    count = draw(st.integers(1, 5))
    base_ms = draw(st.integers(0, 2**40))
    shared = {
        "reconsume_times": draw(st.integers(0, 16)),
        "attributes": 2 * draw(st.integers(0, 4)),
    }
    batches = []
    for _ in range(count):
        records = {**draw(_records()), **shared}
        records["born_timestamp_ms"] = base_ms + draw(st.integers(-5_000, 5_000))
        batches.append(bytes(encode_batch(TOPIC, **records, born_host=HOST)))
    return batches


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mergeable())
def test_should_merge_the_same_bytes_in_c_as_in_python(batches: list[bytes]) -> None:
    merged = native.merge(batches)
    assert merged == merge_batches_py(batches)
    assert merged is not None
    assert check_batch(merged, topic=TOPIC)[0] is BatchCheck.OK


def test_should_not_merge_born_times_an_i32_apart_in_c_as_in_python() -> None:
    early = bytes(encode_batch(TOPIC, [b"a"], born_timestamp_ms=0, born_host=HOST))
    late = bytes(encode_batch(TOPIC, [b"b"], born_timestamp_ms=2**31, born_host=HOST))
    assert native.merge([early, late]) is None
    assert merge_batches_py([early, late]) is None
    assert native.merge([early, late[:-1] + b"c"]) is None  # any body, still too far apart


@pytest.mark.parametrize("cut", [1, 40, 80, 100, 110])
def test_should_refuse_to_merge_a_batch_whose_lengths_do_not_fit_its_bytes(cut: int) -> None:
    whole = bytes(encode_batch(TOPIC, [b"body" * 5, b"x"], born_timestamp_ms=1, born_host=HOST))
    with pytest.raises(ValueError, match="merge: batch 1"):
        native.merge([whole, whole[: len(whole) - cut]])


def test_should_refuse_to_merge_no_batches() -> None:
    with pytest.raises(ValueError, match="1 to 4096 batches, not 0"):
        native.merge([])


@pytest.mark.parametrize("clmul", [False, True], ids=["zlib", "pclmulqdq"])
@pytest.mark.parametrize("body_length", [1, 15, 16, 63, 64, 65, 1_000, 20_000])
def test_should_write_and_check_zlibs_crc_on_either_crc_path(clmul: bool, body_length: int) -> None:
    was = native.use_clmul(clmul)
    try:
        bodies = [bytes(range(256)) * (body_length // 256) + b"x" * (body_length % 256)] * 3
        batch = bytes(encode_batch(TOPIC, bodies, born_timestamp_ms=7, born_host=HOST))
        assert batch == bytes(encode_batch_py(TOPIC, bodies, born_timestamp_ms=7, born_host=HOST))
        crc = struct.unpack_from("<I", batch, CRC_OFFSET)[0]
        assert crc == zlib.crc32(memoryview(batch)[CRC_START:])
        assert check_batch(batch, topic=TOPIC)[0] is BatchCheck.OK
        broken = bytearray(batch)
        broken[-1] ^= 1
        assert check_batch(bytes(broken), topic=TOPIC)[0] is BatchCheck.BAD_CRC
        merged = native.merge([batch, batch])
        assert merged is not None and merged == merge_batches_py([batch, batch])
    finally:
        native.use_clmul(was)
