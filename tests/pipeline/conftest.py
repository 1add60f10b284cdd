"""Fixtures of the Spark connector tests: one real local SparkSession (``local[2]``) for the
whole test session, one real broker process for the module, and topics to fill.

The session starts in 10-20 s on two cores, so it is made once and shared; Python workers run
this interpreter (``PYSPARK_PYTHON``) and Spark binds to the loopback (``SPARK_LOCAL_IP``).
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.pipeline import spark_session
from tests.consumer._broker_process import create_topic, start_broker

_names = itertools.count()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # before the JVM starts: loopback only
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = spark_session(
        "local[2]",
        "aeromq-tests",
        {
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.bindAddress": "127.0.0.1",
            "spark.driver.host": "127.0.0.1",
            "spark.sql.streaming.stopTimeout": "30s",
            "spark.ui.showConsoleProgress": "false",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("pipeline-broker"), timeout_s=60.0)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def topic(broker: ServerProcess) -> str:
    """A fresh topic of 4 queues."""
    name = f"SparkTopic{next(_names)}"
    create_topic(broker, name, 4)
    return name
