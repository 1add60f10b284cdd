"""A columnar send's input: the application's Arrow arrays, numpy arrays and constants as the
record batch's :class:`~common.record_batch.Column`\\ s, their buffers used where they are.

- bodies: an Arrow binary, large binary, string, large string or fixed-size binary array (any
  other type Arrow casts to binary, as views and dictionaries, is cast first), or a numpy array
  whose rows (its first axis) are the bodies, their bytes as they are in memory (``S`` strings
  without their trailing NUL bytes, as numpy reads them; ``U`` strings as UTF-8);
- tags, keys and property values: an Arrow string or binary array (null: none), a numpy ``S``
  or ``U`` array, or one ``str`` for every row;
- properties: a mapping of property names to such columns, or an Arrow ``map<string, string>``
  array, each row's own (a null value: no property);
- a chunked Arrow array is combined into one first (a copy).

Nothing here makes a Python object per row: each column is described by its buffers, checked
for its length, and the names of the properties are checked once (those of a map as the set
of names it holds). Pyarrow is imported only for Arrow input (it is optional).

Caller: the columnar send (``producer/_columns.py``), once per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

from aeromq.client import IllegalArgumentError, MessageIllegalError
from aeromq.common import check_user_property
from aeromq.common.record_batch import (
    Column,
    ColumnKind,
    ColumnSet,
    PropertyMap,
    column_value,
    map_entries,
)

if TYPE_CHECKING:
    import pyarrow

__all__ = ["ColumnValues", "TextValues", "column_set", "is_arrow", "row_values", "text_column"]

ColumnValues: TypeAlias = "pyarrow.Array | pyarrow.ChunkedArray | npt.NDArray[np.generic]"
"""A column of bodies: an Arrow array (chunked or not) or a numpy array (see module)."""
TextValues: TypeAlias = "pyarrow.Array | pyarrow.ChunkedArray | npt.NDArray[np.generic] | str"
"""A column of tags, keys or property values, or one ``str`` for every row."""

_PLACEHOLDER_VALUE = "x"  # a property name is checked as a name with a valid value


def is_arrow(values: object) -> bool:
    """Whether ``values`` is a pyarrow object (told without importing pyarrow)."""
    return type(values).__module__.startswith("pyarrow")


def _combined(values: pyarrow.Array | pyarrow.ChunkedArray) -> pyarrow.Array:
    """One array of a chunked one (a copy when it has several chunks)."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    return values


