"""Topic configs and committed consumer offsets: applied at once on a single broker (its files as
before); in a broker group, records of %AEROMQ_META% applied by every member when committed,
kept across restarts, and applied again from the log after the offset a table persisted."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from aeromq.broker import InvalidArgumentError, UnknownTopicError
from aeromq.broker.store import MessageStore, PutMessageResult, PutMessageStatus, TopicConfig

from ._group import TOPIC, batch, commit, group_config, replicate
from .conftest import ManualClock, small_config

Pair = tuple[MessageStore, MessageStore]


def test_should_apply_changes_at_once_on_a_single_broker(tmp_path: Path) -> None:
    with MessageStore(small_config(tmp_path / "store")) as store:
        called: list[PutMessageResult] = []
        assert store.update_topic_config(TopicConfig(TOPIC, 4, 4), called.append).ok
        assert store.topic_config.require(TOPIC).write_queue_nums == 4
        store.put_batch(batch([b"x"]), TOPIC, 0)
        assert store.commit_offset("G", TOPIC, 0, 1).ok
        assert store.commit_offset("H", TOPIC, 0, 1).ok
        assert store.consumer_offsets.query_offset("G", TOPIC, 0) == 1
        assert store.remove_offsets("H").ok
        assert store.consumer_offsets.query_offset("H", TOPIC, 0) == -1
        assert store.remove_topic(TOPIC).ok
        assert store.topic_config.get(TOPIC) is None and store.queue_ids() == []
        assert store.consumer_offsets.groups_of(TOPIC) == []
        assert [r.status for r in called] == [PutMessageStatus.PUT_OK]
        with pytest.raises(UnknownTopicError):
            store.remove_topic(TOPIC)
    topics = json.loads((tmp_path / "store" / "config" / "topics.json").read_text())
    assert "applied_offset" not in topics  # a single broker's files as before


def test_should_apply_a_change_on_every_member_once_committed(pair: Pair) -> None:
    leader, follower = pair
    answers: list[PutMessageResult] = []
    leader.update_topic_config(TopicConfig(TOPIC, 2, 2), answers.append)
    leader.commit_offset("G", TOPIC, 1, 7, answers.append)
    assert answers == [] and leader.topic_config.get(TOPIC) is None
    replicate(leader, follower)
    assert follower.topic_config.get(TOPIC) is None
    commit(leader, follower)
    assert [a.status for a in answers] == [PutMessageStatus.PUT_OK] * 2
    for member in (leader, follower):
        assert member.topic_config.require(TOPIC).read_queue_nums == 2
        assert member.consumer_offsets.query_offset("G", TOPIC, 1) == 7


def test_should_complete_a_change_only_once_applied_when_committed_with_puts(pair: Pair) -> None:
    leader, _ = pair
    seen: list[object] = []
    leader.put_batch_async(batch([b"x"]), TOPIC, 0, lambda _: seen.append("put"))
    leader.commit_offset(
        "G", TOPIC, 0, 3, lambda _: seen.append(leader.consumer_offsets.query_offset("G", TOPIC, 0))
    )
    leader.update_topic_config(
        TopicConfig(TOPIC, 2, 2), lambda _: seen.append(leader.topic_config.get(TOPIC) is not None)
    )
    leader.put_batch_async(batch([b"y"]), TOPIC, 0, lambda _: seen.append("put"))
    leader.set_high_watermark(leader.max_physical_offset)
    assert seen == ["put", 3, True, "put"]
    assert leader.get_max_offset(TOPIC, 0) == 2


def test_should_remove_a_topics_config_and_offsets_but_keep_its_queues(pair: Pair) -> None:
    leader, follower = pair
    leader.update_topic_config(TopicConfig(TOPIC, 1, 1), lambda r: None)
    leader.put_batch_async(batch([b"x"]), TOPIC, 0, lambda r: None)
    leader.commit_offset("G", TOPIC, 0, 1, lambda r: None)
    leader.commit_offset("G", "Other", 0, 3, lambda r: None)
    replicate(leader, follower)
    commit(leader, follower)
    leader.remove_topic(TOPIC, lambda r: None)
    leader.remove_offsets("G", "Other", lambda r: None)
    replicate(leader, follower)
    commit(leader, follower)
    for member in (leader, follower):
        assert member.topic_config.get(TOPIC) is None
        assert member.consumer_offsets.topics_of("G") == []
        assert member.get_max_offset(TOPIC, 0) == 1  # the queue and its offsets stay
    assert leader.delete_topic(TOPIC) == 0


def test_should_block_a_change_until_committed_and_refuse_it_on_a_follower(pair: Pair) -> None:
    leader, follower = pair

    def commit_soon() -> None:
        time.sleep(0.05)
        leader.set_high_watermark(leader.max_physical_offset)

    thread = threading.Thread(target=commit_soon)
    thread.start()
    assert leader.commit_offset("G", TOPIC, 0, 4).status is PutMessageStatus.PUT_OK
    thread.join()
    assert leader.consumer_offsets.query_offset("G", TOPIC, 0) == 4
    assert follower.commit_offset("G", TOPIC, 0, 5).status is PutMessageStatus.NOT_LEADER
    with pytest.raises(InvalidArgumentError):
        leader.commit_offset("G", TOPIC, -1, 5)


def test_should_keep_applied_changes_across_a_restart_and_apply_the_missing_ones_again(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = group_config(tmp_path / "leader")
    with MessageStore(config, clock_ms=clock) as store:
        store.start_leading()
        store.update_topic_config(TopicConfig(TOPIC, 1, 1), lambda r: None)
        store.set_high_watermark(store.max_physical_offset)
        older = (config.config_dir / "topics.json").read_text()
        store.update_topic_config(TopicConfig(TOPIC, 3, 3), lambda r: None)
        store.put_batch_async(batch([b"m"] * 9), TOPIC, 0, lambda r: None)
        store.commit_offset("G", TOPIC, 0, 9, lambda r: None)
        store.set_high_watermark(store.max_physical_offset)
        assert json.loads(older)["applied_offset"] > 0
    (config.config_dir / "topics.json").write_text(older)  # as if the last write was lost
    (config.config_dir / "consumer_offsets.json").unlink()
    with MessageStore(config, clock_ms=clock) as store:
        assert store.topic_config.require(TOPIC).write_queue_nums == 3
        assert store.consumer_offsets.query_offset("G", TOPIC, 0) == 9
