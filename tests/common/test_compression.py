"""Compressed batches (``common/record_batch/compression.py``): a producer's batch with its
bodies as one LZ4, Zstandard or zlib block passes the broker's checks (C and Python alike),
reads back as the plain batch would (pulled answers, local-read ranges, the broker's view of
records), and a bad block or CRC is a typed error naming the queue, never wrong bodies."""

from __future__ import annotations

import json
import os
import socket
import struct
import zlib

import pytest

from aeromq.client import CorruptMessageError, IllegalArgumentError, MessageQueue
from aeromq.common import encode_batch, patch_batch
from aeromq.common.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSED_FLAG,
    CRC_OFFSET,
    CRC_START,
    MAGIC_OFFSET,
    BatchCheck,
    CompressionType,
    RecordBatch,
    check_batch,
    check_batch_py,
    compress_batch,
    compression_type,
    inflate_batch,
    merge_batches,
    merge_batches_py,
    read_pulled_chunk,
)
from aeromq.consumer import read_pulled_batches

TOPIC = "orders"
QUEUE = MessageQueue(TOPIC, "broker-a", 3)
BORN_HOST = socket.inet_aton("127.0.0.1") + struct.pack("<i", 9)
STORE_HOST = socket.inet_aton("127.0.0.1") + struct.pack("<i", 10911)
CODECS = list(CompressionType)


def _json_bodies(count: int, start: int = 0) -> list[bytes]:
    return [
        json.dumps(
            {
                "order_id": start + i,
                "customer": f"c-{(start + i) % 97}",
                "status": "PAID",
                "items": [{"sku": "A-100", "qty": 2}, {"sku": "B-7", "qty": 1}],
            }
        ).encode()
        for i in range(count)
    ]


def _batch(bodies: list[bytes], base_offset: int = 0) -> bytearray:
    count = len(bodies)
    batch = encode_batch(
        TOPIC.encode(),
        bodies,
        [("TagA" if i % 2 else None) for i in range(count)],
        [f"KEYS\x01k{base_offset + i}\x02UNIQ_KEY\x01U{i}\x02".encode() for i in range(count)],
        born_timestamp_ms=1_700_000_000_000,
        born_host=BORN_HOST,
    )
    patch_batch(batch, 0, base_offset, 4096 + base_offset, 1_700_000_000_001, STORE_HOST, 3)
    return batch


def _compressed(codec: CompressionType, count: int = 50, base_offset: int = 0) -> bytearray:
    plain = _batch(_json_bodies(count, base_offset), base_offset)
    packed = bytearray(compress_batch(bytes(plain), codec, min_body_bytes=0))
    assert len(packed) < len(plain)
    return packed


@pytest.mark.parametrize("codec", CODECS)
def test_should_shrink_json_bodies_and_inflate_to_the_very_batch_it_was(
    codec: CompressionType,
) -> None:
    plain = bytes(_batch(_json_bodies(200)))
    packed = compress_batch(plain, codec, min_body_bytes=0)
    assert len(packed) < len(plain) / 2
    attributes = struct.unpack_from("<H", packed, ATTRIBUTES_OFFSET)[0]
    assert attributes & COMPRESSED_FLAG and compression_type(attributes) == codec
    assert inflate_batch(packed) == plain


@pytest.mark.parametrize("codec", CODECS)
def test_should_pass_the_brokers_checks_in_c_and_python_alike(codec: CompressionType) -> None:
    packed = _compressed(codec)
    for check in (check_batch, check_batch_py):
        assert check(packed, topic=TOPIC.encode())[0] is BatchCheck.OK
        # the limits are on the bodies' lengths before compression
        refused = check(packed, topic=TOPIC.encode(), max_body_total=len(packed))
        assert refused[0] is BatchCheck.BODY_TOO_LARGE


def test_should_refuse_a_compressed_batch_of_an_unknown_codec() -> None:
    packed = _compressed(CompressionType.ZSTD)
    struct.pack_into("<H", packed, ATTRIBUTES_OFFSET, COMPRESSED_FLAG | (5 << 8))
    for check in (check_batch, check_batch_py):
        assert check(packed, check_crc=False)[0] is BatchCheck.BAD_COMPRESSION


def test_should_leave_small_or_incompressible_bodies_as_they_are() -> None:
    small = bytes(_batch([b"x" * 100]))
    assert compress_batch(small, CompressionType.ZSTD) is small  # under 4 KiB in all
    noise = bytes(_batch([os.urandom(3000) for _ in range(4)]))
    assert compress_batch(noise, CompressionType.LZ4, min_body_bytes=0) is noise


@pytest.mark.parametrize("codec", CODECS)
def test_should_read_a_pulled_answer_of_compressed_and_plain_batches_as_all_plain(
    codec: CompressionType,
) -> None:
    plain = [_batch(_json_bodies(50, 0), 0), _batch(_json_bodies(3, 50), 50)]
    plain.append(_batch(_json_bodies(40, 53), 53))
    mixed = [bytes(plain[0]), bytes(plain[1])]
    mixed[0] = compress_batch(mixed[0], codec, min_body_bytes=0)
    mixed.append(bytes(_compressed(codec, 40, 53)))
    expected = read_pulled_batches(b"".join(plain), QUEUE, "broker-a", 2, 90, None)
    got = read_pulled_batches(b"".join(mixed), QUEUE, "broker-a", 2, 90, None)
    assert len(got) == 88
    assert [m.body for m in got] == [m.body for m in expected]
    assert [m.tags for m in got] == [m.tags for m in expected]
    assert [m.keys for m in got] == [m.keys for m in expected]
    assert [m.queue_offset for m in got] == list(range(2, 90))


