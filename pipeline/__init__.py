"""aeromq's data pipeline on Spark: a PySpark Python data source and sink, format ``"aeromq"``
(``docs/spark-connector.md``).

::

    from aeromq.pipeline import spark_session

    spark = spark_session()                      # checks Java, registers the format
    df = (spark.read.format("aeromq")
          .option("endpoints", "127.0.0.1:8081").option("topic", "Events").load())

Needs ``pip install 'aeromq[spark]'`` (pyspark and pyarrow) and Java 17 or 21. Readers plan on
the driver over the admin gRPC calls and read queue ranges on the executors
(``_queue_reader``); writers send each task's Arrow batches as columns with a ``Producer``
(``_arrow_writers``; the Row writers, ``_row_writers``, on a PySpark without Arrow writers).
"""

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # the extra is missing: say which one
    raise ImportError(
        f"aeromq.pipeline needs pyspark and pyarrow: pip install 'aeromq[spark]' ({exc})"
    ) from exc

from aeromq.pipeline._errors import (
    DataLossError,
    JavaError,
    JavaNotFoundError,
    JavaVersionError,
    OptionError,
    PipelineError,
    ReadTimeoutError,
)
from aeromq.pipeline._java import MIN_JAVA_VERSION, JavaRuntime, check_java, parse_java_version
from aeromq.pipeline._options import SinkOptions, SourceOptions, sink_options, source_options
from aeromq.pipeline._planning import (
    QueueRange,
    admit,
    offsets_from_json,
    offsets_to_json,
    queue_key,
    split_ranges,
)
from aeromq.pipeline._queue_reader import READER_GROUP, read_queue_range
from aeromq.pipeline._readers import AeromqBatchReader, AeromqStreamReader
from aeromq.pipeline._row_writers import AeromqRowBatchWriter, AeromqRowStreamWriter
from aeromq.pipeline._schema import SINK_COLUMNS, arrow_schema, spark_ddl
from aeromq.pipeline._session import CONNECT_SCHEME, register, spark_session
from aeromq.pipeline._source import FORMAT, AeromqDataSource
from aeromq.pipeline._writers import AeromqBatchWriter, AeromqStreamWriter, SinkCommit, marker_group

__all__ = [
    "CONNECT_SCHEME",
    "FORMAT",
    "MIN_JAVA_VERSION",
    "READER_GROUP",
    "SINK_COLUMNS",
    "AeromqBatchReader",
    "AeromqBatchWriter",
    "AeromqDataSource",
    "AeromqRowBatchWriter",
    "AeromqRowStreamWriter",
    "AeromqStreamReader",
    "AeromqStreamWriter",
    "DataLossError",
    "JavaError",
    "JavaNotFoundError",
    "JavaRuntime",
    "JavaVersionError",
    "OptionError",
    "PipelineError",
    "QueueRange",
    "ReadTimeoutError",
    "SinkCommit",
    "SinkOptions",
    "SourceOptions",
    "admit",
    "arrow_schema",
    "check_java",
    "marker_group",
    "offsets_from_json",
    "offsets_to_json",
    "parse_java_version",
    "queue_key",
    "read_queue_range",
    "register",
    "sink_options",
    "source_options",
    "spark_ddl",
    "spark_session",
    "split_ranges",
]
