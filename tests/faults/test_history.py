"""The history checker on crafted histories: a clean one passes, each anomaly is caught, unknown
outcomes are allowed either way, and recording from many threads keeps every operation."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.history import (
    Delivery,
    History,
    HistoryError,
    Op,
    OpType,
    check,
    recovery_times,
)


def _clock() -> Iterator[int]:
    return itertools.count(0, 1_000_000)  # 1 ms a step


def _history() -> History:
    ticks = _clock()
    return History(clock_ns=lambda: next(ticks))


def _send(history: History, process: str, message_id: str, queue: str, offset: int) -> None:
    history.ok(history.invoke_send(process, message_id, queue), offset=offset)


def _poll(history: History, consumer: str, *deliveries: tuple[str, str, int]) -> None:
    op = history.invoke_poll(consumer)
    history.ok(op, deliveries=[Delivery(*d) for d in deliveries])


def _clean() -> History:
    history = _history()
    _send(history, "p1", "m1", "q0", 0)
    _send(history, "p1", "m2", "q0", 1)
    _send(history, "p2", "m3", "q1", 0)
    _poll(history, "c1", ("m1", "q0", 0), ("m2", "q0", 1))
    _poll(history, "c1", ("m3", "q1", 0))
    return history


def test_should_pass_a_clean_history() -> None:
    result = check(_clean().ops)

    assert result.valid, result.summary()
    assert result.stats["acknowledged"] == result.stats["delivered"] == 3


def test_should_report_an_acknowledged_send_never_delivered_as_lost() -> None:
    history = _clean()
    _send(history, "p1", "m4", "q0", 2)

    result = check(history.ops)

    assert result.lost == ("m4",)
    assert not result.valid
    assert "lost: count=1" in result.summary()


def test_should_report_a_message_stored_at_two_offsets_as_duplicated() -> None:
    history = _clean()
    _send(history, "p1", "m4", "q0", 2)
    _poll(history, "c1", ("m4", "q0", 2), ("m4", "q0", 3))  # a retry stored it again

    result = check(history.ops)

    assert result.duplicated == {"m4": (("q0", 2), ("q0", 3))}


def test_should_report_two_acknowledgements_of_one_message_at_two_offsets() -> None:
    history = _history()
    _send(history, "p1", "m1", "q0", 0)
    _send(history, "p1", "m1", "q0", 1)  # the retry of an ambiguous send, stored twice
    _poll(history, "c1", ("m1", "q0", 0))

    assert check(history.ops).duplicated == {"m1": (("q0", 0), ("q0", 1))}


def test_should_allow_redelivery_at_the_same_offset() -> None:
    history = _clean()
    _poll(history, "c2", ("m1", "q0", 0), ("m2", "q0", 1))  # another consumer reads it again

    result = check(history.ops)

    assert result.valid, result.summary()
    assert result.stats["deliveries"] == 5


def test_should_report_deliveries_that_go_backwards_for_one_consumer_of_a_queue() -> None:
    history = _history()
    for offset, message_id in enumerate(["m0", "m1", "m2"]):
        _send(history, "p1", message_id, "q0", offset)
    _poll(history, "c1", ("m0", "q0", 0), ("m2", "q0", 2))
    _poll(history, "c1", ("m1", "q0", 1))

    result = check(history.ops)

    assert [(r.kind, r.process, r.queue) for r in result.reordered] == [("delivery", "c1", "q0")]
    assert (result.reordered[0].previous.offset, result.reordered[0].current.offset) == (2, 1)


def test_should_not_mix_queues_or_consumers_when_checking_order() -> None:
    history = _history()
    _send(history, "p1", "a", "q0", 5)
    _send(history, "p2", "b", "q1", 0)
    _poll(history, "c1", ("a", "q0", 5), ("b", "q1", 0))
    _poll(history, "c2", ("b", "q1", 0))

    assert check(history.ops).valid


def test_should_report_acknowledgements_that_go_backwards_for_one_producer() -> None:
    history = _history()
    _send(history, "p1", "m1", "q0", 4)
    _send(history, "p1", "m2", "q0", 3)
    _poll(history, "c1", ("m2", "q0", 3), ("m1", "q0", 4))

    result = check(history.ops)

    assert [(r.kind, r.process) for r in result.reordered] == [("ack", "p1")]


def test_should_report_one_offset_given_to_two_messages() -> None:
    history = _history()
    _send(history, "p1", "m1", "q0", 7)
    _send(history, "p2", "m2", "q0", 7)  # two leaders gave out offset 7
    _poll(history, "c1", ("m2", "q0", 7))

    result = check(history.ops)

    assert result.offset_conflicts == {("q0", 7): ("m1", "m2")}
    assert result.lost == ("m1",)


def test_should_report_a_delivery_of_a_message_never_sent_as_unexpected() -> None:
    history = _clean()
    _poll(history, "c1", ("ghost", "q1", 1))

    assert check(history.ops).unexpected == ("ghost",)


def test_should_report_a_failed_send_that_was_delivered() -> None:
    history = _clean()
    history.fail(history.invoke_send("p1", "m9", "q0"), "NOT_LEADER")
    _poll(history, "c1", ("m9", "q0", 2))

    assert check(history.ops).failed_but_delivered == ("m9",)


@pytest.mark.parametrize("delivered", [True, False])
def test_should_allow_an_unknown_send_to_be_delivered_or_not(delivered: bool) -> None:
    history = _clean()
    history.info(history.invoke_send("p1", "m9", "q0"), "REPLICATION_TIMEOUT")
    history.invoke_send("p3", "m10", "q1")  # never completed: unknown too
    if delivered:
        _poll(history, "c1", ("m9", "q0", 2), ("m10", "q1", 1))

    result = check(history.ops)

    assert result.valid, result.summary()
    assert result.stats["unknown"] == 2
    assert result.stats["recovered"] == (2 if delivered else 0)


def test_should_count_a_retried_message_ok_if_any_send_of_it_was() -> None:
    history = _history()
    history.info(history.invoke_send("p1", "m1", "q0"), "timeout")
    history.fail(history.invoke_send("p1", "m1", "q0"), "NOT_LEADER")
    _send(history, "p1", "m1", "q0", 0)

    result = check(history.ops)

    assert result.lost == ("m1",)
    assert result.stats["acknowledged"] == 1


def test_should_treat_a_message_as_failed_only_if_every_send_failed() -> None:
    history = _history()
    history.info(history.invoke_send("p1", "m1", "q0"), "timeout")
    history.fail(history.invoke_send("p1", "m1", "q0"), "NOT_LEADER")
    _poll(history, "c1", ("m1", "q0", 0))

    result = check(history.ops)

    assert result.valid, result.summary()
    assert result.stats["recovered"] == 1


def test_should_refuse_a_completion_of_an_operation_not_open() -> None:
    history = _history()
    op = history.invoke_send("p1", "m1", "q0")
    history.ok(op, offset=0)

    with pytest.raises(HistoryError, match="not open"):
        history.fail(op)
    with pytest.raises(HistoryError, match="needs its offset"):
        history.ok(history.invoke_send("p1", "m2", "q0"))
    orphan = Op(0, OpType.OK, "send", "p1", 0, invoke_index=5, message_id="m", queue="q")
    with pytest.raises(HistoryError, match="without an open invoke"):
        check([orphan])


def test_should_keep_every_operation_recorded_from_many_threads() -> None:
    history = History()
    threads, sends = 8, 200

    def produce(process: int) -> None:
        for n in range(sends):
            op = history.invoke_send(f"p{process}", f"m{process}-{n}", f"q{process}")
            history.ok(op, offset=n)

    workers = [threading.Thread(target=produce, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)

    ops = history.ops
    result = check(ops)
    assert len(ops) == 2 * threads * sends
    assert [op.index for op in ops] == list(range(len(ops)))
    assert result.stats["acknowledged"] == threads * sends
    assert len(result.lost) == threads * sends  # nothing polled
    assert not result.reordered and not result.offset_conflicts


def test_should_measure_recovery_from_each_fault_to_the_next_acknowledged_send() -> None:
    history = _history()  # the clock steps 1 ms per recorded event
    _send(history, "p1", "m1", "q0", 0)
    history.mark("kill leader")
    history.info(history.invoke_send("p1", "m2", "q0"), "timeout")
    _send(history, "p1", "m3", "q0", 1)
    history.mark("pause leader")

    assert recovery_times(history.ops) == [("kill leader", 0.004), ("pause leader", None)]


def test_should_write_and_read_back_a_history(tmp_path: Path) -> None:
    history = _clean()
    history.mark("kill")
    history.info(history.invoke_send("p1", "m9", "q0"), "timeout")
    path = tmp_path / "history.jsonl"

    history.dump(path)

    assert History.load(path) == history.ops
