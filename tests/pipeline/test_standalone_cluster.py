"""The connector on a real Spark standalone cluster: a master and two workers started from the
pip package, each worker on a test host of its own (``bench/spark_cluster.py``: a network
namespace and a host name), two brokers behind a name server on the test's host. Executors
reach the brokers over UDP only: the batch read, the streaming read with ``maxOffsetsPerTrigger`` and the sink
give exactly the rows produced, and no pull was answered with local ranges (the brokers'
``aeromq_pulls_local_total``); the same through a Spark Connect server whose driver runs on the
cluster (its client's Python: ``_connect.py``), and the example pipeline with one command, on
the cluster and through Connect. The driver is a process of its own (``_cluster_driver.py``):
this process's Spark is ``local[2]``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_namesrv_process
from bench.netns import HOST, NetLab, netlab, netns_unavailable
from bench.spark_cluster import (
    StandaloneCluster,
    connect_server,
    spark_environment,
    standalone_cluster,
)
from tests.broker.observability._scrape import scrape, value
from tests.consumer._broker_process import start_broker
from tests.pipeline._cluster_driver import PER_TRIGGER
from tests.pipeline._connect import connect_python, run_driver
from tests.pipeline._helpers import consume_all, source_and_sink

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.long,  # a master, two workers, two brokers, a name server: minutes (-m long)
    pytest.mark.skipif(netns_unavailable() is not None, reason=str(netns_unavailable())),
]

_WORKERS = ("w1", "w2")
_PER_QUEUE = 100
_DRIVER_TIMEOUT_S = 600


@dataclass
class Deployment:
    lab: NetLab
    namesrv: ServerProcess
    brokers: list[ServerProcess]
    cluster: StandaloneCluster


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("standalone")
    with netlab(_WORKERS) as lab:
        host = lab.address(HOST)
        os.environ["AEROMQ_NAMESRV_HOST"] = host  # the name server's gRPC on the lab address
        try:
            namesrv = start_namesrv_process(60.0)
        finally:
            del os.environ["AEROMQ_NAMESRV_HOST"]
        brokers: list[ServerProcess] = []
        try:
            for name in ("broker-a", "broker-b"):
                brokers.append(start_broker(
                    root, name, "--grpc-host", host, "--ingress-udp-endpoint", f"{host}:0",
                    namesrv=namesrv.grpc_address, timeout_s=60.0,
                ))  # fmt: skip
            with standalone_cluster(lab, _WORKERS, root / "spark") as cluster:
                yield Deployment(lab, namesrv, brokers, cluster)
        finally:
            for broker in brokers:
                broker.stop()
            namesrv.stop()


def _local_pulls(brokers: list[ServerProcess]) -> float:
    return sum(value(scrape(b.ready["metrics"]), "aeromq_pulls_local_total") for b in brokers)


def _check_a_pipeline(
    deployment: Deployment, tmp_path: Path, master: str, name: str, python: str = sys.executable
) -> None:
    """Run ``_cluster_driver.py`` on ``master`` over topics ``<name>Source``/``Sink`` of both
    brokers; check its rows, hosts and micro-batches, the sink's topic and the local pulls."""
    source, sink = f"{name}Source", f"{name}Sink"
    sent = []
    for index, broker in enumerate(deployment.brokers):  # bodies apart: first=index * 1000
        sent += source_and_sink(broker, source, sink, _PER_QUEUE, 2, first=index * 1000)
    local_before = _local_pulls(deployment.brokers)
    host = deployment.cluster.host
    (tmp_path / "driver").mkdir()
    result = run_driver(
        master, host, deployment.namesrv.grpc_address, source, sink, tmp_path,
        spark_environment(host, tmp_path / "driver"), python,
    )  # fmt: skip
    assert result["hosts"] == list(_WORKERS)  # the executors ran on the workers' hosts
    expected = sorted(m.body for m in sent)
    assert sorted(bytes.fromhex(row[2]) for row in result["batch"]) == expected
    assert result["micro_batches"] >= len(sent) // PER_TRIGGER
    stored = [m.body for b in deployment.brokers for m in consume_all(b, sink, len(sent))]
    assert sorted(stored) == expected  # the sink: every row once
    assert (
        _local_pulls(deployment.brokers) == local_before
    )  # nothing read from another host's files


def test_should_read_stream_and_write_over_udp_on_a_standalone_cluster(
    deployment: Deployment, tmp_path: Path
) -> None:
    _check_a_pipeline(deployment, tmp_path, deployment.cluster.url, "Cluster")


def test_should_read_stream_and_write_through_spark_connect_on_the_cluster(
    deployment: Deployment, tmp_path: Path
) -> None:
    """A Connect server whose driver runs on the cluster: the same pipeline from its client,
    then the example pipeline with one command (``docs/spark-cluster.md``)."""
    python, why_not = connect_python()
    if python is None:
        pytest.skip(why_not)
    host = deployment.cluster.host
    config = {"spark.executor.memory": "512m", "spark.cores.max": "2"}
    with connect_server(host, deployment.cluster.url, tmp_path / "connect", config) as server:
        _check_a_pipeline(deployment, tmp_path, server.url, "Connect", python)
        _check_the_example(deployment, tmp_path, ["--master", server.url], "Connect", python)


def test_should_run_the_example_pipeline_on_the_cluster_with_one_command(
    deployment: Deployment, tmp_path: Path
) -> None:
    """The guide's command (``docs/spark-cluster.md``): the example on ``--master spark://``."""
    host = deployment.cluster.host
    arguments = ["--master", deployment.cluster.url,
                 "--conf", f"spark.driver.host={host}", "--conf", f"spark.driver.bindAddress={host}"]  # fmt: skip
    _check_the_example(deployment, tmp_path, arguments, "Cluster", sys.executable)


def _check_the_example(
    deployment: Deployment, tmp_path: Path, arguments: list[str], name: str, python: str
) -> None:
    """Run the example with ``arguments`` against the first broker: its events read, its
    windows sent back to ``<name>Windows``."""
    host = deployment.cluster.host
    broker = deployment.brokers[0]
    (tmp_path / "example").mkdir()
    done = subprocess.run(
        [python, "-m", "aeromq.pipeline.examples.window_aggregation",
         "--endpoints", broker.grpc_address, "--seed", "300",
         "--output", str(tmp_path / "windows"),
         "--events", f"{name}Events", "--results", f"{name}Windows", *arguments],
        env=spark_environment(host, tmp_path / "example"), capture_output=True, text=True,
        timeout=_DRIVER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert f"read 300 events from {name}Events" in done.stdout
    windows = int(done.stdout.split(" windows to ")[0].rsplit(" ", 1)[1])
    assert len(consume_all(broker, f"{name}Windows", windows)) == windows
