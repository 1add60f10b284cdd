"""A follower's appends of the leader's log bytes (``read_log`` -> ``append_replicated``): a
byte-identical log, and identical consume queues once the high watermark passes, whatever the
pieces the bytes come in; refused at another offset, for a broken unit, on a leader."""

from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker import BrokerStateError, CorruptRecordError, InvalidArgumentError
from aeromq.broker.store import MessageStore

from ._group import TOPIC, batch, commit, log_bytes, replicate

Pair = tuple[MessageStore, MessageStore]


def _fill(leader: MessageStore, rounds: int = 30) -> None:
    """Batches of growing sizes over 3 queues: segments of 16 KiB roll, with blank fillers."""
    for n in range(rounds):
        bodies = [bytes([n]) * (100 + 97 * n)] * (1 + n % 3)
        leader.put_batch_async(batch(bodies, keys=f"k{n}"), TOPIC, n % 3, lambda r: None)


def _queue_files(store_dir: Path) -> dict[str, bytes]:
    """Every consume queue file of a store's data directory, by path, read as the OS has it."""
    root = store_dir / "consumequeue"
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _queue(store: MessageStore, queue_id: int) -> list[tuple[int, bytes, str | None]]:
    got = store.get_messages(TOPIC, queue_id, 0, max_count=1000, max_bytes=1 << 24)
    return [(m.queue_offset, m.body, m.properties.get("KEYS")) for m in got.messages]


@pytest.mark.parametrize("piece", [0, 1000, 37])
def test_should_make_a_byte_identical_log_and_the_same_queues_once_committed(
    pair: Pair, tmp_path: Path, piece: int
) -> None:
    leader, follower = pair
    _fill(leader)
    assert len(log_bytes(tmp_path / "leader")) > 1  # segments rolled, blank fillers sent
    assert replicate(leader, follower, piece=piece) == leader.max_physical_offset
    assert follower.get_max_offset(TOPIC, 0) == 0  # nothing dispatched before the watermark
    commit(leader, follower)
    assert log_bytes(tmp_path / "follower") == log_bytes(tmp_path / "leader")
    assert _queue_files(tmp_path / "follower") == _queue_files(tmp_path / "leader")
    for queue_id in range(3):
        assert _queue(follower, queue_id) == _queue(leader, queue_id)
        assert len(_queue(follower, queue_id)) == follower.get_max_offset(TOPIC, queue_id) > 0
    assert follower.query_messages_by_key(TOPIC, "k7")[0].body == bytes([7]) * (100 + 97 * 7)


def test_should_count_queue_offsets_and_producers_from_the_leaders_batches(pair: Pair) -> None:
    leader, follower = pair
    for n in range(4):
        leader.put_batch_async(batch([b"x"] * 2, sequence=2 * n), TOPIC, 1, lambda r: None)
    replicate(leader, follower)
    assert follower._counters.next_offset(TOPIC, 1) == 8
    assert len(follower.producer_states) == 1
    assert follower.get_max_offset(TOPIC, 1) == 0


def test_should_hold_an_incomplete_unit_until_its_rest_comes(pair: Pair) -> None:
    leader, follower = pair
    leader.put_batch_async(batch([b"x" * 900]), TOPIC, 0, lambda r: None)
    data = bytes(leader.read_log(0, 1 << 20))
    assert follower.append_replicated(0, data[:500]) == 0  # held, not counted
    assert follower.flush() == 0
    assert follower.append_replicated(500, data[500:]) == len(data)


def test_should_drop_held_bytes_when_the_leader_sends_from_the_log_end_again(pair: Pair) -> None:
    leader, follower = pair
    leader.put_batch_async(batch([b"x" * 900]), TOPIC, 0, lambda r: None)
    data = bytes(leader.read_log(0, 1 << 20))
    follower.append_replicated(0, data[:500])
    assert follower.append_replicated(0, data) == len(data)


def test_should_refuse_bytes_that_do_not_start_at_the_log_end(pair: Pair) -> None:
    leader, follower = pair
    leader.put_batch_async(batch([b"x"]), TOPIC, 0, lambda r: None)
    data = bytes(leader.read_log(0, 1 << 20))
    with pytest.raises(InvalidArgumentError, match="end of this log"):
        follower.append_replicated(8, data)
    follower.append_replicated(0, data)
    with pytest.raises(InvalidArgumentError):
        follower.append_replicated(0, data)


def test_should_refuse_a_batch_that_fails_its_check(pair: Pair) -> None:
    leader, follower = pair
    leader.put_batch_async(batch([b"abc"]), TOPIC, 0, lambda r: None)
    data = bytearray(leader.read_log(0, 1 << 20))
    data[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        follower.append_replicated(0, data)
    assert follower.max_physical_offset == 0
    with pytest.raises(CorruptRecordError):
        follower.append_replicated(0, b"\x10\x00\x00\x00JUNKJUNKJUNK")


def test_should_take_replicated_bytes_on_a_follower_only(pair: Pair) -> None:
    leader, _follower = pair
    with pytest.raises(BrokerStateError):
        leader.append_replicated(0, b"")


def test_should_read_whole_units_from_a_boundary_within_one_segment(pair: Pair) -> None:
    leader, _ = pair
    _fill(leader, rounds=12)
    first = leader.read_log(0, 1)
    assert len(first) > 1 and int.from_bytes(first[:4], "little") == len(first)  # one batch
    first.release()
    whole = leader.read_log(0, 1 << 30)
    assert 0 < len(whole) <= 16 * 1024  # never past the segment
    whole.release()
    assert len(leader.read_log(leader.max_physical_offset, 100)) == 0
    with pytest.raises(InvalidArgumentError, match="boundary"):
        leader.read_log(8, 100)
    with pytest.raises(InvalidArgumentError, match="outside"):
        leader.read_log(leader.max_physical_offset + 100, 100)
