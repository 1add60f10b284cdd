"""A Spark standalone cluster for the connector's tests, started from the pip package: a master
in the test's namespace and workers each on a test host of its own (a network namespace of
``tests.faults.netns`` and a UTS namespace with the host's name), so their executors reach the
brokers over the network (UDP and gRPC) only, never through shared memory or the broker's
files: their host name is not the broker's.

``SPARK_HOME`` is the ``pyspark`` package; the JVMs keep no perf data files
(``-XX:-UsePerfData``: a killed JVM leaves none behind), and every process is stopped (SIGTERM,
then SIGKILL) and its files removed with the temporary directory."""

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

from tests.faults.netns import HOST, NetLab

SPARK_HOME = os.path.dirname(pyspark.__file__)
_STOP_TIMEOUT_S = 15.0
_START_TIMEOUT_S = 120.0


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


class StandaloneCluster:
    """A master on the lab's host address and one worker (one core) on each of ``nodes``."""

    def __init__(self, lab: NetLab, nodes: Sequence[str], root: Path) -> None:
        self.lab = lab
        self.host = lab.address(HOST)
        self.port = _free_port(self.host)
        self.url = f"spark://{self.host}:{self.port}"
        self._nodes = tuple(nodes)
        self._root = root
        self._processes: list[subprocess.Popen[bytes]] = []

    def start(self) -> None:
        """Start the master and the workers; return once every worker registered."""
        scratch = self._root / "master"
        scratch.mkdir(parents=True)
        self._spawn(
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
                self._spawn(["unshare", "--uts", "sh", "-c", worker],
                            spark_environment(address, scratch), scratch / "worker.log")  # fmt: skip
        self._wait_registered()

    def _spawn(self, command: list[str], environment: dict[str, str], log: Path) -> None:
        with open(log, "wb") as output:
            self._processes.append(
                subprocess.Popen(
                    command,
                    env=environment,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def _wait_registered(self) -> None:
        log = self._root / "master" / "master.log"
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            if text.count("Registering worker") >= len(self._nodes):
                return
            for process in self._processes:
                if process.poll() is not None:
                    raise AssertionError(f"a Spark daemon ended: {process.args}: {text[-2000:]}")
            time.sleep(0.2)
        raise AssertionError(f"the workers did not register: {log.read_text()[-2000:]}")

    def stop(self) -> None:
        """SIGTERM every process group, then SIGKILL what is left."""
        for process in self._processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_TIMEOUT_S
        for process in self._processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(_STOP_TIMEOUT_S)
        self._processes.clear()


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
