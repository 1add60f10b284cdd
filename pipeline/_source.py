"""The ``aeromq`` PySpark data source: ``spark.dataSource.register(AeromqDataSource)``, then
``spark.read.format("aeromq")``, ``readStream``, ``write`` and ``writeStream``
(``docs/spark-connector.md``)."""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from aeromq.pipeline._options import sink_options, source_options
from aeromq.pipeline._readers import AeromqBatchReader, AeromqStreamReader
from aeromq.pipeline._schema import spark_ddl
from aeromq.pipeline._writers import AeromqBatchWriter, AeromqStreamWriter

__all__ = ["FORMAT", "AeromqDataSource"]

FORMAT = "aeromq"


class AeromqDataSource(DataSource):
    """Reads topics of an aeromq broker (batch or stream) and writes rows to them. Options are
    checked when Spark asks for a reader or writer, with :class:`~pipeline.OptionError`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        given = {str(k).lower(): str(v) for k, v in self.options.items()}
        return spark_ddl(given.get("includeproperties", "false").strip().lower() == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        return AeromqBatchReader(source_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        return AeromqStreamReader(source_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return AeromqBatchWriter(sink_options(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        return AeromqStreamWriter(sink_options(self.options))
