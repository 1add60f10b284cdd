"""Fixtures of the Spark connector tests: one real local SparkSession (``local[2]``) for the
whole test session, one real broker process for the module, and topics to fill.

The session starts in 10-20 s on two cores, so it is made once and shared; Python workers run
this interpreter (``PYSPARK_PYTHON``) and Spark binds to the loopback (``SPARK_LOCAL_IP``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from tests.consumer._broker_process import create_topic, start_broker
from tests.pipeline._helpers import local_spark

_names = itertools.count()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = local_spark("aeromq-tests")
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