def test_should_read_compressed_batches_at_the_ranges_of_a_local_read() -> None:
    one, two = _compressed(CompressionType.ZSTD, 30, 0), _compressed(CompressionType.LZ4, 30, 30)
    file = bytes(100) + bytes(one) + bytes(17) + bytes(two)
    ranges = struct.pack("<4q", 100, len(one), 117 + len(one), len(two))
    chunk = read_pulled_chunk(file, QUEUE, "broker-a", 0, 60, None, ranges)
    assert chunk is not None and len(chunk) == 60
    got = read_pulled_batches(file, QUEUE, "broker-a", 0, 60, None, ranges)
    assert [m.body for m in got] == _json_bodies(60)


def test_should_raise_a_typed_error_naming_the_queue_for_a_block_that_does_not_inflate() -> None:
    packed = _compressed(CompressionType.ZSTD)
    block_start = RecordBatch(bytes(packed)).data_start
    packed[block_start + 10] ^= 0xFF
    with pytest.raises(CorruptMessageError, match="CRC mismatch") as crc:  # (the reader's words)
        read_pulled_batches(bytes(packed), QUEUE, "broker-a", 0, 50, None)
    assert crc.value.values["batch_position"] == 0
    assert crc.value.values["response_length"] == len(packed)
    # a block that is bad under a CRC that matches (a buggy producer): refused all the same
    broken = bytearray(
        compress_batch(bytes(_batch(_json_bodies(50))), CompressionType.ZLIB, min_body_bytes=0)
    )
    start = RecordBatch(bytes(broken)).data_start + 2
    broken[start : start + 8] = b"\x00" * 8
    struct.pack_into("<I", broken, CRC_OFFSET, zlib.crc32(bytes(broken[CRC_START:])))
    with pytest.raises(CorruptMessageError, match="does not inflate"):
        read_pulled_batches(bytes(broken), QUEUE, "broker-a", 0, 50, None)


def test_should_leave_a_range_without_the_batch_magic_to_the_readers_words() -> None:
    # the compressed flag read from something that is not a batch (a damaged length before it
    # frames the answer wrong) is no compressed batch: the reader names the broken header, as
    # its reference does, rather than the inflating path a CRC
    first, second = _batch([b"a", b"b"]), _batch([b"c"], base_offset=2)
    struct.pack_into("<I", second, MAGIC_OFFSET, 0)
    second[ATTRIBUTES_OFFSET] |= COMPRESSED_FLAG
    with pytest.raises(CorruptMessageError, match="a broken batch header") as raised:
        read_pulled_batches(bytes(first + second), QUEUE, "broker-a", 0, 3, None)
    assert raised.value.values["batch_position"] == len(first)


@pytest.mark.parametrize("codec", CODECS)
def test_should_give_the_brokers_view_the_records_of_the_plain_batch(
    codec: CompressionType,
) -> None:
    plain = RecordBatch(bytes(_batch(_json_bodies(20))))
    packed = RecordBatch(bytes(_compressed(codec, 20)))
    assert packed.compressed and not plain.compressed
    assert [packed.body(i) for i in range(20)] == [plain.body(i) for i in range(20)]
    assert [packed.tag(i) for i in range(20)] == [plain.tag(i) for i in range(20)]
    assert [packed.properties_bytes(i) for i in range(20)] == [
        plain.properties_bytes(i) for i in range(20)
    ]
    assert [packed.record_size(i) for i in range(20)] == [plain.record_size(i) for i in range(20)]
    assert bytes(packed.body_data) == bytes(plain.body_data)
    assert packed.crc_ok()


def test_should_not_merge_compressed_batches() -> None:
    one, two = _compressed(CompressionType.LZ4, 10, 0), _compressed(CompressionType.LZ4, 10, 10)
    assert merge_batches([one, two]) is None
    assert merge_batches_py([one, two]) is None


def test_should_name_the_choices_of_an_unknown_compression() -> None:
    assert CompressionType.parse(" Zstd ") is CompressionType.ZSTD
    with pytest.raises(IllegalArgumentError, match="lz4, zstd, zlib"):
        CompressionType.parse("snappy")


def test_should_give_the_parts_of_a_compressed_batch_and_encode_them_back_plain() -> None:
    plain = RecordBatch(bytes(_batch(_json_bodies(30))))
    packed = RecordBatch(bytes(_compressed(CompressionType.LZ4, 30)))
    assert packed.record_parts() == plain.record_parts()
    moved = RecordBatch(bytes(packed.reencoded(b"elsewhere", *packed.record_parts())))
    assert not moved.compressed and moved.topic == "elsewhere"
    assert moved.record_parts() == plain.record_parts()
    assert moved.flags.tolist() == plain.flags.tolist()
