from __future__ import annotations

import json
from pathlib import Path

import pytest

from aeromq.broker import InvalidArgumentError, StoreError, UnknownTopicError
from aeromq.broker.store import (
    ConsumerOffsetManager,
    TopicConfig,
    TopicConfigManager,
    TopicFilterType,
)
from aeromq.broker.store._atomic_file import read_json, write_atomically
from aeromq.broker.store._checkpoint import Checkpoint, IndexMark
from aeromq.common import PERM_READ, PERM_WRITE


def test_should_replace_a_file_atomically_and_ignore_interrupted_writes(tmp_path: Path) -> None:
    target = tmp_path / "config" / "table.json"
    write_atomically(target, b'{"a": 1}')
    assert read_json(target) == {"a": 1}
    leftover = target.with_name("table.json.999.tmp")
    leftover.write_bytes(b'{"a": 2')  # a writer died before its rename
    assert read_json(target) == {"a": 1}
    assert not leftover.exists()
    assert read_json(tmp_path / "missing.json") is None
    target.write_bytes(b"{not json")
    with pytest.raises(StoreError, match="not valid JSON"):
        read_json(target)


def test_should_persist_and_reload_consumer_offsets(tmp_path: Path) -> None:
    path = tmp_path / "consumer_offsets.json"
    offsets = ConsumerOffsetManager(path)
    offsets.load()
    assert offsets.query_offset("G1", "T", 0) == -1
    offsets.commit_offset("G1", "T", 0, 10)
    offsets.commit_offset("G1", "T", 3, 4)
    offsets.commit_offset("G2", "T", 0, 1)
    offsets.commit_offset("G1", "U", 1, 99)
    assert offsets.persist() and not offsets.persist()  # only when changed
    assert json.loads(path.read_text())["offset_table"]["T@G1"] == {"0": 10, "3": 4}
    again = ConsumerOffsetManager(path)
    again.load()
    assert again.query_offsets("G1", "T") == {0: 10, 3: 4}
    assert again.groups_of("T") == ["G1", "G2"] and again.topics_of("G1") == ["T", "U"]
    assert again.remove("G1", "T") == 1 and again.query_offset("G1", "T", 0) == -1
    assert again.query_offset("G1", "U", 1) == 99
    assert again.persist()


@pytest.mark.parametrize(
    ("group", "topic", "queue_id", "offset", "message"),
    [
        ("bad group", "T", 0, 1, "group name"),
        ("G", "", 0, 1, "topic name"),
        ("G", "T", -1, 1, "queue_id must be >= 0"),
        ("G", "T", 0, -5, "offset must be >= 0.*offset=-5"),
    ],
)
def test_should_refuse_bad_offset_commits(
    tmp_path: Path, group: str, topic: str, queue_id: int, offset: int, message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        ConsumerOffsetManager(tmp_path / "o.json").commit_offset(group, topic, queue_id, offset)


def test_should_persist_topic_config_on_every_change(tmp_path: Path) -> None:
    path = tmp_path / "topics.json"
    topics = TopicConfigManager(path)
    topics.load()
    topics.create_or_update(TopicConfig("Orders", 8, 8))
    topics.create_or_update(
        TopicConfig("Logs", 4, 2, perm=PERM_READ, topic_filter_type=TopicFilterType.MULTI_TAG)
    )
    version = topics.data_version
    assert topics.delete("Logs") and not topics.delete("Logs")
    assert topics.data_version[1] == version[1] + 1
    topics.create_or_update(TopicConfig("Logs", 4, 2, perm=PERM_READ | PERM_WRITE))
    again = TopicConfigManager(path)
    again.load()
    assert [t.topic_name for t in again.topics()] == ["Logs", "Orders"]
    assert again.require("Orders") == TopicConfig("Orders", 8, 8)
    assert again.require("Logs").is_writeable and again.require("Logs").is_readable
    assert again.data_version == topics.data_version
    with pytest.raises(UnknownTopicError, match="topic='Nope'"):
        again.require("Nope")
    assert again.get("Nope") is None


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"topic_name": "has space"}, "topic name"),
        ({"topic_name": "x" * 128}, "topic name"),
        ({"topic_name": "T", "read_queue_nums": 5000}, "read_queue_nums must be 0..1024"),
        ({"topic_name": "T", "perm": 16}, "perm must be 0..15"),
    ],
)
def test_should_validate_topic_configs(values: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        TopicConfig(**values)  # type: ignore[arg-type]


def test_should_save_and_load_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    assert Checkpoint.load(path) is None
    Checkpoint(4096, 1234, clean_shutdown=True).save(path)
    assert Checkpoint.load(path) == Checkpoint(4096, 1234, True)
    path.write_text('{"version": 1}')
    with pytest.raises(StoreError, match="malformed checkpoint"):
        Checkpoint.load(path)


def test_should_save_and_load_the_index_mark_and_refuse_a_malformed_one(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    marked = Checkpoint(8192, 99, index_mark=IndexMark(4096, 17, 8000, 6144))
    marked.save(path)
    assert Checkpoint.load(path) == marked
    value = json.loads(path.read_text())
    assert value["index"] == [4096, 17, 8000, 6144]
    path.write_text(json.dumps({**value, "index": [4096, 17]}))
    with pytest.raises(StoreError, match="malformed checkpoint"):
        Checkpoint.load(path)
