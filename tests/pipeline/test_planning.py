"""Planning without I/O: admission control, partition splits, offsets as sorted JSON."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import MessageQueue
from aeromq.pipeline import (
    OptionError,
    QueueRange,
    admit,
    offsets_from_json,
    offsets_to_json,
    split_ranges,
)

QUEUES = [MessageQueue("T", "broker-a", i) for i in range(4)]


def test_should_split_the_limit_in_proportion_to_backlog() -> None:
    start = dict.fromkeys(QUEUES, 0)
    latest = dict(zip(QUEUES, [600, 300, 90, 10], strict=True))
    end = admit(start, latest, 100)
    assert [end[q] for q in QUEUES] == [60, 30, 9, 1]


def test_should_not_starve_a_queue_with_a_small_backlog() -> None:
    start = dict.fromkeys(QUEUES, 0)
    latest = dict(zip(QUEUES, [10_000, 10_000, 10_000, 1], strict=True))
    end = admit(start, latest, 30)
    assert end[QUEUES[3]] == 1 and sum(end.values()) == 30


def test_should_take_everything_when_the_backlog_fits() -> None:
    start = dict(zip(QUEUES, [5, 5, 5, 5], strict=True))
    latest = dict(zip(QUEUES, [7, 9, 5, 6], strict=True))
    assert admit(start, latest, 100) == latest


@given(
    st.lists(st.integers(0, 500), min_size=4, max_size=4),
    st.lists(st.integers(0, 500), min_size=4, max_size=4),
    st.integers(1, 1000),
)
def test_should_admit_exactly_the_limit_within_each_backlog(
    starts: list[int], backlogs: list[int], limit: int
) -> None:
    start = dict(zip(QUEUES, starts, strict=True))
    latest = {q: start[q] + b for q, b in zip(QUEUES, backlogs, strict=True)}
    end = admit(start, latest, limit)
    taken = [end[q] - start[q] for q in QUEUES]
    assert all(0 <= t <= b for t, b in zip(taken, backlogs, strict=True))
    assert all(t >= 1 for t, b in zip(taken, backlogs, strict=True) if b)
    waiting = sum(1 for b in backlogs if b)
    assert sum(taken) == max(waiting, min(limit, sum(backlogs)))


def test_should_split_large_ranges_for_min_partitions() -> None:
    ranges = [QueueRange("T", "b", 0, 0, 90), QueueRange("T", "b", 1, 10, 20)]
    split = split_ranges(ranges, 10)
    assert len(split) >= 10
    assert sum(r.count for r in split) == 100
    for queue_id in (0, 1):
        pieces = [r for r in split if r.queue_id == queue_id]
        assert all(a.end == b.start for a, b in itertools.pairwise(pieces))


def test_should_drop_empty_ranges() -> None:
    assert split_ranges([QueueRange("T", "b", 0, 5, 5)], None) == []


def test_should_write_offsets_with_sorted_keys_and_read_them_back() -> None:
    offsets = {MessageQueue("b", "x", 10): 3, MessageQueue("a", "y", 2): 1, QUEUES[1]: 7}
    nested = offsets_to_json(offsets)
    text = json.dumps(nested)
    assert text == json.dumps(json.loads(text), sort_keys=True)
    assert offsets_from_json(json.loads(text)) == offsets


@pytest.mark.parametrize(
    "value",
    [[1], {"T": 3}, {"T": {"broker-a": 1}}, {"T": {"broker-a:x": 1}}, {"T": {"b:0": "1"}}],
)
def test_should_reject_malformed_offsets(value: object) -> None:
    with pytest.raises(OptionError):
        offsets_from_json(value)
