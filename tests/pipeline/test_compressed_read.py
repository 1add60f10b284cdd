"""Spark reads compressed batches (a producer with ``compression``) as it reads plain ones:
through the transport and in place from the broker's files (local reads), the same rows."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue
from aeromq.producer import Producer, ProducerConfig

pytestmark = pytest.mark.timeout(600)


def test_should_read_zstd_and_lz4_batches_through_the_transport_and_in_place(
    spark: SparkSession, broker: ServerProcess, topic: str
) -> None:
    sent: dict[tuple[int, int], bytes] = {}
    for queue_id, codec in enumerate(("zstd", "lz4", "zlib", "zstd")):
        config = ProducerConfig(compression=codec, compress_over_bytes=1024)
        bodies = [
            json.dumps({"queue": queue_id, "n": n, "payload": "x" * (n % 40)}).encode()
            for n in range(120)
        ]
        with Producer(f"spark-zip-{codec}", broker.grpc_address, config=config) as producer:
            queue = MessageQueue(topic, broker.name, queue_id)
            for start in range(0, 120, 40):
                producer.send_batch(
                    [Message(topic, b) for b in bodies[start : start + 40]], queue=queue
                )
        sent.update({(queue_id, n): body for n, body in enumerate(bodies)})

    def read(**options: str) -> dict[tuple[int, int], bytes]:
        df = (
            spark.read.format("aeromq")
            .option("endpoints", broker.grpc_address)
            .option("topic", topic)
            .options(**options)
            .load()
        )
        return {(r.queueId, r.queueOffset): bytes(r.body) for r in df.collect()}

    assert read() == sent
    assert read(localReads="false") == sent
