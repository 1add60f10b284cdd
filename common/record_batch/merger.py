"""The producer's merge of record batches: :func:`merge_batches`, the records of several sends
as one batch (a producer's waiting sends joined into one request, as Kafka's record accumulator
does).

Caller: the producer, when async sends wait for a request. One pass in C (``_merger.c``) when
the module is built; :func:`merge_batches_py` is the same in Python, the reference the C code
is tested against and the fallback. No I/O.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

import numpy as np

from aeromq.common.record_batch.descriptor import (
    ATTRIBUTES_OFFSET,
    BASE_BORN_TIMESTAMP_OFFSET,
    BASE_SEQUENCE_OFFSET,
    BORN_DELTA_COLUMN,
    BORN_HOST_OFFSET,
    COLUMN_WIDTHS,
    COMPRESSED_FLAG,
    CRC_OFFSET,
    CRC_START,
    MAX_SEQUENCE,
    PRODUCER_STATE_FLAG,
    RECONSUME_TIMES_OFFSET,
    RECORD_COUNT_OFFSET,
    TOTAL_LENGTH_OFFSET,
    batch_header_length,
    producer_state_position,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["merge_batches", "merge_batches_py"]

_U16_PAIR: Final = struct.Struct("<HH")  # attributes, topic length
_U32: Final = struct.Struct("<I")
_I32_FIELD: Final = struct.Struct("<i")
_I64_FIELD: Final = struct.Struct("<q")
_COUNT_AND_BORN: Final = struct.Struct("<i4xq")  # record count, (reconsume times), base born
_I32_MAX: Final = (1 << 31) - 1


def merge_batches(batches: Sequence[Buffer]) -> bytes | None:
    """One batch of the records of ``batches``, in order (a producer's sends joined into one
    request, as Kafka's record accumulator does): their columns, bodies, tags and properties
    back to back, the earliest born timestamp as the base with the born deltas rebased on it,
    a new CRC. None when they cannot be one batch: not all of one topic, born host, attributes
    and reconsume times, compressed (``COMPRESSED_FLAG``: a producer compresses after it
    merges), or a born time more than an i32 of milliseconds after the base.

    Batches with a producer state merge only when all are of one producer id and epoch and
    their sequences follow on (each batch's base sequence is the one before's plus its record
    count, modulo 2^31): the merged batch has the first's state, so the broker sees the records
    with the sequences they were given. (Refusing to merge them would cost an idempotent
    producer its coalescing; merging any would give records new sequences.) A merged batch is a
    new unit for the broker's duplicate check: a producer retries it as it is, never its parts.

    The broker fields are zero, as a producer's. Record ``i`` of a batch is record ``i`` plus
    the record counts of the batches before it in the merged one. One pass in C
    (``_merger.c``, which raises ``ValueError`` for a batch whose lengths do not fit its
    bytes) when it is built, else :func:`merge_batches_py`, the reference.
    """
    if _native is not None:
        return _native.merge(batches)
    return merge_batches_py(batches)


def merge_batches_py(batches: Sequence[Buffer]) -> bytes | None:
    """:func:`merge_batches` in Python: the reference of the C merge, and its fallback."""
    views = [memoryview(batch).cast("B") for batch in batches]
    first = views[0]
    attributes, topic_length = _U16_PAIR.unpack_from(first, ATTRIBUTES_OFFSET)
    if attributes & COMPRESSED_FLAG:  # one block of bodies each: not joined
        return None
    header_length = batch_header_length(topic_length, attributes)
    reconsume = first[RECONSUME_TIMES_OFFSET:BASE_BORN_TIMESTAMP_OFFSET]
    # the bytes every batch shares: born host to the header's end, but for a producer state's
    # base sequence, which follows on from the batch before
    stateful = bool(attributes & PRODUCER_STATE_FLAG)
    sequence_at = producer_state_position(topic_length) + BASE_SEQUENCE_OFFSET
    identity = first[BORN_HOST_OFFSET : sequence_at if stateful else header_length]
    epoch = first[sequence_at + 4 : header_length] if stateful else b""
    sequence = _I32_FIELD.unpack_from(first, sequence_at)[0] if stateful else 0
    counts: list[int] = []
    bases: list[int] = []
    for view in views:
        if (
            view[RECONSUME_TIMES_OFFSET:BASE_BORN_TIMESTAMP_OFFSET] != reconsume
            or view[BORN_HOST_OFFSET : BORN_HOST_OFFSET + len(identity)] != identity
        ):
            return None
        count, base_ms = _COUNT_AND_BORN.unpack_from(view, RECORD_COUNT_OFFSET)
        if stateful:
            if (
                _I32_FIELD.unpack_from(view, sequence_at)[0] != sequence
                or view[sequence_at + 4 : header_length] != epoch
            ):
                return None
            sequence = (sequence + count) & MAX_SEQUENCE
        counts.append(count)
        bases.append(base_ms)
    base_ms = min(bases)
    columns: list[list[bytes | memoryview]] = [[] for _ in COLUMN_WIDTHS]
    bodies: list[memoryview] = []
    tags: list[memoryview] = []
    properties: list[memoryview] = []
    for view, count, born_ms in zip(views, counts, bases, strict=True):
        at = header_length
        for index, width in enumerate(COLUMN_WIDTHS):
            end = at + width * count
            if index == BORN_DELTA_COLUMN and born_ms != base_ms:
                deltas = np.frombuffer(view, "<i4", count, at) + np.int64(born_ms - base_ms)
                if int(deltas.max()) > _I32_MAX:
                    return None
                columns[index].append(deltas.astype("<i4").tobytes())
            else:
                columns[index].append(view[at:end])
            at = end
        lengths = header_length + 8 * count  # the body lengths' column, then the tags'
        body_bytes = int(np.frombuffer(view, "<i4", count, lengths).sum())
        tag_bytes = int(np.frombuffer(view, "<i4", count, lengths + 4 * count).sum())
        bodies.append(view[at : at + body_bytes])
        tags.append(view[at + body_bytes : at + body_bytes + tag_bytes])
        properties.append(view[at + body_bytes + tag_bytes :])
    pieces = [*itertools.chain.from_iterable(columns), *bodies, *tags, *properties]
    head = bytearray(first[:header_length])
    _I32_FIELD.pack_into(head, TOTAL_LENGTH_OFFSET, header_length + sum(map(len, pieces)))
    # count and base born time, around the reconsume times (a pad byte of the struct would zero it)
    _I32_FIELD.pack_into(head, RECORD_COUNT_OFFSET, sum(counts))
    _I64_FIELD.pack_into(head, BASE_BORN_TIMESTAMP_OFFSET, base_ms)
    crc = zlib.crc32(memoryview(head)[CRC_START:])
    for piece in pieces:
        crc = zlib.crc32(piece, crc)
    _U32.pack_into(head, CRC_OFFSET, crc)
    return b"".join([head, *pieces])
