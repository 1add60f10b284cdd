"""Reading a pull's answer: the stored record batches, checked and cut to what was asked, as
one column chunk (:class:`~common.record_batch.PulledChunk`).

A FOUND answer carries whole stored batches, back to back; :func:`read_pulled_chunk` keeps the
records in ``[offset, next_begin_offset)`` that match the subscription. The work is one pass
in C over the answer (``_reader.c``: each batch's framing, CRC and lengths checked, then the
columns of every record in the range written into one buffer that numpy views), nothing per
stored batch or record in Python. :func:`~common.record_batch.read_pulled_chunk_py`
(:mod:`.numpy_reader`) is the same in numpy, the reference the C pass is tested against, its
fallback, and the words of a refusal.

Caller: the consumer (each pull answer, wrapped as a ``MessageBatch``), the Spark connector's
reads (also of batches at listed places of a mapped commit log file: a local read), the
benchmarks. A batch that fails its check (framing, CRC, another queue's) raises
:class:`~common.CorruptMessageError` naming the queue and offsets; nothing of the answer is
delivered.

Tags: the broker filtered on tag hash codes; here the hash column is filtered again (a batch
holds other records too) and, as RocketMQ's client does, the tag strings of the records whose
hash matched are compared, so a hash collision never delivers a foreign tag. SQL92: the broker
sent the batches holding a match; here the expression selects among their records again
(:mod:`._filter`). No I/O.

:func:`read_pulled_records` is the path of a small answer (a consumer keeping up pulls one
message at a time): its records made straight into message objects by one native call
(``_message_reader.c``, the same checks as ``_reader.c``), no column between; None when the
answer is not for it (more records than asked, a check failed, compressed, not built), and
the caller reads it with :func:`read_pulled_chunk`, which raises the refusal's error.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from aeromq.common._errors import CorruptMessageError
from aeromq.common._tags import ExpressionType, SubscriptionData
from aeromq.common.record_batch._filter import matching
from aeromq.common.record_batch.chunk import PulledChunk, PulledQueue
from aeromq.common.record_batch.compression import inflate_answer
from aeromq.common.record_batch.descriptor import HEADER_DTYPE
from aeromq.common.record_batch.numpy_reader import read_pulled_chunk_py

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): numpy alone
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = [
    "COLUMNS_I32",
    "COLUMNS_I64",
    "join_ranges",
    "read_pulled_chunk",
    "read_pulled_records",
]

_M = TypeVar("_M")

COLUMNS_I64: Final = (
    "batch",
    "index",
    "body_start",
    "tag_start",
    "properties_start",
    "tag_hash",
    "queue_offset",
    "commit_log_offset",
    "store_ms",
    "born_ms",
)
"""The i64 columns of the native reader's answer (``_reader.c``), in order."""
COLUMNS_I32: Final = ("body_length", "tag_length", "properties_length", "born_delta_ms", "flag")
"""Its i32 columns, after the i64 ones."""


def read_pulled_chunk(
    data: bytes,
    queue: PulledQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
    ranges: bytes | None = None,
) -> PulledChunk | None:
    """The records of ``data`` (a pull's ``batches``, of ``queue`` from ``broker_name``) in
    ``[offset, next_offset)`` that ``subscription`` selects (see module), as one chunk (None,
    or a chunk of no record, when none is kept). Raises :class:`~common.CorruptMessageError`.

    With ``ranges`` (a local read's ``local_ranges``: little-endian i64 (position, length)
    pairs), ``data`` is a mapped commit log file and the batches are at those positions of it,
    not back to back; the chunk then keeps ``data`` (the mapping) as its buffer.

    One native pass (``_reader.c``) when it is built; an answer it refuses is read again by
    :func:`~common.record_batch.read_pulled_chunk_py`, which names the problem (the ranges'
    batches joined first, as a pull through the transport would have carried them). The
    native pass refuses compressed batches too: those are inflated (``compression.py``, their
    stored CRC checked first) and the answer read again."""
    if not data or ranges == b"":
        return None
    if _native is not None:
        read = _native.read(data, queue.queue_id, queue.topic.encode(), offset, next_offset, ranges)
        if read is not None:
            return _from_native(data, queue, broker_name, subscription, *read)
    inflated = inflate_answer(data, ranges, queue, offset)  # the C pass refuses those
    if inflated is not None:
        data, ranges = inflated, None
        if _native is not None:
            read = _native.read(data, queue.queue_id, queue.topic.encode(), offset, next_offset)
            if read is not None:
                return _from_native(data, queue, broker_name, subscription, *read)
    if ranges is not None:
        data = join_ranges(data, ranges)
    return read_pulled_chunk_py(data, queue, broker_name, offset, next_offset, subscription)


