"""Two independent brokers of the same name (``broker-a``, every deployment's first broker) at
two addresses, used by one process and one Spark session: each is read and written as itself.
The clients key their caches by the broker's origin and name (``client.route.BrokerKey``), and
each broker reports the id its store keeps (``BrokerRoute.broker_id``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue, RouteResolver
from aeromq.client.route import BrokerKey, origin_of
from aeromq.pipeline._queue_reader import read_queue_range
from aeromq.pipeline._reader_sessions import reader_sessions
from aeromq.producer import Producer
from tests.consumer._broker_process import create_topic, start_broker
from tests.pipeline._helpers import consume_all

pytestmark = pytest.mark.timeout(600)

_TOPIC = "SameNameTopic"


@pytest.fixture(scope="module")
def twin(
    tmp_path_factory: pytest.TempPathFactory, broker: ServerProcess
) -> Iterator[ServerProcess]:
    """A second, independent broker named as the session's ``broker`` (its own store and
    address), both holding ``_TOPIC`` with different messages."""
    process = start_broker(tmp_path_factory.mktemp("twin-broker"), broker.name, timeout_s=60.0)
    try:
        for server, count in ((broker, 5), (process, 12)):
            create_topic(server, _TOPIC, 2)
            _send(server, count)
        yield process
    finally:
        process.stop()


def _label(server: ServerProcess) -> bytes:
    return server.grpc_address.encode()


def _send(server: ServerProcess, count: int) -> None:
    """``count`` messages to queue 0 of ``_TOPIC``, each body naming ``server``'s address."""
    with Producer("identity-test", server.grpc_address) as producer:
        producer.send_batch(
            [Message(_TOPIC, b"%s/%d" % (_label(server), n)) for n in range(count)],
            queue=MessageQueue(_TOPIC, server.name, 0),
        )


def _bodies(server: ServerProcess, count: int) -> list[bytes]:
    return [b"%s/%d" % (_label(server), n) for n in range(count)]


def test_should_report_a_different_broker_id_and_key_for_each_broker(
    broker: ServerProcess, twin: ServerProcess
) -> None:
    routes = []
    for server in (broker, twin):
        with RouteResolver(server.grpc_address) as resolver:
            routes.append(resolver.route(_TOPIC).broker(server.name))
    first, second = routes
    assert first.broker_name == second.broker_name
    assert len(first.broker_id) == len(second.broker_id) == 32
    assert first.broker_id != second.broker_id
    assert first.key != second.key
    assert first.key == BrokerKey(origin_of(broker.grpc_address), broker.name)


def test_should_read_each_broker_of_the_same_name_in_one_process(
    broker: ServerProcess, twin: ServerProcess
) -> None:
    reads = {
        server.grpc_address: read_queue_range(
            (server.grpc_address,), _TOPIC, server.name, 0, 0, count, read_timeout_ms=10_000
        )
        for server, count in ((broker, 5), (twin, 12))
    }
    got: dict[str, list[bytes]] = {address: [] for address in reads}
    while reads:  # one record batch of each read in turn: both sessions in use at once
        for address, read in list(reads.items()):
            batch = next(read, None)
            if batch is None:
                del reads[address]
            else:
                got[address] += batch.column("body").to_pylist()
    assert got[broker.grpc_address] == _bodies(broker, 5)
    assert got[twin.grpc_address] == _bodies(twin, 12)
    pool = reader_sessions()
    first = pool.open_session(BrokerKey(origin_of(broker.grpc_address), broker.name))
    second = pool.open_session(BrokerKey(origin_of(twin.grpc_address), twin.name))
    assert first is not None and second is not None and first is not second


def test_should_read_and_write_each_broker_of_the_same_name_in_one_spark_session(
    spark: SparkSession, broker: ServerProcess, twin: ServerProcess
) -> None:
    for server, count in ((twin, 12), (broker, 5)):
        rows = (
            spark.read.format("aeromq")
            .option("endpoints", server.grpc_address)
            .option("topic", _TOPIC)
            .option("readTimeoutMs", "10000")
            .load()
            .select("body")
            .collect()
        )
        assert sorted(r.body for r in rows) == sorted(_bodies(server, count))
    for server in (twin,):
        sink = f"SameNameSink{server.grpc_address.rpartition(':')[2]}"
        create_topic(server, sink, 2)
        (
            spark.createDataFrame(
                [(b"%s/out%d" % (_label(server), n),) for n in range(7)], "body binary"
            )
            .write.format("aeromq")
            .option("endpoints", server.grpc_address)
            .option("topic", sink)
            .mode("append")
            .save()
        )
        stored = consume_all(server, sink, 7)
        assert sorted(m.body for m in stored) == [
            b"%s/out%d" % (_label(server), n) for n in range(7)
        ]
