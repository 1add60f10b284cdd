"""The connector on a real Spark standalone cluster: a master and two workers started from the
pip package, each worker on a test host of its own (``bench/spark_cluster.py``: a network
namespace and a host name), two brokers behind a name server on the test's host. Executors
reach the brokers over UDP only: the batch read, the streaming read with ``maxOffsetsPerTrigger`` and the sink
give exactly the rows produced, and no pull was answered with local ranges (the brokers'
``aeromq_pulls_local_total``). The driver is a process of its own (``_cluster_driver.py``):
this process's Spark is ``local[2]``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_namesrv_process
from bench.netns import HOST, NetLab, netlab, netns_unavailable
from bench.spark_cluster import StandaloneCluster, spark_environment, standalone_cluster
from tests.broker.observability._scrape import scrape, value
from tests.consumer._broker_process import create_topic, start_broker
from tests.pipeline._cluster_driver import PER_TRIGGER
from tests.pipeline._helpers import consume_all, produce

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


def test_should_read_stream_and_write_over_udp_on_a_standalone_cluster(
    deployment: Deployment, tmp_path: Path
) -> None:
    source, sink = "ClusterSource", "ClusterSink"
    sent = []
    for index, broker in enumerate(deployment.brokers):
        create_topic(broker, source, 4)
        create_topic(broker, sink, 2)
        sent += produce(broker, source, _PER_QUEUE, first=index * 1000)  # bodies apart
    local_before = _local_pulls(deployment.brokers)
    host = deployment.cluster.host
    (tmp_path / "driver").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "tests.pipeline._cluster_driver", deployment.cluster.url, host,
         deployment.namesrv.grpc_address, source, sink, str(tmp_path / "checkpoint")],
        env=spark_environment(host, tmp_path / "driver"), capture_output=True, text=True,
        timeout=_DRIVER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["hosts"] == list(_WORKERS)  # the executors ran on the workers' hosts
    expected = sorted(m.body for m in sent)
    assert sorted(bytes.fromhex(row[2]) for row in result["batch"]) == expected
    assert result["micro_batches"] >= len(sent) // PER_TRIGGER
    stored = [m.body for b in deployment.brokers for m in consume_all(b, sink, len(sent))]
    assert sorted(stored) == expected  # the sink: every row once
    assert (
        _local_pulls(deployment.brokers) == local_before
    )  # nothing read from another host's files


def test_should_run_the_example_pipeline_on_the_cluster_with_one_command(
    deployment: Deployment, tmp_path: Path
) -> None:
    """The guide's command (``docs/spark-cluster.md``): the example on ``--master spark://``."""
    host = deployment.cluster.host
    broker = deployment.brokers[0]
    (tmp_path / "driver").mkdir()
    output = tmp_path / "windows"
    done = subprocess.run(
        [sys.executable, "-m", "aeromq.pipeline.examples.window_aggregation",
         "--endpoints", broker.grpc_address, "--seed", "300", "--output", str(output),
         "--events", "ClusterEvents", "--results", "ClusterWindows",
         "--master", deployment.cluster.url,
         "--conf", f"spark.driver.host={host}", "--conf", f"spark.driver.bindAddress={host}"],
        env=spark_environment(host, tmp_path / "driver"), capture_output=True, text=True,
        timeout=_DRIVER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "read 300 events from ClusterEvents" in done.stdout
    windows = int(done.stdout.split(" windows to ")[0].rsplit(" ", 1)[1])
    assert len(consume_all(broker, "ClusterWindows", windows)) == windows
