"""Spark's own servers started from the pip package, for the connector's tests and ``bench
spark``: a standalone cluster (a master in the caller's namespace and workers each on a test
host of its own: a network namespace of ``bench/netns.py`` and a UTS namespace with the
host's name, so their executors reach the brokers over the network, UDP and gRPC, only, never
through shared memory or the broker's files: their host name is not the broker's) and a Spark
Connect server (its driver in local mode or on such a cluster).

``SPARK_HOME`` is the ``pyspark`` package; the JVMs keep no perf data files
(``-XX:-UsePerfData``: a killed JVM leaves none behind), and every process is stopped (SIGTERM,
then SIGKILL, :meth:`SparkDaemons.stop`) and its files removed with the caller's directory.

Callers: ``tests/pipeline/test_standalone_cluster.py``, ``tests/pipeline/test_spark_connect.py``
and ``bench/_spark_cluster_read.py``; a public module of
``bench`` since the tests import it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyspark

from bench.netns import HOST, NetLab

__all__ = [
    "SPARK_HOME",
    "ConnectServer",
    "SparkDaemons",
    "StandaloneCluster",
    "connect_server",
    "spark_environment",
    "standalone_cluster",
]

SPARK_HOME = os.path.dirname(pyspark.__file__)
_STOP_TIMEOUT_S = 15.0
_START_TIMEOUT_S = 120.0
_CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_CONNECT_READY = "Spark Connect server started at"


def _free_port(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def spark_environment(local_ip: str, local_dir: Path) -> dict[str, str]:
    """The environment of a Spark JVM bound to ``local_ip``, its scratch files in
    ``local_dir``."""
    return {
        **os.environ,
        "SPARK_HOME": SPARK_HOME,
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_LOCAL_IP": local_ip,
        "SPARK_LOCAL_DIRS": str(local_dir),
        "JAVA_TOOL_OPTIONS": f"-XX:-UsePerfData -Djava.io.tmpdir={local_dir}",
        "PYSPARK_PYTHON": sys.executable,
    }


class SparkDaemons:
    """Spark processes, each in a process group of its own with its output in a log file:
    started by :meth:`spawn`, awaited by :meth:`wait_for`, all stopped by :meth:`stop`."""

    def __init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []

    def spawn(self, command: list[str], environment: dict[str, str], log: Path) -> None:
        """Start ``command`` in its own session, stdout and stderr to ``log``."""
        with open(log, "wb") as output:
            self.processes.append(
                subprocess.Popen(
                    command,
                    env=environment,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def wait_for(self, log: Path, line: str, count: int = 1) -> None:
        """Until ``log`` holds ``line`` ``count`` times; raises AssertionError (with the log's
        end) when a process ended first or after :data:`_START_TIMEOUT_S`."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if text.count(line) >= count:
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise AssertionError(f"a Spark daemon ended: {process.args!r}: {text[-2000:]}")
            time.sleep(0.2)
        raise AssertionError(f"no {line!r} x{count} in {log}: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what is left."""
        for process in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        for process in self.processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(_STOP_TIMEOUT_S)
        self.processes.clear()


class StandaloneCluster(SparkDaemons):
    """A master on the lab's host address and one worker (one core) on each of ``nodes``."""

    def __init__(self, lab: NetLab, nodes: Sequence[str], root: Path) -> None:
        super().__init__()
        self.lab = lab
        self.host = lab.address(HOST)
        self.port = _free_port(self.host)
        self.url = f"spark://{self.host}:{self.port}"
        self._nodes = tuple(nodes)
        self._root = root

    def start(self) -> None:
        """Start the master and the workers; return once every worker registered."""
        self.launch()
        self.wait_registered()

    def launch(self) -> None:
        """Start the master and the workers, not waiting for them (:meth:`wait_registered`)."""
        scratch = self._root / "master"
        scratch.mkdir(parents=True)
        self.spawn(
            [f"{SPARK_HOME}/bin/spark-class", "org.apache.spark.deploy.master.Master",
             "--host", self.host, "--port", str(self.port),
             "--webui-port", str(_free_port(self.host))],
            spark_environment(self.host, scratch), scratch / "master.log",
        )  # fmt: skip
        for node in self._nodes:
            address = self.lab.address(node)
            scratch = self._root / node
            scratch.mkdir()
            worker = (
                f"hostname {node} && exec {SPARK_HOME}/bin/spark-class "
                f"org.apache.spark.deploy.worker.Worker --host {address} --cores 1 "
                f"--memory 1g --work-dir {scratch} --webui-port 0 {self.url}"
            )
            with self.lab.inside(node):  # the worker and its executors live there
                self.spawn(["unshare", "--uts", "sh", "-c", worker],
                           spark_environment(address, scratch), scratch / "worker.log")  # fmt: skip

    def wait_registered(self) -> None:
        """Until every worker registered with the master (see :meth:`SparkDaemons.wait_for`)."""
        self.wait_for(self._root / "master" / "master.log", "Registering worker", len(self._nodes))


class ConnectServer(SparkDaemons):
    """A Spark Connect server on ``host`` (a free port), its driver on ``master``
    (``local[2]``, or a standalone cluster's URL with ``host`` an address its workers reach);
    clients reach it at :attr:`url`. ``config`` are more ``--conf`` settings of its driver."""

    def __init__(
        self, host: str, master: str, root: Path, config: dict[str, str] | None = None
    ) -> None:
        super().__init__()
        self.host = host
        self.port = _free_port(host)
        self.url = f"sc://{host}:{self.port}"
        self._master = master
        self._root = root
        self._config = {
            "spark.connect.grpc.binding.address": host,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": host,
            "spark.driver.bindAddress": host,
            "spark.ui.enabled": "false",
            "spark.pyspark.python": sys.executable,
            "spark.executorEnv.PYTHONPATH": os.environ.get("PYTHONPATH", ""),
            **(config or {}),
        }

    def start(self) -> None:
        """Start the server; return once it accepts clients."""
        self._root.mkdir(parents=True, exist_ok=True)
        settings = [
            arg for key, value in self._config.items() for arg in ("--conf", f"{key}={value}")
        ]
        self.spawn(
            [f"{SPARK_HOME}/bin/spark-submit", "--class", _CONNECT_CLASS,
             "--master", self._master, "--name", "aeromq-connect", *settings, "spark-internal"],
            spark_environment(self.host, self._root), self._root / "connect.log",
        )  # fmt: skip
        self.wait_for(self._root / "connect.log", _CONNECT_READY)


@contextlib.contextmanager
def standalone_cluster(
    lab: NetLab, nodes: Sequence[str], root: Path
) -> Iterator[StandaloneCluster]:
    """A started :class:`StandaloneCluster`, stopped at the end whatever happened."""
    cluster = StandaloneCluster(lab, nodes, root)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def connect_server(
    host: str, master: str, root: Path, config: dict[str, str] | None = None
) -> Iterator[ConnectServer]:
    """A started :class:`ConnectServer`, stopped at the end whatever happened."""
    server = ConnectServer(host, master, root, config)
    try:
        server.start()
        yield server
    finally:
        server.stop()
