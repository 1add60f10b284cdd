"""The record batch from columns: :func:`encode_column_batch`, one batch of rows straight from
the buffers of a column set (``columns.py``), with no Python object per row.

A row is a message: its body, its tag, and as properties, in the order a
:class:`~client.Message` of the row keeps them, ``KEYS`` (the keys split on whitespace, joined
by one space), ``WAIT=true``, the named properties, the map's entries and ``UNIQ_KEY``. A null
tag, key or property value is none; a null or empty body is refused.

Each call encodes the rows ``rows[position:]`` (``position..`` without ``rows``) that fit one
batch under :class:`~common.record_batch.BatchLimits`, at least one, and says where the next
batch starts; or it names the first row that cannot be a message (a
:class:`~common.record_batch.ColumnProblem`, checked as ``Message`` checks its tag, keys and
properties, as UTF-8, and keys and values without NUL, which the broker refuses in a property
string). The unique ids are ``unique_head`` and a 4-digit hex counter from ``unique_counter``
(wrapping at 16 bits), as :class:`~common.UniqueMessageIdGenerator` makes them.
:func:`hash_column` gives each row's Java hash of its first key, for a selector by key.

Caller: the producer's columnar send (``producer/_columns.py``), once per batch. One pass in C
(``_columns.c``) when it is built; :func:`encode_column_batch_py` is the same over
:func:`~common.record_batch.encode_batch_py` (the same bytes as a batch of the rows'
``Message``\\ s): the reference a test holds the C code to, the fallback, and, with
:func:`describe_row_problem`, the words of a refusal. No I/O.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from aeromq.common._java_string import hash_code
from aeromq.common._properties import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
)
from aeromq.common._validators import tag_problem
from aeromq.common.record_batch.columns import (
    BatchLimits,
    Column,
    ColumnProblem,
    ColumnSet,
    RowNumbers,
    column_value,
    map_entries,
)
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

__all__ = [
    "EncodedColumns",
    "describe_row_problem",
    "encode_column_batch",
    "encode_column_batch_py",
    "hash_column",
    "hash_column_py",
]


EncodedColumns = tuple[bytes | None, int, int]
"""What :func:`encode_column_batch` returns: ``(batch, next position, 0)``, or ``(None, row,
problem)`` (a :class:`ColumnProblem`)."""

_WAIT: Final = (
    f"{PROPERTY_WAIT_STORE_MSG_OK}{NAME_VALUE_SEPARATOR}true{PROPERTY_SEPARATOR}".encode()
)
_SEPARATORS: Final = ("\x00", NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR)
"""What no key or property value holds: the separators, and NUL (the broker's check refuses a
property string with one, though ``Message`` takes it)."""
_HEX_DIGITS: Final = 4


def encode_column_batch(
    topic: bytes,
    columns: ColumnSet,
    rows: RowNumbers | None,
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


class _Refused(NamedTuple):
    """Why a row cannot be a message (the reference returns it where C returns a code)."""

    problem: ColumnProblem
    detail: str


class _Row(NamedTuple):
    """A row as a ``Message`` would hold it: body, tag, property parts (no unique id yet)."""

    body: bytes
    tag: str | None
    parts: list[bytes]


def _text(value: bytes) -> str | None:
    """``value`` decoded, or None when it is not UTF-8."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        return None


def _property(name: bytes, value: bytes) -> bytes | _Refused:
    """``name\\x01value\\x02`` of a value checked as ``Message`` checks it."""
    text = _text(value)
    if text is None:
        return _Refused(ColumnProblem.NOT_UTF8, f"a property value is not UTF-8: value={value!r}")
    if any(separator in text for separator in _SEPARATORS) or not text.strip():
        return _Refused(
            ColumnProblem.BAD_PROPERTY,
            f"a property value must not be blank nor contain \\x00, \\x01 or \\x02: "
            f"name={name.decode(errors='replace')!r} value={text!r}",
        )
    return name + b"\x01" + value + b"\x02"


