"""The sink's writers, as the data source hands them to Spark (``_source.py``):
:class:`AeromqBatchWriter` for ``df.write`` and :class:`AeromqStreamWriter` for
``df.writeStream``.

They are the Arrow writers (``_arrow_writers.py``: each task's Arrow record batches sent as
columns, no Python object per row). On a PySpark without Arrow writers (before 4.1, below the
supported floor) they are the Row writers (``_row_writers.py``: a ``Message`` per row). Either
way the guarantees and a stream's replay rule are ``_sink.py``'s: batch writes at least once,
replays of completed micro-batches send nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aeromq.pipeline._sink import SinkCommit, marker_group

if TYPE_CHECKING:  # the supported PySpark has the Arrow writers
    from aeromq.pipeline._arrow_writers import AeromqArrowBatchWriter as AeromqBatchWriter
    from aeromq.pipeline._arrow_writers import AeromqArrowStreamWriter as AeromqStreamWriter
else:
    try:
        from aeromq.pipeline._arrow_writers import AeromqArrowBatchWriter as AeromqBatchWriter
        from aeromq.pipeline._arrow_writers import AeromqArrowStreamWriter as AeromqStreamWriter
    except ImportError:  # PySpark without DataSourceArrowWriter and DataSourceStreamArrowWriter
        from aeromq.pipeline._row_writers import AeromqRowBatchWriter as AeromqBatchWriter
        from aeromq.pipeline._row_writers import AeromqRowStreamWriter as AeromqStreamWriter

__all__ = ["AeromqBatchWriter", "AeromqStreamWriter", "SinkCommit", "marker_group"]
