"""Exactly-once stream writes across a driver crash, with real processes: a streaming query's
driver (its own process, ``_copy_driver.py``, with its JVM and Python workers) is SIGKILLed in
the middle of a micro-batch, some of the batch's rows already in the sink topic; the query
restarted from its checkpoint (in this session's Spark) replays that batch, and the sink topic
holds every input row exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client.grpc_client import GrpcClient
from tests.consumer._broker_process import client
from tests.pipeline._copy_driver import PER_TRIGGER, start_copy
from tests.pipeline._helpers import consume_all, source_and_sink

# A fault scenario (a driver SIGKILLed) with a Spark driver process of its own: 40-60 s alone,
# minutes on a loaded machine: run with -m long
pytestmark = [pytest.mark.timeout(900), pytest.mark.faults, pytest.mark.long]

_PER_QUEUE = 2_000  # 8,000 rows: two micro-batches of PER_TRIGGER (6,000) and 2,000
_START_TIMEOUT_S = 240.0


def _stored(grpc: GrpcClient, topic: str) -> int:
    return sum(grpc.max_offset(topic, queue_id) for queue_id in range(4))


def _kill_in_the_middle(
    driver: subprocess.Popen[bytes], broker: ServerProcess, sink: str, log: Path
) -> int:
    """Wait until the first micro-batch has rows in ``sink`` but not all of them, then SIGKILL
    the driver's whole process group (its JVM and Python workers); returns the rows stored."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    with client(broker) as grpc:
        while time.monotonic() < deadline:
            if driver.poll() is not None:
                tail = log.read_text(errors="replace")[-3000:]
                raise AssertionError(f"the driver ended by itself: {driver.returncode}: {tail}")
            stored = _stored(grpc, sink)
            if stored:
                os.killpg(driver.pid, signal.SIGKILL)
                driver.wait(30)
                return _stored(grpc, sink)
            time.sleep(0.01)
    raise AssertionError("the first micro-batch wrote nothing in time")


def test_should_hold_every_row_once_after_the_driver_is_killed_in_the_middle_of_a_batch(
    spark: SparkSession, broker: ServerProcess, tmp_path: Path
) -> None:
    source, sink = "KilledDriverSource", "KilledDriverSink"
    sent = source_and_sink(broker, source, sink, _PER_QUEUE, 4)
    checkpoint = str(tmp_path / "checkpoint")
    local = tmp_path / "spark-local"
    local.mkdir()
    environment = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(local),
        "JAVA_TOOL_OPTIONS": f"-Djava.io.tmpdir={local}",
    }
    log = tmp_path / "driver.log"
    with open(log, "wb") as output:
        driver = subprocess.Popen(
            [sys.executable, "-m", "tests.pipeline._copy_driver",
             broker.grpc_address, source, sink, checkpoint],
            env=environment, start_new_session=True, stdout=output, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        stored = _kill_in_the_middle(driver, broker, sink, log)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(30)
    assert 0 < stored < PER_TRIGGER  # killed part way through the first micro-batch

    query = start_copy(
        spark, broker.grpc_address, source, sink, checkpoint, pause_s=0.0, available_now=True
    )
    assert query.awaitTermination(_START_TIMEOUT_S), "the restarted query did not finish"
    assert query.exception() is None
    bodies = sorted(m.body for m in consume_all(broker, sink, len(sent)))
    assert bodies == sorted(m.body for m in sent)  # every row, none twice
