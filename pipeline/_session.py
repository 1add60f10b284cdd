"""A SparkSession with the ``aeromq`` format registered, after the Java check.

``spark_session()`` is what the example and the tests start Spark with; an application that
builds its own session calls :func:`register` on it (and may call
:func:`~pipeline.check_java` first for the same clear error).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from aeromq.pipeline._java import check_java
from aeromq.pipeline._source import AeromqDataSource

__all__ = ["register", "spark_session"]


def register(spark: SparkSession) -> None:
    """Register the ``aeromq`` format on ``spark``."""
    spark.dataSource.register(AeromqDataSource)


def spark_session(
    master: str = "local[2]",
    app_name: str = "aeromq-pipeline",
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """Check Java, then get (or create) a session on ``master`` with the format registered.

    Python workers run this interpreter (``PYSPARK_PYTHON``, unless already set); the Spark UI
    is off unless ``config`` turns it on."""
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.enabled": "false", **(config or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
