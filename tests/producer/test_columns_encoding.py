"""A columnar send's record batch holds the same bytes as the batch of the rows' ``Message``s
(``producer/_batch.py``), given the same unique ids and born time: the two paths store the same
messages."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import Message, UniqueMessageIdGenerator
from aeromq.common.record_batch import BatchLimits, encode_column_batch
from aeromq.producer._batch import encode_messages, pack_born_host
from aeromq.producer._columns_input import column_set

HOST = pack_born_host("127.0.0.1:10911")
HEAD = "7F00000112345678ABCDEF0100000"[:28]
_tag = st.one_of(st.none(), st.text("abcXYZ\u00e9\u4e2d_-", min_size=1, max_size=5))
_keys = st.one_of(st.none(), st.lists(st.text("kK1\u00df", min_size=1, max_size=4), max_size=3))
_value = st.one_of(st.none(), st.text("vV9 \u00e0", min_size=1, max_size=5).filter(str.strip))


@given(
    st.lists(st.tuples(st.binary(min_size=1, max_size=16), _tag, _keys, _value, _value),
             min_size=1, max_size=20),
    st.integers(0, 0xFFFF),
)  # fmt: skip
def test_should_encode_the_bytes_of_the_rows_messages(
    rows: list[tuple[bytes, str | None, list[str] | None, str | None, str | None]], counter: int
) -> None:
    ids = [f"{HEAD}{(counter + i) & 0xFFFF:04X}" for i in range(len(rows))]
    messages = []
    for (body, tag, keys, first, second), unique in zip(rows, ids, strict=True):
        properties = {
            name: value for name, value in (("first", first), ("second", second)) if value
        }
        message = Message("Topic", body, tags=tag, keys=keys or (), properties=properties)
        message.put_system_property("UNIQ_KEY", unique)
        messages.append(message)
    expected, _ = encode_messages(messages, UniqueMessageIdGenerator(), 1_700_000_000_123, HOST)

    columns = column_set(
        pa.array([row[0] for row in rows], pa.binary()),
        pa.array([row[1] for row in rows], pa.string()),
        pa.array([None if row[2] is None else " ".join(row[2]) for row in rows]),
        {
            "first": pa.array([row[3] for row in rows], pa.string()),
            "second": np.array([row[4] or "" for row in rows]) if all(r[4] for r in rows)
            else pa.array([row[4] for row in rows], pa.string()),
        },
    )  # fmt: skip
    batch, position, problem = encode_column_batch(
        b"Topic",
        columns,
        None,
        0,
        len(rows),
        BatchLimits(1000, 1 << 20, 1 << 20, 1 << 22),
        born_timestamp_ms=1_700_000_000_123,
        born_host=HOST,
        unique_head=HEAD.encode(),
        unique_counter=counter,
    )
    assert (position, problem) == (len(rows), 0)
    assert batch == expected
