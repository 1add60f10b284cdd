"""``bench spark``'s batch read on a Spark standalone cluster: the case
``aeromq:batch-read:cluster`` beside ``local[2]``'s and the baseline's, in the same run.

Where network namespaces can be made (root, ``ip``), :func:`cluster_lab` makes two test hosts
(``bench/netns.py``) before the suite's broker starts, and :func:`start_bench_broker` starts
that broker on the lab's host address with a UDP ingress there, so the ``local[2]`` cases read
it as before (same host: local reads) and the cluster's executors reach it over UDP and gRPC
only. :func:`cluster_case` then starts a master and two workers of one core each
(``bench/spark_cluster.py``, each worker on a test host of its own) and a driver process of its
own (this module run as ``python -m bench._spark_cluster_read``: one SparkContext per process,
and the suite's own is ``local[2]``). The driver reads the whole topic once untimed (the
executors' Python workers started, their sessions open), says so, and times one more read
summing the body lengths, as the local cases do; ``cpu_us_per_row`` counts the CPU of the
cluster's JVMs with their Python workers, the driver's and the broker's during that read. The
cluster is stopped right after (its JVMs hold memory the stream and write cases want).

Without namespaces the case is one ``skipped`` row with the reason.

Caller: ``bench/suites/spark.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aeromq.broker.testing import ServerProcess, start_broker_process
from bench._harness import Result
from bench._spark_measures import rate_row, tree_cpu_s
from bench.netns import HOST, NetLab, netlab, netns_unavailable

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from bench.spark_cluster import StandaloneCluster

__all__ = ["CLUSTER_CASE", "BenchCluster", "bench_cluster", "cluster_case", "start_bench_broker"]

CLUSTER_CASE = "aeromq:batch-read:cluster"
_WORKERS = ("w1", "w2")
_WARM = "warm"
_DRIVER_START_TIMEOUT_S = 300.0


@dataclass
class BenchCluster:
    """The cluster's test hosts and its master and workers (launched, maybe not registered)."""

    lab: NetLab
    cluster: StandaloneCluster


@contextlib.contextmanager
def bench_cluster(root: Path) -> Iterator[BenchCluster | None]:
    """The cluster's test hosts, its master and workers launched (they register while the
    topic fills and ``local[2]`` reads, idle afterwards), all stopped and removed at the end;
    None where namespaces cannot be made."""
    if netns_unavailable() is not None:
        yield None
        return
    from bench.spark_cluster import StandaloneCluster

    with netlab(_WORKERS) as lab:
        cluster = StandaloneCluster(lab, _WORKERS, root / "spark-cluster")
        try:
            cluster.launch()
            yield BenchCluster(lab, cluster)
        finally:
            cluster.stop()


def start_bench_broker(
    root: Path, bench: BenchCluster | None, start: Callable[[Path], ServerProcess]
) -> ServerProcess:
    """``start(root)`` without a cluster; with one, the same broker on its lab's host address
    with a UDP ingress there (its other options those of ``bench.suites.broker``)."""
    if bench is None:
        return start(root)
    host = bench.lab.address(HOST)
    from bench.suites.broker import BROKER_ARGS

    return start_broker_process(
        root / "broker",
        extra_args=[*BROKER_ARGS, "--grpc-host", host, "--ingress-udp-endpoint", f"{host}:0"],
    )


def cluster_case(
    bench: BenchCluster | None, broker: ServerProcess, topic: str, count: int, root: Path
) -> Result:
    """The cluster's read of all ``count`` rows of ``topic`` (see module), or a skipped row;
    the cluster stopped after it."""
    if bench is None:
        return Result(f"{CLUSTER_CASE} skipped: {netns_unavailable()}")
    from bench.spark_cluster import spark_environment

    cluster = bench.cluster
    try:
        cluster.wait_registered()
        scratch = root / "spark-driver"
        scratch.mkdir()
        log = scratch / "driver.log"
        with open(log, "wb") as output, subprocess.Popen(
            [sys.executable, "-m", "bench._spark_cluster_read", cluster.url, cluster.host,
             broker.grpc_address, topic],
            env=spark_environment(cluster.host, scratch), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=output, text=True, start_new_session=True,
        ) as driver:  # fmt: skip
            try:
                return _timed_read(driver, [broker.pid, *(p.pid for p in cluster.processes)], count)
            except (RuntimeError, ValueError) as exc:
                raise RuntimeError(f"{exc}; the driver's log: {log.read_text()[-1500:]}") from exc
            finally:
                if driver.poll() is None:
                    driver.kill()
    finally:
        cluster.stop()


def _timed_read(driver: subprocess.Popen[str], pids: list[int], count: int) -> Result:
    """Wait for the driver's warm-up, then time its read with the CPU of ``pids``' trees."""
    assert driver.stdin is not None and driver.stdout is not None
    line = driver.stdout.readline().strip()  # bounded by the case's own time limit
    if line != _WARM:
        raise RuntimeError(f"the cluster's driver ended before its read: {line!r}")
    pids = [*pids, driver.pid]
    cpu = sum(tree_cpu_s(pid) for pid in pids)
    driver.stdin.write("go\n")
    driver.stdin.flush()
    measured = json.loads(driver.stdout.readline())
    cpu_s = sum(tree_cpu_s(pid) for pid in pids) - cpu
    if measured["rows"] != count:
        raise RuntimeError(f"the cluster read {measured['rows']} of {count} rows")
    row = rate_row(CLUSTER_CASE, count, measured["seconds"], cpu_s, measured["partitions"])
    row.extra["executor_hosts"] = measured["hosts"]
    return row


def _drive(master: str, host: str, endpoints: str, topic: str) -> None:
    """The driver process (see module): warm-up read, ``warm``, wait for a line, timed read,
    one JSON line ``{"rows", "seconds", "partitions", "hosts"}``."""
    import socket

    from pyspark.sql import functions as f

    from aeromq.pipeline import spark_session

    spark = spark_session(master, "aeromq-bench-spark-cluster", {
        "spark.driver.host": host, "spark.driver.bindAddress": host,
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "spark.executor.memory": "512m", "spark.cores.max": str(len(_WORKERS)),
        "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
    })  # fmt: skip
    spark.sparkContext.setLogLevel("ERROR")

    def load() -> DataFrame:
        return (
            spark.read.format("aeromq").option("endpoints", endpoints).option("topic", topic).load()
        )

    def read() -> int:
        return int(load().agg(f.count("*").alias("rows"), f.sum(f.length("body"))).collect()[0][0])

    read()
    partitions = load().rdd.getNumPartitions()
    print(_WARM, flush=True)
    sys.stdin.readline()
    began = time.monotonic()
    rows = read()
    seconds = time.monotonic() - began
    names = spark.sparkContext.parallelize(range(8), 8).map(lambda _: socket.gethostname())
    hosts = sorted(set(names.collect()))
    print(json.dumps({"rows": rows, "seconds": seconds, "partitions": partitions,
                      "hosts": hosts}), flush=True)  # fmt: skip
    spark.stop()


if __name__ == "__main__":
    _drive(*sys.argv[1:5])