def _row(columns: ColumnSet, row: int, max_body_length: int) -> _Row | _Refused:
    """Row ``row`` as a ``Message`` would hold it, or why it cannot be one. Raises
    ``ValueError`` when its offsets leave a column's data."""
    body = column_value(columns.bodies, row)
    if not body:
        return _Refused(ColumnProblem.EMPTY_BODY, "the message body is empty")
    if len(body) > max_body_length:
        return _Refused(
            ColumnProblem.BODY_TOO_LARGE,
            f"the message body is over the maximum message size: body_length={len(body)} "
            f"max_message_size={max_body_length}",
        )
    tag = None
    raw = column_value(columns.tags, row) if columns.tags is not None else None
    if raw:
        tag = _text(raw)
        if tag is None:
            return _Refused(ColumnProblem.NOT_UTF8, f"the tag is not UTF-8: tags={raw!r}")
        problem = tag_problem(tag)
        if problem is not None:
            return _Refused(ColumnProblem.BAD_TAG, f"{problem}: tags={tag!r}")
    parts: list[bytes] = []
    raw = column_value(columns.keys, row) if columns.keys is not None else None
    if raw is not None:
        text = _text(raw)
        if text is None:
            return _Refused(ColumnProblem.NOT_UTF8, f"the keys are not UTF-8: keys={raw!r}")
        if any(separator in text for separator in _SEPARATORS):
            return _Refused(
                ColumnProblem.BAD_KEY,
                f"a key must not contain \\x00, \\x01 or \\x02: keys={text!r}",
            )
        keys = " ".join(text.split())
        if keys:
            parts.append(f"{PROPERTY_KEYS}\x01{keys}\x02".encode())
    parts.append(_WAIT)
    for name, values in columns.properties:  # in the C pass's order: a value at a time
        value = column_value(values, row)
        part = b"" if value is None else _property(name, value)
        if isinstance(part, _Refused):
            return part
        parts.append(part)
    property_map = columns.property_map
    for entry in map_entries(columns, row):
        assert property_map is not None  # entries only with a map
        value = column_value(property_map.values, entry)
        if value is None:
            continue
        part = _property(b"", value)
        if isinstance(part, _Refused):
            return part
        entry_name = column_value(property_map.keys, entry)
        if entry_name is None:
            raise ValueError(f"a null name in the property map: row={row}")
        parts.append(entry_name + part)
    return _Row(body, tag, parts)


def encode_column_batch_py(
    topic: bytes,
    columns: ColumnSet,
    rows: RowNumbers | None,
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
    positions = len(rows) if rows is not None else count
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
        row = int(rows[at]) if rows is not None else at
        if not 0 <= row < count:
            return None, row, ColumnProblem.BAD_COLUMN.value
        try:
            found = _row(columns, row, limits.max_body_length)
        except ValueError:  # offsets outside a column's data
            return None, row, ColumnProblem.BAD_COLUMN.value
        if isinstance(found, _Refused):
            return None, row, found.problem.value
        body, tag, parts = found
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
    return bytes(batch), position + len(bodies), ColumnProblem.OK.value


def hash_column(column: Column, first_key: bool) -> tuple[npt.NDArray[np.int32], int, int]:
    """Each row's Java ``String.hashCode`` (of its first key, up to whitespace, with
    ``first_key``: a message's ``keys[0]``), as int32s, for a selector that hashes keys; and
    ``(-1, 0)``, or the first row without a value to hash and why (``NO_KEY``, ``NOT_UTF8``,
    ``BAD_COLUMN``). One pass in C when it is built, else :func:`hash_column_py`."""
    if _native is None:
        return hash_column_py(column, first_key)
    hashes, row, problem = _native.hash_column(column, first_key)
    return np.frombuffer(hashes, np.int32), row, problem


def hash_column_py(column: Column, first_key: bool) -> tuple[npt.NDArray[np.int32], int, int]:
    """:func:`hash_column` in Python: its reference and fallback."""
    hashes = np.zeros(column.length, np.int32)
    for row in range(column.length):
        try:
            value = column_value(column, row)
        except ValueError:
            return hashes, row, ColumnProblem.BAD_COLUMN.value
        if value is None:
            return hashes, row, ColumnProblem.NO_KEY.value
        try:
            text = value.decode()
        except UnicodeDecodeError:
            return hashes, row, ColumnProblem.NOT_UTF8.value
        if first_key:
            split = text.split(maxsplit=1)
            if not split:
                return hashes, row, ColumnProblem.NO_KEY.value
            text = split[0]
        hashes[row] = hash_code(text)  # Java's: a signed 32-bit value
    return hashes, -1, ColumnProblem.OK.value


def describe_row_problem(columns: ColumnSet, row: int, problem: int, max_body_length: int) -> str:
    """Why row ``row`` cannot be a message, in ``key=value`` words (the cold path of a
    refusal that :func:`encode_column_batch` found)."""
    try:
        found = _row(columns, row, max_body_length)
    except (ValueError, IndexError, struct.error):
        return f"the row's offsets leave its column's data: row={row}"
    if isinstance(found, _Refused):
        return found.detail
    body, _tag, parts = found
    if problem == ColumnProblem.PROPERTIES_TOO_LONG:
        return (
            f"the row's properties are over {MAX_PROPERTIES_LENGTH} bytes: "
            f"length={sum(map(len, parts))}"
        )
    return f"refused by the native encoder: problem={problem} body_length={len(body)}"
