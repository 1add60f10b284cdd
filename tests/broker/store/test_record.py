from __future__ import annotations

import struct
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.broker.store import _record as record
from aeromq.broker.store._record import (
    BLANK_MAGIC,
    HEADER_LENGTH,
    MIN_RECORD_LENGTH,
    RecordCheck,
    check_record,
    decode_record,
    encode_record,
    record_length,
)
from aeromq.common import decode_properties, encode_properties

_PROPERTY_TEXT = st.characters(codec="utf-8", exclude_characters="\x00\x01\x02")
HOST = bytes([127, 0, 0, 1]) + struct.pack("<i", 10911)


def _encode(**overrides: object) -> bytes:
    values: dict[str, object] = {
        "topic": b"TopicA",
        "queue_id": 3,
        "body": b"hello world",
        "properties": encode_properties({"TAGS": "TagA", "KEYS": "k1 k2"}),
        "queue_offset": 42,
        "physical_offset": 0,
        "store_timestamp_ms": 1_700_000_000_123,
        "store_host": HOST,
    }
    values.update(overrides)
    return encode_record(**values)  # type: ignore[arg-type]


def test_should_document_the_header_layout_that_the_struct_packs() -> None:
    offsets = [
        record.TOTAL_SIZE_OFFSET,
        record.MAGIC_OFFSET,
        record.BODY_CRC_OFFSET,
        record.QUEUE_ID_OFFSET,
        record.FLAG_OFFSET,
        record.QUEUE_OFFSET_OFFSET,
        record.PHYSICAL_OFFSET_OFFSET,
        record.SYS_FLAG_OFFSET,
        record.BORN_TIMESTAMP_OFFSET,
        record.BORN_HOST_OFFSET,
        record.STORE_TIMESTAMP_OFFSET,
        record.STORE_HOST_OFFSET,
        record.RECONSUME_TIMES_OFFSET,
        record.PREPARED_TRANSACTION_OFFSET_OFFSET,
        record.BODY_LENGTH_OFFSET,
        record.BODY_OFFSET,
    ]
    sizes = [4, 4, 4, 4, 4, 8, 8, 4, 8, 8, 8, 8, 4, 8, 4]
    assert offsets == [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    assert record.HEADER.size == HEADER_LENGTH == 88
    assert record_length(0, 1, 0) == MIN_RECORD_LENGTH == 88 + 1 + 1 + 2 + 4


def test_should_place_each_field_at_its_documented_offset() -> None:
    data = _encode(flag=7, sys_flag=9, born_timestamp_ms=11, reconsume_times=2)
    assert struct.unpack_from("<i", data, record.TOTAL_SIZE_OFFSET)[0] == len(data)
    assert struct.unpack_from("<I", data, record.MAGIC_OFFSET)[0] == record.MESSAGE_MAGIC
    assert struct.unpack_from("<I", data, record.BODY_CRC_OFFSET)[0] == zlib.crc32(b"hello world")
    assert struct.unpack_from("<i", data, record.QUEUE_ID_OFFSET)[0] == 3
    assert struct.unpack_from("<i", data, record.FLAG_OFFSET)[0] == 7
    assert struct.unpack_from("<q", data, record.QUEUE_OFFSET_OFFSET)[0] == 42
    assert struct.unpack_from("<i", data, record.SYS_FLAG_OFFSET)[0] == 9
    assert struct.unpack_from("<q", data, record.BORN_TIMESTAMP_OFFSET)[0] == 11
    assert data[record.STORE_HOST_OFFSET : record.STORE_HOST_OFFSET + 8] == HOST
    assert struct.unpack_from("<i", data, record.RECONSUME_TIMES_OFFSET)[0] == 2
    assert data[record.BODY_OFFSET : record.BODY_OFFSET + 11] == b"hello world"
    assert data[record.BODY_OFFSET + 11] == len(b"TopicA")
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == zlib.crc32(data[:-4])


def test_should_round_trip_a_record() -> None:
    data = _encode()
    assert check_record(data, 0, len(data)) == (RecordCheck.OK, len(data))
    message = decode_record(data, 0)
    assert message.topic == "TopicA"
    assert message.queue_id == 3
    assert message.body == b"hello world"
    assert message.tags == "TagA"
    assert message.keys == ["k1", "k2"]
    assert message.queue_offset == 42
    assert message.store_size == len(data)
    assert message.store_timestamp_ms == 1_700_000_000_123


def test_should_report_never_written_space_as_the_end() -> None:
    assert check_record(bytes(64), 0, 64) == (RecordCheck.END, 0)
    assert check_record(bytes(64), 60, 64) == (RecordCheck.END, 0)
    assert check_record(b"\x00\x00\x01", 0, 3) == (RecordCheck.BAD_SIZE, 0)


def test_should_accept_a_blank_only_when_it_runs_to_the_segment_end() -> None:
    blank = struct.pack("<iI", 32, BLANK_MAGIC) + bytes(24)
    assert check_record(blank, 0, 32) == (RecordCheck.BLANK, 32)
    assert check_record(blank + bytes(8), 0, 40) == (RecordCheck.BAD_SIZE, 0)


def test_should_reject_a_record_cut_short() -> None:
    data = _encode()
    assert check_record(data[:-1], 0, len(data) - 1)[0] is RecordCheck.BAD_SIZE
    torn = data[:40] + bytes(len(data) - 40)
    assert check_record(torn, 0, len(torn))[0] is RecordCheck.BAD_LENGTHS


@settings(max_examples=200, deadline=None)
@given(
    topic=st.text(alphabet="abcXYZ019_-%|", min_size=1, max_size=127),
    queue_id=st.integers(0, 2**31 - 1),
    body=st.binary(max_size=600),
    properties=st.dictionaries(
        st.text(alphabet=_PROPERTY_TEXT, min_size=1),
        st.text(alphabet=_PROPERTY_TEXT),
        max_size=4,
    ),
    queue_offset=st.integers(0, 2**62),
    physical_offset=st.integers(0, 2**62),
    stamps=st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)),
    flags=st.tuples(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1)),
)
def test_should_round_trip_any_record(
    topic: str,
    queue_id: int,
    body: bytes,
    properties: dict[str, str],
    queue_offset: int,
    physical_offset: int,
    stamps: tuple[int, int],
    flags: tuple[int, int],
) -> None:
    encoded_properties = encode_properties(properties)
    data = encode_record(
        topic=topic.encode(),
        queue_id=queue_id,
        body=body,
        properties=encoded_properties,
        queue_offset=queue_offset,
        physical_offset=physical_offset,
        store_timestamp_ms=stamps[0],
        born_timestamp_ms=stamps[1],
        store_host=HOST,
        flag=flags[0],
        sys_flag=flags[1],
    )
    padded = b"\xff" * 5 + data + bytes(8)
    assert check_record(padded, 5, len(padded)) == (RecordCheck.OK, len(data))
    message = decode_record(padded, 5)
    assert (message.topic, message.queue_id, message.body) == (topic, queue_id, body)
    assert message.properties == decode_properties(encoded_properties) == properties
    assert (message.queue_offset, message.physical_offset) == (queue_offset, physical_offset)
    assert (message.store_timestamp_ms, message.born_timestamp_ms) == stamps
    assert (message.flag, message.sys_flag) == flags
    assert message.body_crc == zlib.crc32(body)


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(min_size=0, max_size=200),
    where=st.integers(min_value=0),
    flip=st.integers(1, 255),
)
def test_should_detect_any_flipped_byte(body: bytes, where: int, flip: int) -> None:
    data = bytearray(_encode(body=body))
    at = where % len(data)
    data[at] ^= flip
    check, _size = check_record(data, 0, len(data))
    assert check is not RecordCheck.OK
