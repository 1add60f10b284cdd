"""``tune_gc``: the start-up frozen out of every collection, the thresholds set, the setting's
text read and written."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from aeromq.common import (
    DEFAULT_GC_THRESHOLD,
    format_gc_threshold,
    parse_gc_threshold,
    tune_gc,
)


class _Node:
    peer: object


@pytest.fixture
def restored_gc() -> Iterator[None]:
    """The test process's collector as it was, after the test."""
    threshold = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_should_freeze_what_is_left_and_set_the_threshold() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    kept = [[i] for i in range(1_000)]  # live containers made before the call
    tuning = tune_gc((5_000, 7, 9))
    assert gc.get_threshold() == (5_000, 7, 9) == tuning.threshold
    assert tuning.previous_threshold == (700, 10, 10)
    # (not == gc.get_freeze_count() now: another test's thread left in this worker may free a
    # frozen object meanwhile, which lowers the count; a full run saw 274,567 then 274,565)
    assert tuning.frozen >= len(kept) and gc.get_freeze_count() >= len(kept)
    assert not any(kept[0] is o for o in gc.get_objects())  # frozen: not in any generation
    made_after = [1, 2]
    assert any(made_after is o for o in gc.get_objects(generation=0))


@pytest.mark.usefixtures("restored_gc")
def test_should_leave_what_it_is_not_asked_to_change() -> None:
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    tuning = tune_gc(None, freeze=False)
    assert tuning.frozen == 0 == gc.get_freeze_count()
    assert gc.get_threshold() == (700, 10, 10) == tuning.threshold


@pytest.mark.usefixtures("restored_gc")
def test_should_collect_start_up_garbage_before_freezing_it() -> None:
    gc.unfreeze()
    node = _Node()
    node.peer = node  # a cycle: only the collector frees it
    gone = weakref.ref(node)
    del node
    tune_gc()
    assert gone() is None  # collected, not frozen for life


def test_should_read_and_write_the_threshold_setting() -> None:
    assert parse_gc_threshold("10000,20,100") == (10_000, 20, 100)
    assert parse_gc_threshold(" 50_000 ") == (50_000, *DEFAULT_GC_THRESHOLD[1:])
    assert parse_gc_threshold("2000,5") == (2_000, 5, DEFAULT_GC_THRESHOLD[2])
    assert format_gc_threshold((700, 10, 10)) == "700,10,10"
    assert parse_gc_threshold(format_gc_threshold(DEFAULT_GC_THRESHOLD)) == DEFAULT_GC_THRESHOLD


@pytest.mark.parametrize("text", ["", "0,10,10", "700,-1,10", "1,2,3,4", "many", "7e2"])
def test_should_refuse_a_threshold_that_is_not_one_to_three_positive_numbers(text: str) -> None:
    with pytest.raises(ValueError, match="numbers"):
        parse_gc_threshold(text)


def test_should_refuse_to_turn_collection_off() -> None:
    with pytest.raises(ValueError, match="positive"):
        tune_gc((0, 10, 10), freeze=False)
