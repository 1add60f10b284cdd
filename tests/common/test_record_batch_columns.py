"""The columnar encoder (``common/record_batch/_columns.c``) agrees with its Python reference
(``encode_column_batch_py``, over ``encode_batch_py``) on every column layout, row selection,
limit and refusal, and never reads outside a buffer."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.common import hash_code, record_batch
from aeromq.common.record_batch import (
    BatchCheck,
    BatchLimits,
    Column,
    ColumnKind,
    ColumnProblem,
    ColumnSet,
    PropertyMap,
    RecordBatch,
    check_batch,
    column_value,
    describe_row_problem,
    encode_column_batch,
    encode_column_batch_py,
    hash_column,
    hash_column_py,
    read_producer_state,
    stored_properties,
)
from aeromq.common.record_batch import _native as native
from tests.common.test_record_batch_header import _enum

TOPIC = b"ColumnTopic"
HOST = bytes((127, 0, 0, 1)) + struct.pack("<i", 10911)
HEAD = b"7F00000100A1B2C3D4E5F60700112233"[:28]
WIDE = BatchLimits(1 << 20, 1 << 22, 1 << 22, 1 << 24)


def arrow_column(array: pa.Array) -> Column:
    """A column of an Arrow binary or string array (large or not), as the producer makes it."""
    validity, offsets, data = array.buffers()
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    kind = ColumnKind.OFFSETS64 if large else ColumnKind.OFFSETS32
    return Column(kind, data or b"", offsets, validity, array.offset, 0, len(array))


def encode_both(columns: ColumnSet, rows: Any = None, **kwargs: Any) -> Any:
    """The C and Python outcomes of one call: (batch bytes or None, position or row, code)."""
    stop = kwargs.pop("stop", None)
    if stop is None:
        stop = len(rows) if rows is not None else columns.bodies.length
    arguments: dict[str, Any] = {
        "born_timestamp_ms": 1_700_000_000_000,
        "born_host": HOST,
        "unique_head": HEAD,
        "unique_counter": 65_530,
    }
    arguments.update(kwargs)
    limits = arguments.pop("limits", WIDE)
    position = arguments.pop("position", 0)
    c = encode_column_batch(TOPIC, columns, rows, position, stop, limits, **arguments)
    py = encode_column_batch_py(TOPIC, columns, rows, position, stop, limits, **arguments)
    c = (None if c[0] is None else bytes(c[0]), c[1], c[2])
    py = (None if py[0] is None else bytes(py[0]), py[1], py[2])
    assert c == py
    return c


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_values = st.one_of(st.none(), _text, st.sampled_from(["", " ", "a b", "x|y", "\x01", "\u3000"]))
_types = st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.large_binary()])


def _array(values: list[str | None], kind: pa.DataType, cut: int) -> pa.Array:
    """``values`` as an array of ``kind`` that is a slice (a non-zero Arrow offset)."""
    encoded = [None if v is None else v.encode() for v in values]
    padded = [b"pad"] * cut + encoded
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pa.array([None if v is None else v.decode() for v in padded], kind)[cut:]
    return pa.array(padded, kind)[cut:]


@st.composite
def _column_sets(draw: st.DrawFn) -> tuple[ColumnSet, Any]:
    count = draw(st.integers(1, 12))
    cut = draw(st.integers(0, 3))
    bodies = draw(
        st.lists(st.one_of(st.binary(min_size=1, max_size=12), st.just(b"")), min_size=count,
                 max_size=count)
    )  # fmt: skip
    body_kind = draw(st.sampled_from(["binary", "large", "fixed", "padded"]))
    if body_kind in ("fixed", "padded"):
        width = draw(st.integers(1, 6))
        matrix = np.frombuffer(draw(st.binary(min_size=count * width, max_size=count * width)),
                               np.uint8).reshape(count, width)  # fmt: skip
        kind = ColumnKind.FIXED if body_kind == "fixed" else ColumnKind.PADDED
        body_column = Column(kind, matrix.tobytes(), None, None, 0, width, count)
    else:
        kind_type = pa.binary() if body_kind == "binary" else pa.large_binary()
        with_nulls = [None if b == b"" and draw(st.booleans()) else b for b in bodies]
        body_column = arrow_column(pa.array([b"pad"] * cut + with_nulls, kind_type)[cut:])

    def strings() -> Column:
        values = draw(st.lists(_values, min_size=count, max_size=count))
        return arrow_column(_array(values, draw(_types), cut))

    tags = strings() if draw(st.booleans()) else None
    if draw(st.booleans()):
        tags = Column(ColumnKind.CONSTANT, draw(_text).encode(), None, None, 0, 0, count)
    keys = strings() if draw(st.booleans()) else None
    names = draw(st.lists(st.sampled_from([b"color", b"n", b"\xc3\xa9t\xc3\xa9"]), max_size=2,
                          unique=True))  # fmt: skip
    properties = tuple((name, strings()) for name in names)
    property_map = None
    if draw(st.booleans()):
        maps = [
            None
            if draw(st.integers(0, 5)) == 0
            else [
                (draw(st.sampled_from(["a", "b", "zz"])), draw(_values))
                for _ in range(draw(st.integers(0, 3)))
            ]
            for _ in range(count)
        ]
        array = pa.array(maps, pa.map_(pa.string(), pa.string()))
        offsets = array.offsets
        property_map = PropertyMap(
            ColumnKind.OFFSETS32,
            offsets.buffers()[1],
            array.buffers()[0],
            array.offset,
            arrow_column(array.keys),
            arrow_column(array.items),
        )
    rows = None
    if draw(st.booleans()):
        rows = np.array(draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=20)),
                        np.int64)  # fmt: skip
    return ColumnSet(body_column, tags, keys, properties, property_map), rows


@given(_column_sets(), st.integers(1, 5), st.integers(60, 400), st.booleans())
def test_should_encode_the_same_bytes_or_refuse_the_same_row_in_c_as_in_python(
    made: tuple[ColumnSet, Any], max_records: int, max_batch_bytes: int, with_ids: bool
) -> None:
    columns, rows = made
    limits = BatchLimits(max_records, 8, 40, max_batch_bytes)
    stop = len(rows) if rows is not None else columns.bodies.length
    position = 0
    while position < stop:
        batch, position_or_row, code = encode_both(
            columns, rows, limits=limits, position=position, unique_head=HEAD if with_ids else None
        )
        if batch is None:
            assert code < 0
            assert describe_row_problem(columns, position_or_row, code, 8)
            return
        assert check_batch(batch, topic=TOPIC) == (BatchCheck.OK, "")
        assert position_or_row > position
        view = RecordBatch(batch)
        assert view.count == position_or_row - position <= max_records
        position = position_or_row


def test_should_write_a_rows_properties_as_a_message_keeps_them() -> None:
    columns = ColumnSet(
        arrow_column(pa.array([b"a", b"b", b"c"])),
        arrow_column(pa.array(["TagA", None, ""])),
        arrow_column(pa.array(["  k1 \u3000k2 ", None, "k3"])),
        ((b"color", arrow_column(pa.array(["red", None, "blue"]))),),
        None,
    )
    batch, next_position, code = encode_both(columns, unique_counter=0xFFFF)
    assert (next_position, code) == (3, 0) and batch is not None
    view = RecordBatch(batch)
    assert [view.tag(i) for i in range(3)] == ["TagA", None, None]
    first = stored_properties(view, 0)
    assert list(first) == ["KEYS", "WAIT", "color", "UNIQ_KEY", "TAGS"]
    assert first["KEYS"] == "k1 k2" and first["color"] == "red"
    assert [stored_properties(view, i)["UNIQ_KEY"] for i in range(3)] == [
        HEAD.decode() + counter for counter in ("FFFF", "0000", "0001")
    ]
    assert stored_properties(view, 1) == {"WAIT": "true", "UNIQ_KEY": HEAD.decode() + "0000"}


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("body", None, ColumnProblem.EMPTY_BODY),
        ("body", "", ColumnProblem.EMPTY_BODY),
        ("body", "x" * 9, ColumnProblem.BODY_TOO_LARGE),
        ("tags", "a b", ColumnProblem.BAD_TAG),
        ("tags", "a|b", ColumnProblem.BAD_TAG),
        ("tags", "a\u00a0b", ColumnProblem.BAD_TAG),
        ("keys", "k\x02", ColumnProblem.BAD_KEY),
        ("color", " \u2003", ColumnProblem.BAD_PROPERTY),
        ("color", "", ColumnProblem.BAD_PROPERTY),
        ("color", "a\x01b", ColumnProblem.BAD_PROPERTY),
        ("color", "x" * 40_000, ColumnProblem.PROPERTIES_TOO_LONG),
    ],
)
def test_should_refuse_the_first_row_that_cannot_be_a_message(
    field: str, value: str | None, problem: ColumnProblem
) -> None:
    values: dict[str, list[str | None]] = {f: ["ok", "ok", "ok"] for f in ("body", "tags", "keys")}
    values["color"] = ["ok", "ok", "ok"]
    values[field][1] = value
    values[field][2] = value
    columns = ColumnSet(
        arrow_column(pa.array([None if v is None else v.encode() for v in values["body"]])),
        arrow_column(pa.array(values["tags"])),
        arrow_column(pa.array(values["keys"])),
        ((b"color", arrow_column(pa.array(values["color"]))),),
    )
    limits = BatchLimits(100, 8, 1 << 20, 1 << 20)
    assert encode_both(columns, limits=limits) == (None, 1, problem.value)
    assert describe_row_problem(columns, 1, problem, 8)


def test_should_refuse_a_tag_or_value_that_is_not_utf8() -> None:
    columns = ColumnSet(
        arrow_column(pa.array([b"a", b"b"])), arrow_column(pa.array([b"ok", b"\xff"]))
    )
    assert encode_both(columns) == (None, 1, ColumnProblem.NOT_UTF8.value)


def test_should_refuse_offsets_outside_the_data_without_reading_them() -> None:
    offsets = np.array([0, 1, 1_000_000], np.int32)
    columns = ColumnSet(Column(ColumnKind.OFFSETS32, b"ab", offsets.tobytes(), None, 0, 0, 2))
    assert encode_both(columns) == (None, 1, ColumnProblem.BAD_COLUMN.value)
    backwards = np.array([0, 2, 1], np.int32)
    columns = ColumnSet(Column(ColumnKind.OFFSETS32, b"ab", backwards.tobytes(), None, 0, 0, 2))
    assert encode_both(columns) == (None, 1, ColumnProblem.BAD_COLUMN.value)
    rows = np.array([0, 5], np.int64)
    good = ColumnSet(arrow_column(pa.array([b"a", b"b"])))
    assert encode_both(good, rows) == (None, 5, ColumnProblem.BAD_COLUMN.value)


@pytest.mark.parametrize(
    "column",
    [
        Column(ColumnKind.OFFSETS32, b"ab", np.zeros(2, np.int32).tobytes(), None, 0, 0, 2),
        Column(ColumnKind.OFFSETS64, b"ab", np.zeros(3, np.int32).tobytes(), None, 0, 0, 2),
        Column(ColumnKind.FIXED, b"abc", None, None, 0, 2, 2),
        Column(ColumnKind.OFFSETS32, b"ab", np.zeros(3, np.int32).tobytes(), b"", 0, 0, 2),
        Column(ColumnKind.OFFSETS32, b"ab", None, None, 0, 0, 2),
        Column(9, b"ab", None, None, 0, 0, 2),
    ],
)
def test_should_raise_for_a_column_whose_buffers_are_shorter_than_it_says(column: Column) -> None:
    with pytest.raises(ValueError):
        native.encode_columns(
            TOPIC, column, None, None, (), None, None, 0, 2, WIDE, 0, HOST, None, 0, None, 0, 0
        )


def test_should_cut_the_rows_into_batches_within_the_limits() -> None:
    count = 1_000
    bodies = pa.array([b"%05d" % i for i in range(count)])
    columns = ColumnSet(arrow_column(bodies))
    limits = BatchLimits(300, 100, 1_500, 1 << 20)
    position, seen = 0, []
    while position < count:
        batch, position, code = encode_both(columns, limits=limits, position=position)
        assert code == 0 and batch is not None
        view = RecordBatch(batch)
        assert view.count == 300 or sum(view.body_lengths) <= 1_500
        seen += [view.body(i) for i in range(view.count)]
    assert seen == [b"%05d" % i for i in range(count)]


def test_should_take_one_row_over_the_batch_limit_alone() -> None:
    columns = ColumnSet(arrow_column(pa.array([b"x" * 50, b"y"])))
    batch, position, _ = encode_both(columns, limits=BatchLimits(10, 100, 100, 60))
    assert position == 1 and batch is not None and RecordBatch(batch).count == 1


def test_should_carry_the_producer_state_when_given_one() -> None:
    columns = ColumnSet(arrow_column(pa.array([b"a", b"b"])))
    batch, _, _ = encode_both(columns, producer_id=42, base_sequence=7, producer_epoch=3)
    assert batch is not None
    state = read_producer_state(batch)
    assert state is not None and tuple(state) == (42, 7, 3)
    assert check_batch(batch) == (BatchCheck.OK, "")


def test_should_read_fixed_width_rows_and_numpy_strings() -> None:
    matrix = np.arange(1, 10, dtype=np.uint8).reshape(3, 3)
    fixed = Column(ColumnKind.FIXED, matrix, None, None, 0, 3, 3)
    assert [column_value(fixed, i) for i in range(3)] == [bytes(row) for row in matrix]
    names = np.array([b"ab", b"c", b"def"], "S3")
    padded = Column(ColumnKind.PADDED, names, None, None, 0, 3, 3)
    batch, _, _ = encode_both(ColumnSet(fixed, None, None, ((b"n", padded),)), stop=3)
    assert batch is not None
    view = RecordBatch(batch)
    assert [stored_properties(view, i)["n"] for i in range(3)] == ["ab", "c", "def"]


def test_should_encode_many_rows_with_the_gil_released_as_a_few() -> None:
    count = 5_000
    bodies = pa.array([b"body-%d" % i for i in range(count)], pa.large_binary())
    tags = pa.array([f"T{i % 7}" if i % 3 else None for i in range(count)])
    columns = ColumnSet(arrow_column(bodies), arrow_column(tags))
    batch, position, code = encode_both(columns)
    assert (position, code) == (count, 0) and batch is not None
    assert check_batch(batch, topic=TOPIC) == (BatchCheck.OK, "")


@given(st.lists(st.integers(-5, 40), min_size=4, max_size=4), st.binary(max_size=30))
def test_should_agree_with_python_on_any_offsets_and_bytes(offsets: list[int], data: bytes) -> None:
    column = Column(
        ColumnKind.OFFSETS32, data, np.array(offsets, np.int32).tobytes(), None, 0, 0, 3
    )
    encode_both(ColumnSet(column, column, column, ((b"n", column),)))


def test_should_number_kinds_and_problems_in_c_as_in_python() -> None:
    source = (Path(record_batch.__file__).parent / "_columns.c").read_text()
    assert _enum(source, "KIND_OFFSETS32") == [(f"KIND_{k.name}", k.value) for k in ColumnKind]
    assert _enum(source, "PROBLEM_OK") == [(f"PROBLEM_{p.name}", p.value) for p in ColumnProblem]


@given(st.lists(_values, min_size=1, max_size=8), _types, st.booleans())
def test_should_hash_each_rows_key_in_c_as_in_python(
    values: list[str | None], kind: pa.DataType, first_key: bool
) -> None:
    column = arrow_column(_array(values, kind, 1))
    c_hashes, c_row, c_problem = hash_column(column, first_key)
    py_hashes, py_row, py_problem = hash_column_py(column, first_key)
    assert (c_row, c_problem) == (py_row, py_problem)
    end = c_row if c_row >= 0 else len(values)
    assert c_hashes[:end].tolist() == py_hashes[:end].tolist()
    for row in range(end):
        value = values[row]
        assert value is not None
        assert c_hashes[row] == hash_code(value.split()[0] if first_key else value)


def test_should_name_the_first_row_without_a_key_to_hash() -> None:
    column = arrow_column(pa.array(["a b", "  ", None]))
    assert hash_column(column, True)[1:] == (1, ColumnProblem.NO_KEY.value)
    assert hash_column(column, False)[1:] == (2, ColumnProblem.NO_KEY.value)
