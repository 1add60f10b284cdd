"""The record batch from columns: :func:`encode_column_batch`, one batch of rows straight from
the buffers of a column set, with no Python object per row.

A column set (:class:`ColumnSet`) is a send's bodies with, optionally, tags, keys, named
property columns and a property map, each a :class:`Column`: Arrow's binary layout (int32 or
int64 offsets, a data buffer, a validity bitmap and the array's offset), fixed-width rows (a
numpy array's rows; numpy's ``S`` strings without their trailing NUL bytes), or one constant
value for every row. A row is a message: its body, its tag, and as properties, in the order a
:class:`~client.Message` of the row keeps them, ``KEYS`` (the keys split on whitespace, joined
by one space), ``WAIT=true``, the named properties, the map's entries and ``UNIQ_KEY``. A null
tag, key or property value is none; a null or empty body is refused.

Each call encodes the rows ``rows[position:]`` (``position..`` without ``rows``) that fit one
batch under :class:`BatchLimits`, at least one, and says where the next batch starts; or it
names the first row that cannot be a message (a :class:`ColumnProblem`, checked as ``Message``
checks its tag, keys and properties, and as UTF-8). The unique ids are ``unique_head`` and a
4-digit hex counter from ``unique_counter`` (wrapping at 16 bits), as
:class:`~common.UniqueMessageIdGenerator` makes them.

Caller: the producer's columnar send (``producer/_columns.py``), once per batch. One pass in C
(``_columns.c``) when it is built; :func:`encode_column_batch_py` is the same over
:func:`~common.record_batch.encode_batch_py` (the same bytes as a batch of the rows'
``Message``\\ s): the reference a test holds the C code to, the fallback, and, with
:func:`describe_row_problem`, the words of a refusal. No I/O.
"""

from __future__ import annotations

import enum
import struct
from typing import TYPE_CHECKING, Final, NamedTuple

from aeromq.common._properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from aeromq.common._validators import tag_problem
from aeromq.common.record_batch.descriptor import (
    MAX_PROPERTIES_LENGTH,
    PRODUCER_STATE_FLAG,
    RECORD_OVERHEAD,
    batch_header_length,
)
from aeromq.common.record_batch.encoder import encode_batch_py

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "BatchLimits",
    "Column",
    "ColumnKind",
    "ColumnProblem",
    "ColumnSet",
    "EncodedColumns",
    "PropertyMap",
    "column_value",
    "describe_row_problem",
    "encode_column_batch",
    "encode_column_batch_py",
]


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


EncodedColumns = tuple[bytearray | None, int, int]
"""What :func:`encode_column_batch` returns: ``(batch, next position, 0)``, or ``(None, row,
problem)`` (a :class:`ColumnProblem`)."""

_WAIT: Final = (
    f"{PROPERTY_WAIT_STORE_MSG_OK}{NAME_VALUE_SEPARATOR}true{PROPERTY_SEPARATOR}".encode()
)
_SEPARATORS: Final = ("\x00", NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR)
"""What no key or property value holds: the separators, and NUL (the broker's check refuses a
property string with one, though ``Message`` takes it)."""
_I32_PAIR: Final = struct.Struct("<ii")
_I64_PAIR: Final = struct.Struct("<qq")
_I64: Final = struct.Struct("<q")
_HEX_DIGITS: Final = 4


