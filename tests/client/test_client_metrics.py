"""``Producer.metrics()`` and ``DefaultLitePullConsumer.metrics()`` against a real broker
process, and the same figures scraped from each client's own ``/metrics``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import wait

import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue, TopicNotFoundError
from aeromq.client.grpc_client import GrpcClient
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer
from tests._servers import serving
from tests.broker.observability._scrape import scrape, start_observed_broker, value

TOPIC = "MeteredTopic"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with serving(
        start_observed_broker(tmp_path_factory.mktemp("client-metrics")), {TOPIC: 4}
    ) as process:
        yield process


def test_should_count_a_producers_sends_messages_and_errors(broker: ServerProcess) -> None:
    with Producer("metered-producer", broker.grpc_address) as producer:
        assert producer.metrics().sends == 0
        for index in range(3):
            producer.send(Message(TOPIC, b"sync %d" % index))
        producer.send_batch(
            [Message(TOPIC, b"batch %d" % i) for i in range(5)],
            queue=MessageQueue(TOPIC, "broker-a", 1),
        )
        futures = [producer.send_async(Message(TOPIC, b"async %d" % i)) for i in range(4)]
        done, _ = wait(futures, timeout=30)
        assert len(done) == 4 and all(f.result().ok for f in futures)
        with pytest.raises(TopicNotFoundError):
            producer.send(Message("NoSuchMeteredTopic", b"lost"))
        producer.send_oneway(Message(TOPIC, b"oneway"))
        metrics = producer.metrics()
        assert (metrics.sends, metrics.messages, metrics.errors) == (8, 12, 1)
        assert (metrics.retries, metrics.oneway_sends) == (0, 1)
        assert metrics.send_latency.count == 8
        assert 0 < metrics.send_latency.sum_s < 8 * 30
        with producer.serve_metrics() as server:
            samples = scrape(server.url)
        labels = {"group": "metered-producer", "client_id": producer.client_id}
        assert value(samples, "aeromq_producer_sends_total", **labels) == 8
        assert value(samples, "aeromq_producer_messages_total", **labels) == 12
        assert value(samples, "aeromq_producer_errors_total", **labels) == 1
        assert value(samples, "aeromq_producer_send_latency_seconds_count", **labels) == 8


def test_should_count_a_consumers_pulls_polls_and_rebalances(broker: ServerProcess) -> None:
    topic = "MeteredConsumed"
    with GrpcClient(broker.grpc_address, timeout_s=30.0) as admin:
        admin.create_topic(topic, read_queue_nums=4, write_queue_nums=4)
    with Producer("metered-feeder", broker.grpc_address) as producer:
        for queue_id in range(4):
            producer.send_batch(
                [Message(topic, b"m%d-%d" % (queue_id, i)) for i in range(5)],
                queue=MessageQueue(topic, "broker-a", queue_id),
            )
    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group="metered-group",
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            broker_suspend_max_time_ms=500,
        )
    )
    consumer.subscribe(topic)
    consumer.start()
    try:
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 20 and time.monotonic() < deadline:
            got += consumer.poll(500)
        assert len(got) == 20
        metrics = consumer.metrics()
        assert metrics.messages_polled == 20 and metrics.messages_pulled == 20
        assert metrics.cached_messages == 0 and metrics.cached_bytes == 0
        assert metrics.assigned_queues == 4 and metrics.rebalances >= 1
        assert metrics.pulls >= 4 and metrics.pull_errors == 0
        # every answered pull is timed; the ones still held by the broker are not yet
        assert 4 <= metrics.pull_latency.count <= metrics.pulls
        with consumer.serve_metrics() as server:
            samples = scrape(server.url)
        labels = {"group": "metered-group", "client_id": consumer.client_id}
        assert value(samples, "aeromq_consumer_messages_polled_total", **labels) == 20
        assert value(samples, "aeromq_consumer_assigned_queues", **labels) == 4
        assert value(samples, "aeromq_consumer_pull_latency_seconds_count", **labels) >= 4
    finally:
        consumer.shutdown()
