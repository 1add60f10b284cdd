"""The row schema of the ``aeromq`` data source, as Spark DDL and as the Arrow schema that
Spark expects the reader's ``pyarrow.RecordBatch``\\es to have (Spark's own conversion of the
DDL with ``timezone="UTC"``; ``tests/pipeline/test_schema.py`` checks they agree).

=================  =====================  ================================================
column             type                   what it holds
=================  =====================  ================================================
``topic``          string                 the message's topic
``broker``         string                 the broker name of its queue
``queueId``        int                    its queue id
``queueOffset``    long                   its offset in the queue
``key``            string                 its keys (RocketMQ's ``KEYS``: space-separated)
``tags``           string                 its tag (null when none)
``body``           binary                 the body
``properties``     map<string,string>     user properties (only with ``includeProperties``)
``bornTimestamp``  timestamp              when the producer made it
``storeTimestamp`` timestamp              when the broker stored it
=================  =====================  ================================================

The sink's input columns: ``body`` (required, binary or string), ``topic``, ``tags``, ``keys``
(or ``key``) and ``properties``; others are ignored.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

__all__ = ["SINK_COLUMNS", "arrow_schema", "spark_ddl"]

_BASE: Final = (
    ("topic", "string", pa.string()),
    ("broker", "string", pa.string()),
    ("queueId", "int", pa.int32()),
    ("queueOffset", "long", pa.int64()),
    ("key", "string", pa.string()),
    ("tags", "string", pa.string()),
    ("body", "binary", pa.binary()),
)
_PROPERTIES: Final = (
    "properties",
    "map<string,string>",
    pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())),
)
_TIMES: Final = (
    ("bornTimestamp", "timestamp", pa.timestamp("us", tz="UTC")),
    ("storeTimestamp", "timestamp", pa.timestamp("us", tz="UTC")),
)

SINK_COLUMNS: Final = ("topic", "tags", "keys", "key", "body", "properties")
"""The columns the sink reads from its input (``keys`` wins over ``key``)."""


def _columns(include_properties: bool) -> tuple[tuple[str, str, pa.DataType], ...]:
    return (*_BASE, *((_PROPERTIES,) if include_properties else ()), *_TIMES)


def spark_ddl(include_properties: bool = False) -> str:
    """The schema as Spark DDL: ``topic string, broker string, ...``."""
    return ", ".join(f"{name} {ddl}" for name, ddl, _ in _columns(include_properties))


def arrow_schema(include_properties: bool = False) -> pa.Schema:
    """The schema of the record batches the reader yields."""
    return pa.schema([pa.field(name, kind) for name, _, kind in _columns(include_properties)])
