"""A SparkSession with the ``aeromq`` format registered, after the Java check.

``spark_session()`` is what the example and the tests start Spark with; an application that
builds its own session calls :func:`register` on it (and may call
:func:`~pipeline.check_java` first for the same clear error). A master ``sc://HOST:PORT`` is a
Spark Connect server (``docs/spark-cluster.md``): the session is its client, which needs
``aeromq[spark-connect]`` and no Java; the server's Python workers import ``aeromq.pipeline``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

from aeromq.pipeline._java import check_java
from aeromq.pipeline._source import AeromqDataSource

__all__ = ["CONNECT_SCHEME", "register", "spark_session"]

CONNECT_SCHEME = "sc://"
"""How a Spark Connect server's address begins (``sc://HOST:PORT``), as ``master``."""


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
    is off unless ``config`` turns it on. With ``master`` ``sc://HOST:PORT``, a client of that
    Spark Connect server (``config`` its session's settings; the server's own are its own)."""
    if master.startswith(CONNECT_SCHEME):
        remote = SparkSession.builder.remote(master)
        for key, value in (config or {}).items():
            remote = remote.config(key, value)
        session = remote.getOrCreate()
        register(session)
        return session
    check_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.enabled": "false", **(config or {})}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark
