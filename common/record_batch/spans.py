"""The kept records' spans of column chunks (bodies, tags, a property's values) in Arrow's
binary layout: ``count + 1`` i32 offsets and the bytes back to back, with a validity bitmap
where a value may be missing.

Caller: the consumer's ``MessageBatch`` (``bodies``, ``tag_column``, ``property_column``, the
Arrow arrays and ``to_arrow``), for data pipelines and the Spark reader. Each is one C pass
(``_gather.c``) over the chunks' buffers when the module is built; :func:`gather_spans_py` and
:func:`find_property_py` are the same in numpy and one regular expression per chunk, the
reference the C passes are tested against and the fallback. No Python object per record, and
no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from aeromq.common.record_batch.chunk import PulledChunk

if TYPE_CHECKING:
    from typing_extensions import Buffer

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): numpy alone
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = [
    "ArrowLayout",
    "body_spans",
    "find_property",
    "find_property_py",
    "gather_spans",
    "gather_spans_py",
    "property_layout",
    "span_layout",
    "tag_spans",
]

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
UInt8Array = npt.NDArray[np.uint8]
BoolArray = npt.NDArray[np.bool_]
Spans = Callable[[PulledChunk], tuple[Int64Array, Int32Array]]
"""Where a chunk's records' parts are: ``(starts, lengths)`` in its buffer."""
ArrowLayout = tuple[bytes | Int32Array, bytes | UInt8Array, bytes | None, int]
"""``(offsets, data, validity, null_count)``: Arrow's binary layout (validity None when no
value is missing), as the C gathers make it (``bytes``) or the numpy ones (arrays)."""


def body_spans(chunk: PulledChunk) -> tuple[Int64Array, Int32Array]:
    """Where each kept record's body is in the chunk's buffer."""
    return chunk.body_start, chunk.body_length


def tag_spans(chunk: PulledChunk) -> tuple[Int64Array, Int32Array]:
    """Where each kept record's tag is in the chunk's buffer (empty: no tag)."""
    return chunk.tag_start, chunk.tag_length


def _property_spans(chunk: PulledChunk) -> tuple[Int64Array, Int32Array]:
    return chunk.properties_start, chunk.properties_length


def gather_spans(
    chunks: Sequence[PulledChunk], count: int, where: Spans
) -> tuple[Int32Array, UInt8Array]:
    """``(offsets, data)``: the ``count`` spans ``where`` gives of ``chunks``, in Arrow's binary
    layout (span ``i`` is ``data[offsets[i]:offsets[i + 1]]``); one C pass when it is built,
    else :func:`gather_spans_py`."""
    if _native is not None:
        offsets, data, _, _ = _native.gather(_parts(chunks, where), count, False)
        return np.frombuffer(offsets, dtype=np.int32), np.frombuffer(data, dtype=np.uint8)
    return gather_spans_py(chunks, count, where)


def span_layout(
    chunks: Sequence[PulledChunk], count: int, where: Spans, null_empty: bool
) -> ArrowLayout:
    """:func:`gather_spans` with, when ``null_empty``, an empty span counted as a missing value
    (a message without a tag): the buffers of an Arrow binary or string array."""
    if _native is not None:
        return _native.gather(_parts(chunks, where), count, null_empty)
    offsets, data = gather_spans_py(chunks, count, where)
    if not null_empty:
        return offsets, data, None, 0
    return _with_validity(offsets, data, np.diff(offsets) > 0)


def gather_spans_py(
    chunks: Sequence[PulledChunk], count: int, where: Spans
) -> tuple[Int32Array, UInt8Array]:
    """:func:`gather_spans` in numpy: the reference of the native gather, and its fallback."""
    offsets = np.zeros(count + 1, dtype=np.int32)
    pieces: list[memoryview] = []
    lengths: list[Int32Array] = []
    for chunk in chunks:
        starts, chunk_lengths = where(chunk)
        if chunk_lengths.any():  # tags are often all empty
            pieces.extend(chunk.pieces(starts, chunk_lengths))
        lengths.append(chunk_lengths)
    if lengths:
        np.cumsum(np.concatenate(lengths) if len(lengths) > 1 else lengths[0], out=offsets[1:])
    return offsets, np.frombuffer(b"".join(pieces), dtype=np.uint8)  # the one copy


def find_property(
    chunks: Sequence[PulledChunk], count: int, name: str
) -> tuple[Int32Array, UInt8Array, BoolArray]:
    """``(offsets, data, present)``: property ``name`` of each of the ``count`` kept records of
    ``chunks`` in Arrow's string layout (``present`` false where a record lacks it), found by
    one native pass over the property bytes (or one regular expression over each chunk's, the
    reference :func:`find_property_py`), not by parsing each record's properties."""
    if _native is not None:
        offsets, data, validity, _ = _found_property(chunks, count, name)
        present = (
            np.ones(count, dtype=bool)
            if validity is None
            else np.unpackbits(
                np.frombuffer(validity, dtype=np.uint8), count=count, bitorder="little"
            ).astype(bool)
        )
        return np.frombuffer(offsets, dtype=np.int32), np.frombuffer(data, np.uint8), present
    return find_property_py(chunks, count, name)


