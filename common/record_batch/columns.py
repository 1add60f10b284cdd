"""A column set: a send's rows as columns of values, described by their buffers (no Python
object per row), and one value read back.

A :class:`ColumnSet` is a send's bodies with, optionally, tags, keys, named property columns
and a property map, each a :class:`Column`: Arrow's binary layout (int32 or int64 offsets, a
data buffer, a validity bitmap and the array's offset), fixed-width rows (a numpy array's rows;
numpy's ``S`` strings without their trailing NUL bytes), or one constant value for every row.
:class:`BatchLimits` says what one batch of them may hold; :class:`ColumnProblem` why a row
cannot be a message (``_columns.c`` has the same numbers, a test checks them).
:func:`column_value` and :func:`map_entries` read one row (the references, a selector of one
message, the words of a refusal).

Caller: the columnar encoder (``column_encoder.py``, ``_columns.c``) and the producer that
describes its input with them (``producer/_columns_input.py``). No I/O.
"""

from __future__ import annotations

import enum
import struct
from typing import TYPE_CHECKING, Final, NamedTuple

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "BatchLimits",
    "Column",
    "ColumnKind",
    "ColumnProblem",
    "ColumnSet",
    "PropertyMap",
    "RowNumbers",
    "column_value",
    "map_entries",
]

_I32_PAIR: Final = struct.Struct("<ii")
_I64_PAIR: Final = struct.Struct("<qq")


class ColumnKind(enum.IntEnum):
    """How a :class:`Column` holds its values (``_columns.c`` has the same numbers)."""

    OFFSETS32 = 1
    """Arrow's binary and string: value ``i`` is ``data[offsets[first + i]:offsets[first + i + 1]]``
    (int32 offsets)."""
    OFFSETS64 = 2
    """Arrow's large binary and large string: the same with int64 offsets."""
    FIXED = 3
    """Every value ``width`` bytes: value ``i`` is ``data[(first + i) * width:][:width]``."""
    PADDED = 4
    """As :attr:`FIXED`, without the value's trailing NUL bytes (numpy's ``S`` strings)."""
    CONSTANT = 5
    """``data`` is every row's value (never null)."""


class Column(NamedTuple):
    """One column of ``length`` values (see :class:`ColumnKind`). ``validity``: Arrow's
    validity bitmap (bit ``first + i``, least significant bit first, 0 for null), or None."""

    kind: int
    data: Buffer
    offsets: Buffer | None = None
    validity: Buffer | None = None
    first: int = 0
    width: int = 0
    length: int = 0


class PropertyMap(NamedTuple):
    """Each row's own properties (Arrow's map): row ``i``'s entries are ``offsets[first + i]``
    to ``offsets[first + i + 1]`` (int32 or int64, ``kind``) of ``keys`` (the names, never
    null) and ``values`` (a null value is no property); a null row has none."""

    kind: int
    offsets: Buffer
    validity: Buffer | None
    first: int
    keys: Column
    values: Column


class ColumnSet(NamedTuple):
    """A send's columns, all of ``bodies.length`` rows (a constant column of any)."""

    bodies: Column
    tags: Column | None = None
    keys: Column | None = None
    properties: tuple[tuple[bytes, Column], ...] = ()
    """Named property columns: ``(name, values)``, in the order the properties are written."""
    property_map: PropertyMap | None = None


class BatchLimits(NamedTuple):
    """What one batch may hold: records, bytes of one body, of its bodies together, and of the
    whole batch (the first record always goes in, whatever its size)."""

    max_records: int
    max_body_length: int
    max_body_total: int
    max_batch_bytes: int


class ColumnProblem(enum.IntEnum):
    """Why a row cannot be a message (``_columns.c`` has the same numbers)."""

    OK = 0
    EMPTY_BODY = -1  # a null or empty body
    BODY_TOO_LARGE = -2  # over ``max_body_length``
    BAD_TAG = -3  # whitespace, '|', \x01 or \x02 in the tag
    BAD_KEY = -4  # \x00, \x01 or \x02 in the keys
    BAD_PROPERTY = -5  # a blank property value, or \x00, \x01 or \x02 in one
    PROPERTIES_TOO_LONG = -6  # the row's property string over MAX_PROPERTIES_LENGTH
    NOT_UTF8 = -7  # a tag, keys or a property value that is not UTF-8
    BAD_COLUMN = -8  # offsets outside the data, or a row outside the columns
    NO_KEY = -9  # no value to hash (:func:`hash_column`): a null, or no key


RowNumbers = npt.NDArray[np.int64]
"""The rows of a batch to encode, by number, in order (int64)."""


def column_value(column: Column, index: int) -> bytes | None:
    """Value ``index`` of ``column``: its bytes, or None for a null. Raises ``ValueError``
    when its offsets leave the data."""
    data = memoryview(column.data).cast("B")
    if column.kind == ColumnKind.CONSTANT:
        return bytes(data)
    at = column.first + index
    if column.validity is not None:
        bits = memoryview(column.validity).cast("B")
        if not (bits[at >> 3] >> (at & 7)) & 1:
            return None
    if column.kind in (ColumnKind.OFFSETS32, ColumnKind.OFFSETS64):
        assert column.offsets is not None
        pair = _I32_PAIR if column.kind == ColumnKind.OFFSETS32 else _I64_PAIR
        start, stop = pair.unpack_from(column.offsets, at * (pair.size // 2))
    else:
        start = at * column.width
        stop = start + column.width
    if start < 0 or stop < start or stop > len(data):
        raise ValueError(f"the value's offsets leave its data: index={index}")
    value = bytes(data[start:stop])
    return value.rstrip(b"\x00") if column.kind == ColumnKind.PADDED else value


def map_entries(columns: ColumnSet, row: int) -> range:
    """Row ``row``'s entries of the property map (none without one, or for a null row).
    Raises ``ValueError`` when its offsets leave the map's entries."""
    property_map = columns.property_map
    if property_map is None:
        return range(0)
    at = property_map.first + row
    if property_map.validity is not None:
        bits = memoryview(property_map.validity).cast("B")
        if not (bits[at >> 3] >> (at & 7)) & 1:
            return range(0)
    pair = _I32_PAIR if property_map.kind == ColumnKind.OFFSETS32 else _I64_PAIR
    start, stop = pair.unpack_from(property_map.offsets, at * (pair.size // 2))
    if start < 0 or stop < start or stop > property_map.keys.length:
        raise ValueError(f"the row's entries leave the map's: row={row}")
    return range(start, stop)
