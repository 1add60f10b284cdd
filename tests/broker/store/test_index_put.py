"""The native write of the key index's queued entries (``broker/store/_index_put.c``) held to the
Python path, its reference (``IndexFile.put`` key by key): the same hashes, the same bytes in the
file, the same count written when the file fills; and a service draining through it finds every
key by query, across files."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.broker.store import _index_file
from aeromq.broker.store._index_file import IndexFile, IndexItem, item_hashes, key_hash
from aeromq.broker.store._index_service import IndexService

pytestmark = pytest.mark.skipif(_index_file._native is None, reason="_index_put is not built")

_keys = st.one_of(
    st.lists(st.text(min_size=0, max_size=12), min_size=0, max_size=3),
    st.text(min_size=0, max_size=12).map(str.encode),  # a unique key's UTF-8 bytes
)
_items = st.lists(
    st.tuples(
        st.sampled_from(("TopicA", "Тема", "")),
        _keys,
        st.integers(0, 1 << 40),
        st.integers(0, 10_000_000),
    ),
    max_size=40,
)


@settings(deadline=None)
@given(topic=st.text(max_size=20), key=st.text(max_size=20))
def test_should_hash_topic_and_key_as_zlib_crc32_of_their_utf8(
    tmp_path_factory: pytest.TempPathFactory, topic: str, key: str
) -> None:
    index_file = IndexFile.create(tmp_path_factory.mktemp("hash"), 0, 0, 1, 4)
    try:
        for keys in ([key], key.encode()):  # key texts, or a unique key's UTF-8 bytes
            assert index_file.put_entries([(topic, keys, 7, 0)]) == 1
        entries = struct.unpack_from("<iqiiiqii", index_file.mapped.mm, 40 + 4 + 20)
        expected = zlib.crc32(f"{topic}#{key}".encode()) & 0x7FFFFFFF
        assert entries[0] == entries[4] == key_hash(topic, key) == expected
    finally:
        index_file.close()


@settings(max_examples=60, deadline=None)
@given(items=_items, slot_count=st.integers(1, 9), entry_count=st.integers(1, 30))
def test_should_write_the_same_bytes_as_the_python_path_and_stop_where_it_stops(
    tmp_path_factory: pytest.TempPathFactory,
    items: list[IndexItem],
    slot_count: int,
    entry_count: int,
) -> None:
    root = tmp_path_factory.mktemp("index-put")
    files = [
        IndexFile.create(root / name, 4096, 1_000_000, slot_count, entry_count)
        for name in ("native", "python")
    ]
    try:
        native, python = files
        wrote = native.put_entries(items)
        assert wrote == python.put_entries(items, native=False)
        fits = 0  # items whose keys fit in the free entries, in order
        free = entry_count - 1
        for topic, keys, _, _ in items:
            free -= len(item_hashes(topic, keys))
            if free < 0:
                break
            fits += 1
        assert wrote == fits
        assert native.mapped.mm[:] == python.mapped.mm[:]
        assert (native.entries_used, native.end_timestamp_ms, native.end_physical_offset) == (
            python.entries_used,
            python.end_timestamp_ms,
            python.end_physical_offset,
        )
    finally:
        for index_file in files:
            index_file.close()


def test_should_refuse_an_index_map_smaller_than_its_layout(tmp_path: Path) -> None:
    index_file = IndexFile.create(tmp_path, 0, 0, slot_count=5, entry_count=4)
    native = _index_file._native
    assert native is not None
    with pytest.raises(ValueError, match="index map of"):
        native.put_entries(index_file.mapped.mm, 5, 400, [("T", ["k"], 1, 1)])
    with pytest.raises(TypeError, match="index item"):
        native.put_entries(index_file.mapped.mm, 5, 4, [("T", ["k"], 1)])
    assert index_file.entries_used == 1  # nothing written
    index_file.close()


def test_should_find_every_key_drained_through_the_native_path_across_files(
    tmp_path: Path,
) -> None:
    service = IndexService(tmp_path, slot_count=11, entry_count=50)
    service.load()
    for i in range(300):
        keys: list[str] | bytes = f"u-{i}".encode() if i % 3 else [f"k{i}", "shared"]
        service.put("T", keys, i * 100, 1_000_000 + i)
    assert service.drain() == 300
    assert len(service.files) > 5  # rolled, one item key by key at each roll
    for i in range(300):
        key = f"u-{i}" if i % 3 else f"k{i}"
        assert service.query("T", key, 10, 0, 2_000_000) == [i * 100]
    assert service.query("T", "shared", 1_000, 0, 2_000_000) == [
        i * 100 for i in reversed(range(0, 300, 3))
    ]
    service.close()
