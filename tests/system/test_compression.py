"""Compressed batches end to end, through a broker process: a producer compressing with each
codec stores JSON-like bodies in a fraction of the commit log the same messages take plain; a
lite pull consumer (tag-filtered too) reads back exactly what was sent; the broker's own reads
of records (a query by key, by message id) inflate what they serve; and the broker kept the
batches as they came (its log grew by the compressed size)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import Message, MessageQueue
from aeromq.client.grpc_client import GrpcClient
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer, ProducerConfig
from tests._servers import serving
from tests.system.conftest import ADMIN_TIMEOUT_S

BROKER = "broker-zip"
COUNT = 600
BATCH = 100


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path_factory.mktemp("zip") / "data",
        BROKER,
        ["--ingress-udp-endpoint", "none", "--commit-log-segment-bytes", "16MiB"],
    )
    with serving(process, dict.fromkeys(("plain", "lz4", "zstd", "zlib"), 1), clean_exit=True):
        yield process


def _messages(topic: str) -> list[Message]:
    return [
        Message(
            topic,
            json.dumps(
                {"order_id": i, "customer": f"customer-{i % 53}", "status": "PAID",
                 "lines": [{"sku": f"SKU-{i % 7}", "qty": 1 + i % 3, "price": "19.90"}]}
            ).encode(),
            tags="even" if i % 2 == 0 else "odd",
            keys=[f"order-{i}"],
        )
        for i in range(COUNT)
    ]  # fmt: skip


def _log_end(admin: GrpcClient) -> int:
    return admin.broker_stats().commit_log_max_offset


def _send(broker: ServerProcess, topic: str, compression: str | None) -> list[str]:
    config = ProducerConfig(compression=compression)
    ids = []
    with Producer(f"zip-{topic}", broker.grpc_address, config=config) as producer:
        messages = _messages(topic)
        for start in range(0, COUNT, BATCH):
            results = producer.send_batch(messages[start : start + BATCH])
            ids += [result.offset_msg_id for result in results]
    return ids


def _consume(broker: ServerProcess, topic: str, tags: str) -> list[bytes]:
    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=f"zip-{topic}-{'all' if tags == '*' else tags}",
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        )
    )
    consumer.subscribe(topic, tags)
    consumer.start()
    bodies: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        wanted = COUNT if tags == "*" else COUNT // 2
        while len(bodies) < wanted and time.monotonic() < deadline:
            bodies += [message.body for message in consumer.poll(timeout_ms=500)]
    finally:
        consumer.shutdown()
    return bodies


@pytest.mark.parametrize("codec", ["lz4", "zstd", "zlib"])
def test_should_store_a_fraction_of_the_bytes_and_give_back_every_body(
    broker: ServerProcess, codec: str
) -> None:
    with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
        before = _log_end(admin)
        _send(broker, "plain", None)
        plain_bytes = _log_end(admin) - before
        before = _log_end(admin)
        ids = _send(broker, codec, codec)
        packed_bytes = _log_end(admin) - before
        print(f"{codec}: {packed_bytes} bytes stored against {plain_bytes} plain")
        assert packed_bytes < 0.7 * plain_bytes, (packed_bytes, plain_bytes)  # keys stay plain

        sent = [message.body for message in _messages(codec)]
        assert _consume(broker, codec, "*") == sent
        assert _consume(broker, codec, "odd") == sent[1::2]  # the broker filtered the tags

        by_key = admin.query_message(topic=codec, key="order-321")
        assert [stored.body for stored in by_key] == [sent[321]]
        by_id = admin.query_message(ids[77])
        assert by_id[0].body == sent[77] and by_id[0].queue_offset == 77
        assert admin.max_offset(codec, 0) == COUNT
    assert MessageQueue(codec, BROKER, 0).topic == codec
