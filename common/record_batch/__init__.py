"""The record batch: the one binary form of messages, from the producer's send through the
commit log to the consumer's pull. Its layout, its passes and their references, in one place.

A producer encodes the messages of one send into one batch, once; the broker checks it, writes
the fields it assigns into the header and appends the bytes as they are; a pull answers with
the stored batches as they are, and the consumer reads them column by column. No I/O here.

- ``descriptor``: the layout (the bit diagram, every offset and length, the header as a
  ``struct`` and a numpy dtype, the host fields, the optional producer state of an idempotent
  producer: :data:`PRODUCER_STATE_FLAG`, :func:`read_producer_state`); ``record_batch.h`` is the
  same for C, and a test checks the two agree.
- ``encoder``: :func:`encode_batch` (the producer's, one pass in ``_encoder.c``) beside
  :func:`encode_batch_py`, its Python reference; :func:`stamp_batch`, an idempotent
  producer's state written into a batch (the reference of the stamp ``_send_encode.c`` does
  as it writes a send's envelope, ``common/_send_envelope.py``).
- ``columns``: a :class:`ColumnSet`, a send's rows as columns described by their buffers
  (Arrow's binary layout, numpy rows, constants), :class:`BatchLimits`, :class:`ColumnProblem`;
  ``column_encoder``: :func:`encode_column_batch`, a batch straight from those buffers
  (``_columns.c``) beside :func:`encode_column_batch_py`, its reference over
  :func:`encode_batch_py`, and :func:`hash_column` (a key selector's hashes).
- ``checker``: :func:`check_batch` (the broker's, ``_checker.c``) beside
  :func:`check_batch_py`; :class:`BatchCheck`, what a check found; :func:`patch_batch`, the
  broker's fields written in place.
- ``compression``: a batch's bodies as one LZ4, Zstandard or zlib block
  (:class:`CompressionType`, :func:`compress_batch`, the producer's) and back
  (:func:`inflate_batch`, :func:`inflate_answer`, the readers').
- ``merger``: :func:`merge_batches` (a producer's waiting sends as one batch, ``_merger.c``)
  beside :func:`merge_batches_py`.
- ``view``: :class:`RecordBatch`, a read-only view of one batch (header fields, numpy columns).
- ``properties``: a message's properties as a batch stores them (:func:`split_tag`,
  :func:`join_tag`, :func:`stored_properties`).
- ``reader``: :func:`read_pulled_chunk`, a pull answer's batches checked, cut to the pulled
  range and filtered by the subscription into one :class:`PulledChunk` (``chunk``), in one C
  pass (``_reader.c``); ``numpy_reader``: :func:`read_pulled_chunk_py`, its numpy reference;
  :func:`read_pulled_records`, a small answer's records as message objects
  (``_message_reader.c``).
- ``spans``: the kept records' bodies, tags and a property's values in Arrow's binary layout
  (``_gather.c``, the numpy references beside it).

The C passes are one extension module, ``_native`` (``_native.c`` and a file per role, the CRC
in ``_crc32.h``/``_crc32.c``); each Python function above runs in Python or numpy when it is not
built (a source tree without a compiler). The broker's window check of a get
(``broker/store/_batch_take.c``) reads the layout from ``record_batch.h`` too.
"""

from __future__ import annotations

