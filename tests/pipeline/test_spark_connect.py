"""The connector through Spark Connect: one Connect server for the module (driver ``local[2]``
on the loopback, ``bench/spark_cluster.py``), a client in a process of its own
(``_cluster_driver.py`` under the Python of ``_connect.py``) that registers the format over
Connect and reads and writes one real broker: the batch read gives exactly the rows produced,
the streaming read with ``maxOffsetsPerTrigger`` runs in as many micro-batches and the sink
writes every row back once. The same on a standalone cluster: ``test_standalone_cluster.py``.
Both are ``long`` (``-m long``): the client's environment is made on first use."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess
from bench.spark_cluster import ConnectServer, connect_server
from tests.pipeline._cluster_driver import PER_TRIGGER
from tests.pipeline._connect import connect_python, run_driver
from tests.pipeline._helpers import consume_all, source_and_sink

# long: the client's environment is made on first use (a minute or two of pip, _connect.py),
# then a Connect server's start and its Python workers' warm-up (about 90 s at load 7-10)
pytestmark = [pytest.mark.long, pytest.mark.timeout(1200)]

_PER_QUEUE = 150  # 600 rows: two micro-batches of PER_TRIGGER


@pytest.fixture(scope="module")
def client_python() -> str:
    python, why_not = connect_python()
    if python is None:
        pytest.skip(why_not)
    return python


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    root = tmp_path_factory.mktemp("connect")
    with connect_server("127.0.0.1", "local[2]", root) as started:
        yield started


def test_should_read_stream_and_write_through_spark_connect(
    client_python: str, server: ConnectServer, broker: ServerProcess, tmp_path: Path
) -> None:
    source, sink = "ConnectSource", "ConnectSink"
    sent = source_and_sink(broker, source, sink, _PER_QUEUE, 2)
    result = run_driver(
        server.url, "127.0.0.1", broker.grpc_address, source, sink, tmp_path, python=client_python
    )
    expected = sorted(m.body for m in sent)
    assert sorted(bytes.fromhex(row[2]) for row in result["batch"]) == expected
    assert result["hosts"] == [socket.gethostname()]  # the server's own Python workers
    assert result["micro_batches"] == len(sent) // PER_TRIGGER
    assert sorted(m.body for m in consume_all(broker, sink, len(sent))) == expected