def encode_column_batch(
    topic: bytes,
    columns: ColumnSet,
    rows: Buffer | None,
    position: int,
    stop: int,
    limits: BatchLimits,
    *,
    born_timestamp_ms: int,
    born_host: bytes,
    unique_head: bytes | None,
    unique_counter: int = 0,
    producer_id: int | None = None,
    base_sequence: int = 0,
    producer_epoch: int = 0,
) -> EncodedColumns:
    """The batch of the rows from ``position`` (of ``rows``, int64 row numbers, or the rows
    themselves without it) up to ``stop`` that ``limits`` allow, at least one, born at
    ``born_timestamp_ms`` on ``born_host``; or the first of them that cannot be a message (see
    the module). With ``producer_id``, the batch carries that producer state, as
    :func:`~common.record_batch.encode_batch` writes it.

    One pass in C (``_columns.c``) when it is built, else :func:`encode_column_batch_py`;
    both give the same bytes. Raises ``ValueError`` or ``TypeError`` for columns that do not
    describe their buffers (shorter buffers, other lengths), never reads past a buffer.
    """
    if _native is None:
        return encode_column_batch_py(
            topic,
            columns,
            rows,
            position,
            stop,
            limits,
            born_timestamp_ms=born_timestamp_ms,
            born_host=born_host,
            unique_head=unique_head,
            unique_counter=unique_counter,
            producer_id=producer_id,
            base_sequence=base_sequence,
            producer_epoch=producer_epoch,
        )
    return _native.encode_columns(
        topic,
        columns.bodies,
        columns.tags,
        columns.keys,
        columns.properties,
        columns.property_map,
        rows,
        position,
        stop,
        limits,
        born_timestamp_ms,
        born_host,
        unique_head,
        unique_counter,
        producer_id,
        base_sequence,
        producer_epoch,
    )


class _BadColumn(Exception):
    """A value's offsets leave its data (a row that :data:`ColumnProblem.BAD_COLUMN` names)."""


def column_value(column: Column, index: int) -> bytes | None:
    """Value ``index`` of ``column``: its bytes, or None for a null. Raises ``ValueError``
    when its offsets leave the data."""
    try:
        return _value(column, index)
    except _BadColumn:
        raise ValueError(f"the value's offsets leave its data: index={index}") from None


def _value(column: Column, index: int) -> bytes | None:
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
        raise _BadColumn
    value = bytes(data[start:stop])
    return value.rstrip(b"\x00") if column.kind == ColumnKind.PADDED else value


def _map_entries(columns: ColumnSet, row: int) -> range:
    """Row ``row``'s entries of the property map (none without one, or for a null row)."""
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
        raise _BadColumn
    return range(start, stop)