from aeromq.common.record_batch.checker import (
    BatchCheck,
    check_batch,
    check_batch_py,
    patch_batch,
)
from aeromq.common.record_batch.chunk import PulledChunk, PulledQueue
from aeromq.common.record_batch.column_encoder import (
    EncodedColumns,
    describe_row_problem,
    encode_column_batch,
    encode_column_batch_py,
    hash_column,
    hash_column_py,
)
from aeromq.common.record_batch.columns import (
    BatchLimits,
    Column,
    ColumnKind,
    ColumnProblem,
    ColumnSet,
    PropertyMap,
    RowNumbers,
    column_value,
    map_entries,
)
from aeromq.common.record_batch.compression import (
    DEFAULT_COMPRESS_OVER_BYTES,
    CompressionType,
    compress_batch,
    inflate_answer,
    inflate_batch,
)
from aeromq.common.record_batch.descriptor import (
    ATTRIBUTES_OFFSET,
    BASE_BORN_TIMESTAMP_OFFSET,
    BASE_PHYSICAL_OFFSET_OFFSET,
    BASE_QUEUE_OFFSET_OFFSET,
    BASE_SEQUENCE_OFFSET,
    BATCH_MAGIC,
    BORN_DELTA_COLUMN,
    BORN_HOST_OFFSET,
    BROKER_FIELDS_LENGTH,
    COLUMN_COUNT,
    COLUMN_WIDTHS,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_TYPE_SHIFT,
    CRC_OFFSET,
    CRC_START,
    FIXED_HEADER_LENGTH,
    HEADER_DTYPE,
    HEADER_STRUCT,
    HOST_FIELD_LENGTH,
    MAGIC_OFFSET,
    MAX_COMPRESSION_TYPE,
    MAX_FRAMING_BYTES,
    MAX_PROPERTIES_LENGTH,
    MAX_SEQUENCE,
    MAX_TOPIC_LENGTH,
    PRODUCER_EPOCH_OFFSET,
    PRODUCER_ID_OFFSET,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_LENGTH,
    PRODUCER_STATE_RESERVED_OFFSET,
    PRODUCER_STATE_STRUCT,
    QUEUE_ID_OFFSET,
    RECONSUME_TIMES_OFFSET,
    RECORD_COUNT_OFFSET,
    RECORD_OVERHEAD,
    STORE_HOST_OFFSET,
    STORE_TIMESTAMP_OFFSET,
    TIMER_FLAG,
    TOPIC_LENGTH_OFFSET,
    TOPIC_OFFSET,
    TOTAL_LENGTH_OFFSET,
    TRANSACTION_PREPARED_FLAG,
    ProducerState,
    batch_header_length,
    columns_struct,
    compression_type,
    pack_host_field,
    producer_state_position,
    read_producer_state,
    read_total_length,
    unpack_host_field,
)
from aeromq.common.record_batch.encoder import encode_batch, encode_batch_py, stamp_batch
from aeromq.common.record_batch.merger import merge_batches, merge_batches_py
from aeromq.common.record_batch.numpy_reader import read_pulled_chunk_py
from aeromq.common.record_batch.properties import join_tag, split_tag, stored_properties
from aeromq.common.record_batch.reader import (
    COLUMNS_I32,
    COLUMNS_I64,
    join_ranges,
    read_pulled_chunk,
    read_pulled_records,
)
from aeromq.common.record_batch.spans import (
    ArrowLayout,
    body_spans,
    find_property,
    find_property_py,
    gather_spans,
    gather_spans_py,
    property_layout,
    span_layout,
    tag_spans,
)
from aeromq.common.record_batch.view import RecordBatch

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BASE_BORN_TIMESTAMP_OFFSET",
    "BASE_PHYSICAL_OFFSET_OFFSET",
    "BASE_QUEUE_OFFSET_OFFSET",
    "BASE_SEQUENCE_OFFSET",
    "BATCH_MAGIC",
    "BORN_DELTA_COLUMN",
    "BORN_HOST_OFFSET",
    "BROKER_FIELDS_LENGTH",
    "COLUMNS_I32",
    "COLUMNS_I64",
    "COLUMN_COUNT",
    "COLUMN_WIDTHS",
    "COMPRESSED_FLAG",
    "COMPRESSION_TYPE_MASK",
    "COMPRESSION_TYPE_SHIFT",
    "CRC_OFFSET",
    "CRC_START",
    "DEFAULT_COMPRESS_OVER_BYTES",
    "FIXED_HEADER_LENGTH",
    "HEADER_DTYPE",
    "HEADER_STRUCT",
    "HOST_FIELD_LENGTH",
    "MAGIC_OFFSET",
    "MAX_COMPRESSION_TYPE",
    "MAX_FRAMING_BYTES",
    "MAX_PROPERTIES_LENGTH",
    "MAX_SEQUENCE",
    "MAX_TOPIC_LENGTH",
    "PRODUCER_EPOCH_OFFSET",
    "PRODUCER_ID_OFFSET",
    "PRODUCER_STATE_FLAG",
    "PRODUCER_STATE_LENGTH",
    "PRODUCER_STATE_RESERVED_OFFSET",
    "PRODUCER_STATE_STRUCT",
    "QUEUE_ID_OFFSET",
    "RECONSUME_TIMES_OFFSET",
    "RECORD_COUNT_OFFSET",
    "RECORD_OVERHEAD",
    "STORE_HOST_OFFSET",
    "STORE_TIMESTAMP_OFFSET",
    "TIMER_FLAG",
    "TOPIC_LENGTH_OFFSET",
    "TOPIC_OFFSET",
    "TOTAL_LENGTH_OFFSET",
    "TRANSACTION_PREPARED_FLAG",
    "ArrowLayout",
    "BatchCheck",
    "BatchLimits",
    "Column",
    "ColumnKind",
    "ColumnProblem",
    "ColumnSet",
    "CompressionType",
    "EncodedColumns",
    "ProducerState",
    "PropertyMap",
    "PulledChunk",
    "PulledQueue",
    "RecordBatch",
    "RowNumbers",
    "batch_header_length",
    "body_spans",
    "check_batch",
    "check_batch_py",
    "column_value",
    "columns_struct",
    "compress_batch",
    "compression_type",
    "describe_row_problem",
    "encode_batch",
    "encode_batch_py",
    "encode_column_batch",
    "encode_column_batch_py",
    "find_property",
    "find_property_py",
    "gather_spans",
    "gather_spans_py",
    "hash_column",
    "hash_column_py",
    "inflate_answer",
    "inflate_batch",
    "join_ranges",
    "join_tag",
    "map_entries",
    "merge_batches",
    "merge_batches_py",
    "pack_host_field",
    "patch_batch",
    "producer_state_position",
    "property_layout",
    "read_producer_state",
    "read_pulled_chunk",
    "read_pulled_chunk_py",
    "read_pulled_records",
    "read_total_length",
    "span_layout",
    "split_tag",
    "stamp_batch",
    "stored_properties",
    "tag_spans",
    "unpack_host_field",
]
