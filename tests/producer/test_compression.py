"""A compressing producer (``ProducerConfig.compression``) through a broker in this process:
column sends, merged async sends and sync batches are stored compressed and read back as sent;
bad settings name the choices."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable

import pyarrow as pa
import pytest

from aeromq.client import IllegalArgumentError, Message
from aeromq.common.record_batch import ATTRIBUTES_OFFSET, CompressionType, compression_type
from aeromq.producer import Producer, ProducerConfig

from .conftest import Puller
from .test_columns import by_row, read_all, topic

__all__ = ["topic"]  # the fixture, imported

BODIES = [
    json.dumps({"order": i, "status": "PAID", "lines": [i, i + 1]}).encode() for i in range(300)
]


def _codec(stored: bytes) -> int:
    """The codec of the first batch of a pull answer (0: plain)."""
    return compression_type(struct.unpack_from("<H", stored, ATTRIBUTES_OFFSET)[0])


def _stored_codecs(puller: Puller, topic: str) -> set[int]:
    """The codecs of the stored batches of the topic's 4 queues (one pull from 0 each)."""
    codecs = set()
    for queue_id in range(4):
        stored = memoryview(puller.pull(topic, queue_id).batches)
        while stored:
            codecs.add(_codec(stored))
            stored = stored[struct.unpack_from("<i", stored)[0] :]
    return codecs


def test_should_store_column_sends_compressed_and_read_them_back(
    make_producer: Callable[..., Producer], puller: Puller, topic: str
) -> None:
    producer = make_producer(config=ProducerConfig(compression="lz4"))
    results = producer.send_columns(topic, pa.array(BODIES, pa.binary()))
    assert [m.body for m in by_row(puller, topic, results)] == BODIES
    assert _stored_codecs(puller, topic) == {CompressionType.LZ4}


def test_should_compress_async_sends_once_merged_and_sync_batches(
    make_producer: Callable[..., Producer], puller: Puller, topic: str
) -> None:
    producer = make_producer(config=ProducerConfig(compression="zstd", compress_over_bytes=1))
    futures = [producer.send_async(Message(topic, body)) for body in BODIES[:100]]
    for future in futures:
        future.result(10)
    results = producer.send_batch([Message(topic, body) for body in BODIES[100:]])
    stored = [m.body for messages in read_all(puller, topic).values() for m in messages]
    assert sorted(stored) == sorted(BODIES)
    first = results[0]
    batch = puller.pull(topic, first.message_queue.queue_id, first.queue_offset).batches
    assert _codec(batch) == CompressionType.ZSTD
    # async sends merged while one request was in flight: compressed (one alone, of one small
    # body, is left plain: compressed it would not be smaller)
    assert CompressionType.ZSTD in _stored_codecs(puller, topic)


def test_should_refuse_an_unknown_codec_and_a_level_that_is_not_an_int() -> None:
    with pytest.raises(IllegalArgumentError, match="snappy"):
        ProducerConfig(compression="snappy")
    with pytest.raises(IllegalArgumentError, match="compression_level"):
        ProducerConfig(compression="zlib", compression_level=True)
