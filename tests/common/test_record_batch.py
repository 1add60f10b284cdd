"""The record batch: what a producer encodes, the broker checks and patches, a consumer reads."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import (
    BATCH_MAGIC,
    BatchCheck,
    RecordBatch,
    batch_header_length,
    check_batch,
    encode_batch,
    hash_code,
    merge_batches,
    pack_host_field,
    patch_batch,
    read_total_length,
)
from aeromq.common.record_batch import (
    CRC_OFFSET,
    QUEUE_ID_OFFSET,
    RECORD_COUNT_OFFSET,
    merge_batches_py,
)

TOPIC = b"TopicTest"
HOST = bytes((127, 0, 0, 1)) + struct.pack("<i", 10911)


def _batch(count: int = 4, **kwargs: object) -> bytearray:
    return encode_batch(
        TOPIC,
        [f"body-{i}".encode() for i in range(count)],
        [f"Tag{i % 2}" if i % 3 else None for i in range(count)],
        [f"UNIQ_KEY\x01id{i}\x02".encode() for i in range(count)],
        flags=list(range(count)),
        born_timestamp_ms=1_700_000_000_000,
        born_deltas_ms=[i * 10 for i in range(count)],
        born_host=HOST,
        **kwargs,  # type: ignore[arg-type]
    )


def test_should_read_back_every_field_of_an_encoded_batch() -> None:
    data = _batch(5, reconsume_times=2, attributes=2)
    assert check_batch(data, topic=TOPIC) == (BatchCheck.OK, "")
    batch = RecordBatch(bytes(data))
    assert (batch.topic, batch.count, batch.reconsume_times, batch.attributes) == (
        "TopicTest",
        5,
        2,
        2,
    )
    assert batch.born_host == HOST
    assert [batch.body(i) for i in range(5)] == [f"body-{i}".encode() for i in range(5)]
    assert [batch.tag(i) for i in range(5)] == [None, "Tag1", "Tag0", None, "Tag0"]
    assert batch.tag_hashes.tolist() == [
        0,
        hash_code("Tag1"),
        hash_code("Tag0"),
        0,
        hash_code("Tag0"),
    ]
    assert batch.properties_bytes(3) == b"UNIQ_KEY\x01id3\x02"
    assert batch.flags.tolist() == [0, 1, 2, 3, 4]
    assert batch.born_deltas_ms.tolist() == [0, 10, 20, 30, 40]
    assert bytes(batch.body_data) == b"".join(f"body-{i}".encode() for i in range(5))
    assert batch.crc_ok()
    assert read_total_length(data) == (len(data), BATCH_MAGIC)


def test_should_patch_the_broker_fields_without_breaking_the_crc() -> None:
    data = _batch()
    patch_batch(data, 0, 1234, 98765, 1_700_000_000_123, HOST, 3)
    assert check_batch(data, topic=TOPIC)[0] is BatchCheck.OK
    batch = RecordBatch(bytes(data))
    assert (batch.base_queue_offset, batch.base_physical_offset, batch.queue_id) == (1234, 98765, 3)
    assert (batch.store_timestamp_ms, batch.store_host) == (1_700_000_000_123, HOST)


def test_should_read_a_batch_at_its_position_in_a_larger_buffer() -> None:
    data = bytes(8) + bytes(_batch(3)) + bytes(8)
    batch = RecordBatch(data, 8)
    assert batch.body(2) == b"body-2" and batch.crc_ok()


def test_should_catch_a_flipped_byte_under_the_crc() -> None:
    data = _batch()
    data[-1] ^= 0x40
    check, text = check_batch(data)
    assert check is BatchCheck.BAD_CRC and "computed=" in text
    assert not RecordBatch(bytes(data)).crc_ok()


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d.__setitem__(slice(4, 8), b"XXXX"), BatchCheck.BAD_MAGIC),
        (lambda d: d.extend(b"x"), BatchCheck.TRUNCATED),
        (lambda d: d.__delitem__(slice(-1, None)), BatchCheck.TRUNCATED),
        (lambda d: d.__delitem__(slice(40, None)), BatchCheck.TRUNCATED),
    ],
)
def test_should_name_broken_framing(mutate: object, expected: BatchCheck) -> None:
    data = _batch()
    mutate(data)  # type: ignore[operator]
    assert check_batch(data)[0] is expected


def _with_crc(data: bytearray) -> bytearray:
    import zlib

    struct.pack_into("<I", data, CRC_OFFSET, zlib.crc32(memoryview(data)[48:]))
    return data


def test_should_refuse_a_count_that_does_not_fit_the_lengths() -> None:
    data = _batch(4)
    struct.pack_into("<i", data, RECORD_COUNT_OFFSET, 3)
    assert check_batch(_with_crc(data))[0] is BatchCheck.BAD_LENGTHS
    struct.pack_into("<i", data, RECORD_COUNT_OFFSET, 0)
    assert check_batch(_with_crc(data))[0] is BatchCheck.BAD_LENGTHS


def test_should_refuse_another_topic_than_the_requests() -> None:
    assert check_batch(_batch(), topic=b"Other")[0] is BatchCheck.BAD_TOPIC


def test_should_refuse_empty_and_oversize_bodies_with_their_index() -> None:
    check, text = check_batch(encode_batch(TOPIC, [b"a", b""]))
    assert check is BatchCheck.EMPTY_BODY and "index=1" in text
    check, text = check_batch(encode_batch(TOPIC, [b"a", b"b" * 11]), max_body_length=10)
    assert check is BatchCheck.BODY_TOO_LARGE and "body_length=11" in text and "index=1" in text


def test_should_refuse_too_many_records() -> None:
    assert check_batch(_batch(5), max_records=4)[0] is BatchCheck.TOO_MANY_RECORDS


@pytest.mark.parametrize("tag", ["a b", "a|b", "a\tb"])
def test_should_refuse_a_tag_with_whitespace_or_a_bar(tag: str) -> None:
    assert check_batch(encode_batch(TOPIC, [b"x"], [tag]))[0] is BatchCheck.BAD_TAG


def test_should_refuse_a_wrong_tag_hash_with_its_index() -> None:
    data = encode_batch(TOPIC, [b"x", b"y"], ["A", "B"])
    header = batch_header_length(len(TOPIC))
    struct.pack_into("<q", data, header + 8, 12345)
    check, text = check_batch(_with_crc(data))
    assert check is BatchCheck.BAD_TAG_HASH and "index=1" in text
    assert f"expected={hash_code('B')}" in text


@pytest.mark.parametrize("wrap", [bytes, memoryview])
@pytest.mark.parametrize("index", [0, 2])
def test_should_refuse_a_tag_hash_without_a_tag(wrap: Callable[[bytes], Any], index: int) -> None:
    data = encode_batch(TOPIC, [b"x", b"y", b"z"])
    assert check_batch(wrap(bytes(data)))[0] is BatchCheck.OK
    struct.pack_into("<q", data, batch_header_length(len(TOPIC)) + 8 * index, 1 << 40)
    assert check_batch(wrap(bytes(_with_crc(data))))[0] is BatchCheck.BAD_TAG_HASH


@pytest.mark.parametrize(
    "properties",
    [
        [b"a\x01b"],  # no closing separator
        [b"\x01b\x02"],  # empty name
        [b"a\x02"],  # no name/value separator
        [b"a\x01b\x01c\x02"],  # two name/value separators
        [b"a\x01", b"b\x02"],  # a pair across two records
        [b"a\x01\xff\x02"],  # not UTF-8
        [b"a\x00\x01b\x02"],  # NUL
    ],
)
def test_should_refuse_malformed_properties(properties: list[bytes]) -> None:
    bodies = [b"x"] * len(properties)
    assert check_batch(encode_batch(TOPIC, bodies, None, properties))[0] is (
        BatchCheck.BAD_PROPERTIES
    )


def test_should_hash_non_ascii_tags_as_java_strings() -> None:
    tags = ["été", "x", None, "\U0001f600"]
    data = encode_batch(TOPIC, [b"1", b"2", b"3", b"4"], tags)
    assert check_batch(data)[0] is BatchCheck.OK
    assert RecordBatch(bytes(data)).tag_hashes.tolist() == [
        hash_code("été"),
        hash_code("x"),
        0,
        hash_code("\U0001f600"),
    ]


def test_should_give_record_sizes_that_add_up_to_the_batch() -> None:
    data = _batch(6)
    batch = RecordBatch(bytes(data))
    sizes = [batch.record_size(i) for i in range(6)]
    assert sum(sizes) + batch_header_length(len(TOPIC)) == len(data)


def test_should_leave_the_queue_id_a_broker_field_outside_the_crc() -> None:
    data = _batch()
    struct.pack_into("<i", data, QUEUE_ID_OFFSET, 7)
    assert check_batch(data)[0] is BatchCheck.OK


@given(
    st.lists(
        st.tuples(
            st.binary(min_size=1, max_size=40),
            st.one_of(
                st.none(),
                st.text(
                    alphabet=st.characters(
                        blacklist_characters=" |\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000",
                        blacklist_categories=("Cs",),
                    ),
                    max_size=12,
                ),
            ),
            st.dictionaries(
                st.text(alphabet="abcXYZ_", min_size=1, max_size=6),
                st.text(
                    alphabet=st.characters(
                        blacklist_characters="\x00\x01\x02", blacklist_categories=("Cs",)
                    ),
                    max_size=8,
                ),
                max_size=3,
            ),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_should_pass_and_read_back_any_valid_batch(
    records: list[tuple[bytes, str | None, dict[str, str]]],
) -> None:
    bodies = [body for body, _, _ in records]
    tags = [tag for _, tag, _ in records]
    properties = ["".join(f"{k}\x01{v}\x02" for k, v in p.items()).encode() for _, _, p in records]
    data = encode_batch(TOPIC, bodies, tags, properties)
    assert check_batch(data, topic=TOPIC) == (BatchCheck.OK, "")
    batch = RecordBatch(bytes(data))
    assert [batch.body(i) for i in range(len(records))] == bodies
    assert [batch.tag(i) for i in range(len(records))] == [t or None for t in tags]
    assert [batch.properties_bytes(i) for i in range(len(records))] == properties
    assert np.array_equal(
        batch.tag_hashes, np.array([hash_code(t) if t else 0 for t in tags], dtype=np.int64)
    )


# -- merge_batches: a producer's sends joined into one request ---------------------------------


def _part(topic: bytes, first: int, count: int, born_ms: int, **kwargs: object) -> bytes:
    bodies = [b"body-%d" % (first + i) * (1 + i % 3) for i in range(count)]
    tags = [None if i % 2 else f"tag{first + i}" for i in range(count)]
    properties = [f"k\x01{first + i}\x02".encode() for i in range(count)]
    return bytes(
        encode_batch(
            topic,
            bodies,
            tags,
            properties,
            flags=[first + i for i in range(count)],
            born_timestamp_ms=born_ms,
            born_deltas_ms=[i for i in range(count)],
            born_host=pack_host_field("10.0.0.7", 4321),
            **kwargs,  # type: ignore[arg-type]
        )
    )


_MERGES = pytest.mark.parametrize("merge", [merge_batches, merge_batches_py], ids=["c", "py"])


@_MERGES
def test_should_merge_batches_into_the_bytes_of_one_encoded_batch(merge: Any) -> None:
    parts = [(0, 3, 1_000), (3, 1, 990), (4, 5, 1_020)]
    merged = merge([_part(b"Merged", f, n, t) for f, n, t in parts])
    assert merged is not None
    bodies = [b"body-%d" % i * (1 + (i - f) % 3) for f, n, _ in parts for i in range(f, f + n)]
    expected = encode_batch(
        b"Merged",
        bodies,
        [None if (i - f) % 2 else f"tag{i}" for f, n, _ in parts for i in range(f, f + n)],
        [f"k\x01{i}\x02".encode() for f, n, _ in parts for i in range(f, f + n)],
        flags=list(range(9)),
        born_timestamp_ms=990,
        born_deltas_ms=[t - 990 + (i - f) for f, n, t in parts for i in range(f, f + n)],
        born_host=pack_host_field("10.0.0.7", 4321),
    )
    assert merged == bytes(expected)
    assert check_batch(merged, topic=b"Merged")[0] is BatchCheck.OK
    assert merge([_part(b"One", 0, 2, 5)]) == _part(b"One", 0, 2, 5)


@_MERGES
def test_should_not_merge_batches_that_cannot_be_one(merge: Any) -> None:
    one = _part(b"TopicA", 0, 2, 1_000)
    assert merge([one, _part(b"TopicB", 0, 2, 1_000)]) is None
    assert merge([one, _part(b"TopicA", 0, 2, 1_000, reconsume_times=1)]) is None
    assert merge([one, _part(b"TopicA", 0, 2, 1_000, attributes=2)]) is None
    assert merge([one, _part(b"TopicA", 0, 2, 1_000 + (1 << 31))]) is None