def read_pulled_records(
    data: bytes,
    queue: PulledQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    limit: int,
    message_type: type[_M],
) -> list[_M] | None:
    """The records of ``data`` (a pull's ``batches`` of ``queue`` from ``broker_name``) in
    ``[offset, next_offset)``, each a ``message_type`` object with the fields of a
    ``MessageExt`` set (``__init__`` not run), when there are 1 to ``limit`` of them and every
    batch passes the checks of :func:`read_pulled_chunk`; else None (see module). No
    subscription filter: the caller filters the few messages."""
    if _native is None:
        return None
    return _native.read_messages(
        data,
        queue.queue_id,
        queue.topic.encode(),
        offset,
        next_offset,
        limit,
        message_type,
        queue.topic,
        broker_name,
    )


def join_ranges(data: bytes, ranges: bytes) -> bytes:
    """The batches at ``ranges`` (little-endian i64 (position, length) pairs) of ``data``, back
    to back; :class:`~common.CorruptMessageError` when a range is not inside ``data`` or starts
    before the one before it ends."""
    pairs = np.frombuffer(ranges, "<i8").reshape(-1, 2).tolist()
    view = memoryview(data)
    ended = 0
    for position, length in pairs:
        if position < ended or length < 0 or position + length > len(view):
            raise CorruptMessageError(
                "a local range outside its commit log file or before the one it follows",
                position=position,
                length=length,
                previous_end=ended,
                file_length=len(view),
            )
        ended = position + length
    return b"".join(view[position : position + length] for position, length in pairs)


def _from_native(
    data: bytes,
    queue: PulledQueue,
    broker_name: str,
    subscription: SubscriptionData | None,
    kept: int,
    capacity: int,
    columns: bytes,
    headers: bytes,
) -> PulledChunk | None:
    """The chunk of the native reader's columns (views of its one buffer), then filtered by
    the subscription's tags or SQL92 expression as the numpy reader filters."""
    if not kept:
        return None
    records: dict[str, npt.NDArray[Any] | list[int]] = {}
    frombuffer = np.frombuffer
    for k, name in enumerate(COLUMNS_I64):
        records[name] = frombuffer(columns, np.int64, kept, 8 * k * capacity)
    at = 8 * len(COLUMNS_I64) * capacity
    for k, name in enumerate(COLUMNS_I32):
        records[name] = frombuffer(columns, np.int32, kept, at + 4 * k * capacity)
    chunk = PulledChunk(data, frombuffer(headers, HEADER_DTYPE), queue, broker_name, records)
    if subscription is None or not (
        subscription.tags or subscription.expression_type is ExpressionType.SQL92
    ):
        return chunk
    which = np.arange(kept, dtype=np.int64)
    if subscription.tags:
        codes = np.fromiter(subscription.codes, dtype=np.int64)
        which = np.flatnonzero(np.isin(chunk.tag_hash, codes))
    which = matching(
        data,
        subscription,
        which,
        chunk.tag_start,
        chunk.tag_length,
        chunk.properties_start,
        chunk.properties_length,
    )
    return chunk if len(which) == kept else chunk.taken(which)
