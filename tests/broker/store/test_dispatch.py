"""The dispatch of a committed batch into its consume queue (``_dispatch.dispatch_batch``): a
batch past the queue's end written whole (the commit path's case, without reading the entries
first), a gap left before it counted; entries that match left alone (recovery's case), entries
that differ rewritten."""

from __future__ import annotations

import numpy as np

from aeromq.broker.store import MessageStore
from aeromq.broker.store._dispatch import BatchHead, dispatch_batch, log_units, read_head

from ._group import TOPIC, append, commit, replicate

Pair = tuple[MessageStore, MessageStore]


def _committed(pair: Pair, counts: list[int]) -> MessageStore:
    """The follower of ``pair`` once batches of ``counts`` records (queue 0) are committed."""
    leader, follower = pair
    for count in counts:
        append(leader, [b"m"] * count)
    replicate(leader, follower)
    commit(leader, follower)
    return follower


def _entries(store: MessageStore, first: int, count: int) -> list[tuple[int, int, int]]:
    queue = store.queues.get(TOPIC, 0)
    assert queue is not None
    got = queue.entries(first, count)
    return [(int(e["offset"]), int(e["size"]), int(e["tag"])) for e in got]


def test_should_leave_matching_entries_and_rewrite_those_that_differ(pair: Pair) -> None:
    follower = _committed(pair, [3, 2])
    before = _entries(follower, 0, 5)
    queue = follower.queues.get(TOPIC, 0)
    assert queue is not None and queue.max_offset == 5
    position, _, batch = next(log_units(follower.commit_log, 0, follower.max_physical_offset))
    assert batch is not None
    with batch:
        head = read_head(batch)
        assert head is not None

        assert dispatch_batch(head, batch, position, follower.queues, None, 1 << 62) == (0, 0)
        assert _entries(follower, 0, 5) == before

        queue.put_batch(1, 999, 7, np.zeros(1, dtype=np.int64))  # one entry spoilt
        assert dispatch_batch(head, batch, position, follower.queues, None, 1 << 62) == (3, 0)
    assert _entries(follower, 0, 5) == before


def test_should_write_a_batch_past_the_queue_end_whole_and_count_the_gap(pair: Pair) -> None:
    follower = _committed(pair, [3])
    position, size, batch = next(log_units(follower.commit_log, 0, follower.max_physical_offset))
    assert batch is not None
    with batch:
        head = read_head(batch)
        assert head is not None
        tags = _entries(follower, 0, 3)
        at_end = BatchHead(*head._replace(base_queue_offset=3))
        past_end = BatchHead(*head._replace(base_queue_offset=10))

        assert dispatch_batch(at_end, batch, position, follower.queues, None, 1 << 62) == (3, 0)
        assert dispatch_batch(past_end, batch, position, follower.queues, None, 1 << 62) == (3, 1)
    queue = follower.queues.get(TOPIC, 0)
    assert queue is not None and queue.max_offset == 13
    assert _entries(follower, 3, 3) == tags == _entries(follower, 10, 3)
    assert all(entry[:2] == (position, size) for entry in tags)
