"""``aeromq namesrv`` in its own process: serving a registered broker's cluster until SIGTERM,
and a bad setting."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from collections.abc import Callable

from aeromq.broker.namesrv import NameServerRegistrar
from aeromq.client.grpc_client import GrpcClient
from tests.broker.control.conftest import RunningBroker


def test_should_run_aeromq_namesrv_until_sigterm(
    broker_factory: Callable[..., RunningBroker],
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "aeromq", "namesrv", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "AEROMQ_NAMESRV_BROKER_TIMEOUT_MS": "5000"},
    )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 30.0)
        assert ready, "aeromq namesrv did not report its address within 30 s"
        line = process.stdout.readline()
        match = re.match(r"aeromq namesrv listening on (\S+)", line)
        assert match, line
        address = match.group(1)
        running = broker_factory(broker_name="broker-x")
        registrar = NameServerRegistrar(
            running.control, address, interval_ms=100, heartbeat_timeout_ms=5000
        )
        registrar.start()
        with GrpcClient(address) as grpc_client:
            [cluster] = grpc_client.list_clusters(namesrv=True)
            assert [b.broker_name for b in cluster.brokers] == ["broker-x"]
        registrar.stop()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        assert "stopped" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()


def test_should_exit_2_on_a_bad_namesrv_setting() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "aeromq", "namesrv", "--port", "-3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "key='port'" in result.stderr
