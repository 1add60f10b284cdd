"""The row schema: the Arrow schema of the reader's batches is the one Spark derives from the
DDL (Spark rejects a batch whose schema differs), with and without properties."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from aeromq.pipeline import arrow_schema, spark_ddl

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("include_properties", [False, True])
def test_should_match_sparks_arrow_schema(spark: SparkSession, include_properties: bool) -> None:
    # StructType.fromDDL parses through the session's JVM
    ddl = spark_ddl(include_properties)
    spark_schema = StructType.fromDDL(ddl)
    assert to_arrow_schema(spark_schema, timezone="UTC").equals(arrow_schema(include_properties))
    assert ("properties" in spark_schema.fieldNames()) is include_properties