def _arrow_column(values: pyarrow.Array | pyarrow.ChunkedArray, name: str) -> Column:
    """The column of an Arrow array of binary or strings (other types cast to binary)."""
    import pyarrow as pa

    array = _combined(values)
    kind = array.type
    if pa.types.is_fixed_size_binary(kind):
        validity, data = array.buffers()
        width = kind.byte_width
        return Column(
            ColumnKind.FIXED, data or b"", None, validity, array.offset, width, len(array)
        )
    if not (
        pa.types.is_binary(kind)
        or pa.types.is_string(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_large_string(kind)
    ):
        try:
            array = array.cast(pa.large_binary())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise IllegalArgumentError(
                "a column must be binary or strings", column=name, type=str(kind)
            ) from exc
        kind = array.type
    large = pa.types.is_large_binary(kind) or pa.types.is_large_string(kind)
    validity, offsets, data = array.buffers()
    return Column(
        ColumnKind.OFFSETS64 if large else ColumnKind.OFFSETS32,
        data or b"",
        offsets,
        validity,
        array.offset,
        0,
        len(array),
    )


def _numpy_column(values: npt.NDArray[np.generic], name: str) -> Column:
    """The column of a numpy array: its rows' bytes, NUL-padded strings without the NULs."""
    array = np.asarray(values)
    if array.ndim == 0 or array.dtype.hasobject:
        raise IllegalArgumentError(
            "a numpy column has rows of fixed-width values, not objects",
            column=name,
            dtype=str(array.dtype),
            ndim=array.ndim,
        )
    if array.dtype.kind == "U":
        array = np.char.encode(array, "utf-8")
    array = np.ascontiguousarray(array)
    rows = array.shape[0]
    width = array.itemsize * (array.size // rows if rows else 0)
    kind = ColumnKind.PADDED if array.dtype.kind == "S" else ColumnKind.FIXED
    return Column(kind, array.reshape(-1).view(np.uint8).data, None, None, 0, width, rows)


def text_column(values: object, name: str, rows: int) -> Column:
    """The column of tags, keys or property values (``TextValues``) named ``name``, of
    ``rows`` rows. Raises IllegalArgumentError for another type or length."""
    if isinstance(values, str):
        return Column(ColumnKind.CONSTANT, values.encode(), None, None, 0, 0, rows)
    if is_arrow(values):
        column = _arrow_column(values, name)
    elif isinstance(values, np.ndarray):
        column = _numpy_column(values, name)
    else:
        raise IllegalArgumentError(
            "a column is an Arrow array, a numpy array or a str",
            column=name,
            type=type(values).__name__,
        )
    if column.length != rows:
        raise IllegalArgumentError(
            "the columns differ in length", column=name, length=column.length, rows=rows
        )
    return column


def _check_name(name: str) -> bytes:
    """A property name, checked as ``Message.put_user_property`` checks one (and without
    NUL, which the broker refuses in a property string)."""
    check_user_property(name, _PLACEHOLDER_VALUE)
    if "\x00" in name:
        raise MessageIllegalError("a property name must not contain \\x00", name=name)
    return name.encode()


def _property_map(values: pyarrow.Array | pyarrow.ChunkedArray, rows: int) -> PropertyMap:
    """The property map of an Arrow ``map<string, string>`` array, every name it holds
    checked once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _combined(values)
    if not pa.types.is_map(array.type):
        raise IllegalArgumentError(
            "properties are a mapping of names to columns, or an Arrow map array",
            type=str(array.type),
        )
    if len(array) != rows:
        raise IllegalArgumentError(
            "the columns differ in length", column="properties", length=len(array), rows=rows
        )
    offsets = array.offsets
    start, stop = offsets[0].as_py(), offsets[-1].as_py()
    for name in pc.unique(array.keys.slice(start, stop - start)).to_pylist():
        _check_name(name)
    validity, entry_offsets = array.buffers()[:2]
    return PropertyMap(
        ColumnKind.OFFSETS32,
        entry_offsets,
        validity,
        array.offset,
        _arrow_column(array.keys, "properties"),
        _arrow_column(array.items, "properties"),
    )


def column_set(
    bodies: ColumnValues,
    tags: TextValues | None,
    keys: TextValues | None,
    properties: Mapping[str, TextValues] | pyarrow.Array | pyarrow.ChunkedArray | None,
) -> ColumnSet:
    """The columns of a send (see module). Raises IllegalArgumentError for a column of
    another type or length, MessageIllegalError for a property name a message cannot have."""
    if isinstance(bodies, str):
        raise IllegalArgumentError("the bodies are a column, not one str")
    if is_arrow(bodies):
        body_column = _arrow_column(bodies, "bodies")
    elif isinstance(bodies, np.ndarray):
        body_column = _numpy_column(bodies, "bodies")
    else:
        raise IllegalArgumentError(
            "the bodies are an Arrow array or a numpy array", type=type(bodies).__name__
        )
    rows = body_column.length
    named: tuple[tuple[bytes, Column], ...] = ()
    property_map = None
    if isinstance(properties, Mapping):
        named = tuple(
            (_check_name(name), text_column(values, f"properties[{name!r}]", rows))
            for name, values in properties.items()
        )
    elif properties is not None:
        property_map = _property_map(properties, rows)
    return ColumnSet(
        body_column,
        None if tags is None else text_column(tags, "tags", rows),
        None if keys is None else text_column(keys, "keys", rows),
        named,
        property_map,
    )


def row_values(
    columns: ColumnSet, row: int
) -> tuple[bytes, str | None, str | None, dict[str, str]]:
    """Row ``row`` as a message's body, tag, keys and properties (for a selector that takes a
    ``Message``): Python objects, one row at a time."""

    def text(column: Column | None, index: int = row) -> str | None:
        value = None if column is None else column_value(column, index)
        return None if value is None else value.decode(errors="replace")

    properties: dict[str, str] = {}
    for name, values in columns.properties:
        value = text(values)
        if value is not None:
            properties[name.decode()] = value
    property_map = columns.property_map
    if property_map is not None:
        for entry in map_entries(columns, row):
            entry_name, entry_value = (
                text(property_map.keys, entry),
                text(property_map.values, entry),
            )
            if entry_name is not None and entry_value is not None:
                properties[entry_name] = entry_value
    body = column_value(columns.bodies, row) or b""
    return body, text(columns.tags), text(columns.keys), properties