class _RowProblem(Exception):
    def __init__(self, problem: ColumnProblem, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem
        self.detail = detail


def _text(value: bytes, what: str) -> str:
    try:
        return value.decode()
    except UnicodeDecodeError:
        raise _RowProblem(ColumnProblem.NOT_UTF8, f"{what} is not UTF-8: {value!r}") from None


def _property(name: bytes, value: bytes | None) -> bytes:
    """``name\\x01value\\x02`` of a value checked as ``Message`` checks it (b"" for None)."""
    if value is None:
        return b""
    text = _text(value, f"property {name!r}")
    if any(separator in text for separator in _SEPARATORS) or not text.strip():
        raise _RowProblem(
            ColumnProblem.BAD_PROPERTY,
            f"a property value must not be blank nor contain \\x00, \\x01 or \\x02: "
            f"name={name.decode(errors='replace')!r} value={text!r}",
        )
    return name + b"\x01" + value + b"\x02"


def _row(
    columns: ColumnSet, row: int, max_body_length: int
) -> tuple[bytes, str | None, list[bytes]]:
    """Row ``row``'s body, tag and property parts (the unique id not yet), as ``Message``
    would hold them, or :class:`_RowProblem`."""
    body = _value(columns.bodies, row)
    if not body:
        raise _RowProblem(ColumnProblem.EMPTY_BODY, "the message body is empty")
    if len(body) > max_body_length:
        raise _RowProblem(
            ColumnProblem.BODY_TOO_LARGE,
            f"the message body is over the maximum message size: body_length={len(body)} "
            f"max_message_size={max_body_length}",
        )
    tag = None
    raw = _value(columns.tags, row) if columns.tags is not None else None
    if raw:
        tag = _text(raw, "the tag")
        problem = tag_problem(tag)
        if problem is not None:
            raise _RowProblem(ColumnProblem.BAD_TAG, f"{problem}: tags={tag!r}")
    parts: list[bytes] = []
    raw = _value(columns.keys, row) if columns.keys is not None else None
    if raw is not None:
        text = _text(raw, "the keys")
        if any(separator in text for separator in _SEPARATORS):
            raise _RowProblem(
                ColumnProblem.BAD_KEY,
                f"a key must not contain \\x00, \\x01 or \\x02: keys={text!r}",
            )
        keys = " ".join(text.split())
        if keys:
            parts.append(f"{PROPERTY_KEYS}\x01{keys}\x02".encode())
    parts.append(_WAIT)
    for name, values in columns.properties:
        parts.append(_property(name, _value(values, row)))
    if columns.property_map is not None:
        property_map = columns.property_map
        for entry in _map_entries(columns, row):
            value = _value(property_map.values, entry)
            if value is None:
                continue
            part = _property(b"", value)
            entry_name = _value(property_map.keys, entry)
            if entry_name is None:
                raise _BadColumn
            parts.append(entry_name + part)
    return body, tag, parts


def encode_column_batch_py(
    topic: bytes,
    columns: ColumnSet,
    rows: Buffer | None,
    position: int,
    stop: int,
    limits: BatchLimits,
    *,
    born_timestamp_ms: int,
    born_host: bytes,
    unique_head: bytes | None,
    unique_counter: int = 0,
    producer_id: int | None = None,
    base_sequence: int = 0,
    producer_epoch: int = 0,
) -> EncodedColumns:
    """:func:`encode_column_batch` in Python: the reference of the C encoder, and its
    fallback (a Python object per row, over :func:`~common.record_batch.encode_batch_py`)."""
    count = columns.bodies.length
    positions = len(memoryview(rows).cast("B")) // 8 if rows is not None else count
    if not 0 <= position < stop <= positions:
        raise ValueError(f"no rows to encode: position={position} stop={stop}")
    unique_length = (
        len(PROPERTY_UNIQ_KEY) + len(unique_head) + _HEX_DIGITS + 2
        if unique_head is not None
        else 0
    )
    attributes = 0 if producer_id is None else PRODUCER_STATE_FLAG
    total = batch_header_length(len(topic), attributes)
    bodies: list[bytes] = []
    tags: list[str | None] = []
    properties: list[bytes] = []
    body_total = 0
    for at in range(position, stop):
        row = int(_I64.unpack_from(rows, 8 * at)[0]) if rows is not None else at
        if not 0 <= row < count:
            return None, row, ColumnProblem.BAD_COLUMN.value
        try:
            body, tag, parts = _row(columns, row, limits.max_body_length)
        except _RowProblem as problem:
            return None, row, problem.problem.value
        except _BadColumn:
            return None, row, ColumnProblem.BAD_COLUMN.value
        property_length = sum(map(len, parts)) + unique_length
        if property_length > MAX_PROPERTIES_LENGTH:
            return None, row, ColumnProblem.PROPERTIES_TOO_LONG.value
        tag_length = len(tag.encode()) if tag else 0
        record = RECORD_OVERHEAD + len(body) + tag_length + property_length
        if bodies and (
            len(bodies) >= limits.max_records
            or body_total + len(body) > limits.max_body_total
            or total + record > limits.max_batch_bytes
        ):
            break
        if unique_head is not None:
            counter = (unique_counter + len(bodies)) & 0xFFFF
            unique = unique_head + f"{counter:04X}".encode()
            parts.append(PROPERTY_UNIQ_KEY.encode() + b"\x01" + unique + b"\x02")
        bodies.append(body)
        tags.append(tag)
        properties.append(b"".join(parts))
        body_total += len(body)
        total += record
    batch = encode_batch_py(
        topic,
        bodies,
        tags,
        properties,
        born_timestamp_ms=born_timestamp_ms,
        born_host=born_host,
        producer_id=producer_id,
        base_sequence=base_sequence,
        producer_epoch=producer_epoch,
    )
    return batch, position + len(bodies), ColumnProblem.OK.value


def describe_row_problem(columns: ColumnSet, row: int, problem: int, max_body_length: int) -> str:
    """Why row ``row`` cannot be a message, in ``key=value`` words (the cold path of a
    refusal that :func:`encode_column_batch` found)."""
    try:
        body, _tag, parts = _row(columns, row, max_body_length)
    except _RowProblem as found:
        return found.detail
    except (_BadColumn, IndexError, struct.error):
        return f"the row's offsets leave its column's data: row={row}"
    if problem == ColumnProblem.PROPERTIES_TOO_LONG:
        return (
            f"the row's properties are over {MAX_PROPERTIES_LENGTH} bytes: "
            f"length={sum(map(len, parts))}"
        )
    return f"refused by the native encoder: problem={problem} body_length={len(body)}"
