from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.client import MessageExt
from aeromq.consumer.process_queue import ProcessQueue


def message(offset: int, body: bytes = b"abc") -> MessageExt:
    return MessageExt("T", body, queue_offset=offset)


def test_should_count_messages_and_body_bytes() -> None:
    queue = ProcessQueue()
    assert queue.put_messages([message(0, b"a" * 10), message(1, b"b" * 5)]) == 2
    assert queue.msg_count == 2
    assert queue.msg_size == 15


def test_should_skip_an_offset_already_cached() -> None:
    queue = ProcessQueue()
    queue.put_messages([message(0), message(1)])
    assert queue.put_messages([message(1), message(2)]) == 1
    assert queue.msg_count == 3
    assert queue.msg_size == 9


def test_should_measure_the_span_of_cached_offsets() -> None:
    queue = ProcessQueue()
    assert queue.max_span == 0
    queue.put_messages([message(5)])
    assert queue.max_span == 0
    queue.put_messages([message(9), message(40)])
    assert queue.max_span == 35


def test_should_keep_offset_order_when_an_older_offset_arrives() -> None:
    queue = ProcessQueue()
    queue.put_messages([message(10), message(11)])
    queue.put_messages([message(3)])
    assert queue.first_offset() == 3
    assert queue.max_span == 8
    assert queue.queue_offset_max == 11


def test_should_return_the_first_offset_still_cached_after_a_removal() -> None:
    queue = ProcessQueue()
    batch_one = [message(0), message(1)]
    batch_two = [message(2), message(3)]
    queue.put_messages(batch_one)
    queue.put_messages(batch_two)
    assert queue.remove_messages(batch_one) == 2
    assert queue.msg_count == 2
    assert queue.msg_size == 6


def test_should_return_max_plus_one_when_the_cache_empties() -> None:
    queue = ProcessQueue()
    batch = [message(7), message(8)]
    queue.put_messages(batch)
    assert queue.remove_messages(batch) == 9
    assert queue.msg_count == 0
    assert queue.msg_size == 0


def test_should_return_minus_one_when_removing_from_an_empty_cache() -> None:
    queue = ProcessQueue()
    assert queue.remove_messages([message(0)]) == -1


def test_should_forget_everything_on_clear() -> None:
    queue = ProcessQueue()
    queue.put_messages([message(0), message(1)])
    queue.clear()
    assert (queue.msg_count, queue.msg_size, queue.max_span, queue.first_offset()) == (0, 0, 0, -1)


_PUT = st.lists(st.integers(0, 60), max_size=12).map(lambda xs: ("put", xs))
_PUT_RUN = st.tuples(st.integers(0, 60), st.integers(1, 12)).map(
    lambda run: ("put", list(range(run[0], run[0] + run[1])))
)
_REMOVE = st.lists(st.integers(0, 60), max_size=12).map(lambda xs: ("remove", xs))
_REMOVE_FIRST = st.integers(1, 12).map(lambda n: ("remove_first", [n]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_PUT, _PUT_RUN, _REMOVE, _REMOVE_FIRST), max_size=25))
def test_should_keep_counts_sizes_and_offsets_as_a_map_of_offsets_does(
    steps: list[tuple[str, list[int]]],
) -> None:
    queue = ProcessQueue()
    model: dict[int, int] = {}  # offset -> body length, as RocketMQ's TreeMap
    highest = -1
    for kind, offsets in steps:
        if kind == "put":
            messages = [message(o, b"x" * (o % 7)) for o in offsets]
            added = len({o for o in offsets if o not in model})
            for o in offsets:
                model.setdefault(o, o % 7)
            highest = max([highest, *offsets])
            assert queue.put_messages(messages) == added
        else:
            if kind == "remove_first":  # what poll does: the lowest offsets, in order
                offsets = sorted(model)[: offsets[0]]
            was_empty = not model
            for o in offsets:
                model.pop(o, None)
            expected = -1 if was_empty else (min(model) if model else highest + 1)
            assert queue.remove_messages([message(o) for o in offsets]) == expected
        assert queue.msg_count == len(model)
        assert queue.msg_size == sum(model.values())
        assert queue.first_offset() == (min(model) if model else -1)
        assert queue.max_span == (max(model) - min(model) if model else 0)
