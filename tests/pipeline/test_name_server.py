"""Reads through a name server in front of two brokers: the route names both, every queue of
both is read, and ``assign`` takes a queue id on each broker."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue, RouteResolver
from aeromq.producer import Producer
from tests.consumer._broker_process import create_topic, start_broker, start_namesrv

pytestmark = pytest.mark.timeout(600)

_TOPIC = "SparkTwoBrokers"
_ROUTE_WAIT_S = 30.0


@pytest.fixture(scope="module")
def name_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A name server with brokers ``broker-n1`` and ``broker-n2``, each holding 2 queues of
    ``SparkTwoBrokers`` with 5 messages apiece (body ``broker/queue/n``)."""
    root: Path = tmp_path_factory.mktemp("namesrv")
    servers = [start_namesrv(timeout_s=60.0)]
    try:
        address = servers[0].grpc_address
        brokers = [start_broker(root, n, namesrv=address, timeout_s=60.0) for n in ("broker-n1", "broker-n2")]  # fmt: skip
        servers += brokers
        for broker in brokers:
            create_topic(broker, _TOPIC, 2)
        with RouteResolver(address) as routes:
            deadline = time.monotonic() + _ROUTE_WAIT_S
            while len(routes.route(_TOPIC, refresh=True).read_queues()) < 4:
                assert time.monotonic() < deadline, "the name server's route lacks a broker"
                time.sleep(0.2)
        for broker in brokers:
            with Producer("pipeline-test-producer", broker.grpc_address) as producer:
                for queue_id in range(2):
                    queue = MessageQueue(_TOPIC, broker.name, queue_id)
                    bodies = [b"%s/%d/%d" % (broker.name.encode(), queue_id, n) for n in range(5)]
                    producer.send_batch([Message(_TOPIC, b) for b in bodies], queue=queue)
        yield servers[0]
    finally:
        for server in reversed(servers):
            server.stop()


def test_should_read_every_queue_of_every_broker_through_a_name_server(
    spark: SparkSession, name_server: ServerProcess
) -> None:
    df = (
        spark.read.format("aeromq")
        .option("nameServer", name_server.grpc_address)
        .option("topic", _TOPIC)
        .load()
    )
    bodies = sorted(bytes(r.body) for r in df.select("body").collect())
    assert bodies == sorted(
        b"%s/%d/%d" % (b, q, n)
        for b in (b"broker-n1", b"broker-n2")
        for q in range(2)
        for n in range(5)
    )


def test_should_assign_a_queue_id_on_each_broker(
    spark: SparkSession, name_server: ServerProcess
) -> None:
    df = (
        spark.read.format("aeromq")
        .option("nameServer", name_server.grpc_address)
        .option("assign", f'{{"{_TOPIC}": [1]}}')
        .load()
    )
    rows = df.select("broker", "queueId").collect()
    assert sorted({(r.broker, r.queueId) for r in rows}) == [("broker-n1", 1), ("broker-n2", 1)]
    assert len(rows) == 10