def property_layout(chunks: Sequence[PulledChunk], count: int, name: str) -> ArrowLayout:
    """:func:`find_property` as the buffers of an Arrow string array (null where absent)."""
    if _native is not None:
        return _found_property(chunks, count, name)
    return _with_validity(*find_property_py(chunks, count, name))


def find_property_py(
    chunks: Sequence[PulledChunk], count: int, name: str
) -> tuple[Int32Array, UInt8Array, BoolArray]:
    """:func:`find_property` with a regular expression: the reference, and the fallback."""
    pattern = _property_pattern(name)
    needle = name.encode() + b"\x01"
    lengths = np.zeros(count, dtype=np.int32)
    present = np.zeros(count, dtype=bool)
    pieces: list[bytes] = []
    first = 0
    for chunk in chunks:
        chunk_first, first = first, first + len(chunk)
        # C searches of the property bytes alone: most answers lack a given property
        if not chunk.holds(needle, chunk.properties_start, chunk.properties_length):
            continue
        data = chunk.segments(chunk.properties_start, chunk.properties_length)
        starts = np.cumsum(chunk.properties_length, dtype=np.int64) - chunk.properties_length
        found = [(match.start(), match.start(1), match.end(1)) for match in pattern.finditer(data)]
        if not found:
            continue
        at = np.array([f[0] for f in found], dtype=np.int64)
        owners = chunk_first + np.searchsorted(starts, at, side="right") - 1
        lengths[owners] = [end - start for _, start, end in found]
        present[owners] = True
        pieces.extend(data[start:end] for _, start, end in found)
    offsets = np.zeros(count + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    return offsets, np.frombuffer(b"".join(pieces), dtype=np.uint8), present


def _parts(
    chunks: Sequence[PulledChunk], where: Spans
) -> list[tuple[Buffer, Int64Array, Int32Array]]:
    """Each chunk's buffer and spans, for the native gathers (contiguous i64 and i32)."""
    parts: list[tuple[Buffer, Int64Array, Int32Array]] = []
    for chunk in chunks:
        starts, lengths = where(chunk)
        parts.append(
            (
                chunk.buffer,
                np.ascontiguousarray(starts, dtype=np.int64),
                np.ascontiguousarray(lengths, dtype=np.int32),
            )
        )
    return parts


def _found_property(
    chunks: Sequence[PulledChunk], count: int, name: str
) -> tuple[bytes, bytes, bytes | None, int]:
    return _native.find_property(name.encode() + b"\x01", _parts(chunks, _property_spans), count)


def _with_validity(offsets: Int32Array, data: UInt8Array, present: BoolArray) -> ArrowLayout:
    """The layout of ``offsets`` and ``data`` with a bitmap of ``present`` (None when all are)."""
    missing = int(len(present) - np.count_nonzero(present))
    validity = np.packbits(present, bitorder="little").tobytes() if missing else None
    return offsets, data, validity, missing


@lru_cache(maxsize=64)
def _property_pattern(name: str) -> re.Pattern[bytes]:
    """``name``'s pair in property bytes that hold whole pairs back to back."""
    return re.compile(rb"(?:^|(?<=\x02))" + re.escape(name.encode()) + rb"\x01([^\x02]*)\x02")
