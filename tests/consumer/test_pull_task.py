"""Pull task state machine, step by step: a manual scheduler and the in-memory broker."""

from __future__ import annotations

import threading
import time

import pytest

from aeromq.client import (
    BrokerBusyError,
    BrokerInternalError,
    BrokerUnavailableError,
    MessageExt,
    MessageQueue,
    build_subscription_data,
)
from aeromq.consumer._broker_api import QueueGrant
from aeromq.consumer.consume_request_cache import ConsumeRequest
from aeromq.consumer.process_queue import ProcessQueue
from aeromq.consumer.pull_task import RELEASE_POLL_MS
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import TOPIC, Harness


@pytest.fixture
def queue(broker: InMemoryBroker) -> MessageQueue:
    return broker.create_topic(TOPIC, 1)[0]


def cached(harness: Harness, queue: MessageQueue) -> list[int]:
    requests = []
    while (request := harness.cache.take(0)) is not None:
        requests.append(request)
    for request in requests:
        harness.cache.put(request)
    return [m.queue_offset for r in requests if r.queue == queue for m in r.messages]


def fill(process_queue: ProcessQueue, offsets: list[int], body: bytes = b"x") -> None:
    process_queue.put_messages([MessageExt(TOPIC, body, queue_offset=o) for o in offsets])


def test_should_stop_when_the_queue_is_not_owned(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker)
    task = harness.task(queue)
    task.run()
    assert task.cancelled
    assert harness.scheduler.pending == []
    assert broker.pull_log == []


def test_should_stop_when_the_process_queue_is_dropped(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker)
    harness.assigned.add(queue, pull_offset=0).process_queue.dropped = True
    task = harness.task(queue)
    task.run()
    assert task.cancelled
    assert harness.scheduler.pending == []


def test_should_retry_a_paused_queue_in_1000_ms(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker)
    harness.assigned.add(queue, pull_offset=0)
    harness.assigned.pause([queue])
    harness.task(queue).run()
    assert harness.scheduler.delays() == [1000]
    assert harness.counters.paused == 1
    assert broker.pull_log == []


def test_should_flow_control_on_the_consume_request_count(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 3)
    harness = Harness(broker, pull_threshold_for_all=10)  # pull_batch_size 10
    state = harness.assigned.add(queue, pull_offset=0)
    harness.cache.put(ConsumeRequest([], queue, state.process_queue))
    harness.task(queue).run()  # 1 * 10 is not over 10: pulls
    assert broker.pull_log == [(queue, 0)]
    assert harness.scheduler.delays() == [0]
    harness.scheduler.pending.clear()
    harness.task(queue).run()  # 2 * 10 is over 10
    assert harness.scheduler.delays() == [50]
    assert harness.counters.consume_request == 1
    assert broker.pull_log == [(queue, 0)]


def test_should_flow_control_on_the_cached_message_count(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker, pull_threshold_for_queue=2)
    state = harness.assigned.add(queue, pull_offset=0)
    fill(state.process_queue, [0, 1, 2])
    harness.task(queue).run()
    assert harness.scheduler.delays() == [50]
    assert harness.counters.queue == 1
    assert broker.pull_log == []


def test_should_flow_control_on_the_cached_body_size(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker, pull_threshold_size_for_queue_mib=1)
    state = harness.assigned.add(queue, pull_offset=0)
    fill(state.process_queue, [0, 1], body=b"x" * (600 * 1024))
    harness.task(queue).run()
    assert harness.scheduler.delays() == [50]
    assert harness.counters.queue == 1
    assert broker.pull_log == []


def test_should_flow_control_on_the_offset_span(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker, consume_max_span=5)
    state = harness.assigned.add(queue, pull_offset=0)
    fill(state.process_queue, [0, 6])
    harness.task(queue).run()
    assert harness.scheduler.delays() == [50]
    assert harness.counters.queue_max_span == 1
    assert broker.pull_log == []


def test_should_apply_the_flow_control_checks_in_order(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(
        broker, pull_threshold_for_all=1, pull_threshold_for_queue=1, consume_max_span=1
    )
    state = harness.assigned.add(queue, pull_offset=0)
    fill(state.process_queue, [0, 5])
    harness.cache.put(ConsumeRequest([], queue, state.process_queue))
    task = harness.task(queue)
    task.run()
    counters = harness.counters
    assert (counters.consume_request, counters.queue, counters.queue_max_span) == (1, 0, 0)
    harness.cache.take(0)
    task.run()
    assert (counters.consume_request, counters.queue, counters.queue_max_span) == (1, 1, 0)
    state.process_queue.remove_messages([MessageExt(TOPIC, b"x", queue_offset=0)])
    fill(state.process_queue, [9])
    state.process_queue.remove_messages([MessageExt(TOPIC, b"x", queue_offset=5)])
    fill(state.process_queue, [1])  # two cached, 1 and 9: count over 1 again
    task.run()
    assert (counters.consume_request, counters.queue, counters.queue_max_span) == (1, 2, 0)
    harness.assigned.remove(queue)
    span_only = Harness(broker, consume_max_span=1)
    state = span_only.assigned.add(queue, pull_offset=0)
    fill(state.process_queue, [1, 9])
    span_only.task(queue).run()
    assert (span_only.counters.queue, span_only.counters.queue_max_span) == (0, 1)
    assert broker.pull_log == []


def test_should_cache_found_messages_and_advance_the_pull_offset(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"a", b"b", b"c"])
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=1)
    harness.task(queue).run()
    assert cached(harness, queue) == [1, 2]
    assert state.pull_offset == 3
    assert state.process_queue.msg_count == 2
    assert harness.scheduler.delays() == [0]
    assert harness.counters.found == 1


def test_should_pull_at_most_pull_batch_size(broker: InMemoryBroker, queue: MessageQueue) -> None:
    broker.send_many(queue, [b"m"] * 25)
    harness = Harness(broker, pull_batch_size=10)
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert cached(harness, queue) == list(range(10))
    assert state.pull_offset == 10


def test_should_wake_a_long_poll_when_a_message_arrives(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert harness.scheduler.pending == []
    assert state.pull_offset == 0
    broker.send(queue, b"late")
    assert cached(harness, queue) == [0]
    assert state.pull_offset == 1
    assert harness.scheduler.delays() == [0]


def test_should_advance_past_unmatched_messages(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    for tag in ("B", "B", "A", "B"):
        broker.send(queue, b"m", tags=tag)
    harness = Harness(broker)
    harness.subscriptions[TOPIC] = build_subscription_data(TOPIC, "A")
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert cached(harness, queue) == [2]
    assert state.pull_offset == 4


def test_should_filter_again_on_tag_strings_when_hash_codes_collide(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    # Java: "Aa".hashCode() == "BB".hashCode(); the broker matches both.
    broker.send(queue, b"wanted", tags="Aa")
    broker.send(queue, b"collision", tags="BB")
    harness = Harness(broker)
    harness.subscriptions[TOPIC] = build_subscription_data(TOPIC, "Aa")
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert cached(harness, queue) == [0]
    assert state.pull_offset == 2


def test_should_move_an_illegal_pull_offset_to_the_broker_bound(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 5)
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=100)
    harness.task(queue).run()
    assert state.pull_offset == 5
    broker.remove_before(queue, 3)
    state.pull_offset = 1
    harness.task(queue).run()
    assert state.pull_offset == 3
    assert cached(harness, queue) == []


def test_should_retry_in_20_ms_after_broker_flow_control(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.fail_next("pull_async", BrokerBusyError("busy"))
    harness = Harness(broker)
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert harness.scheduler.delays() == [20]
    assert harness.counters.broker_busy == 1


def test_should_retry_in_3000_ms_after_other_errors(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.fail_next("pull_async", BrokerInternalError("failed"))
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=4)
    harness.task(queue).run()
    assert harness.scheduler.delays() == [3000]
    assert harness.counters.pull_errors == 1
    assert state.pull_offset == 4


def test_should_retry_in_250_ms_on_a_fresh_route_after_the_broker_was_unavailable(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.fail_next("pull_async", BrokerUnavailableError("down"))
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=4)
    harness.task(queue).run()
    assert harness.scheduler.delays() == [250]
    assert harness.counters.pull_errors == 1
    assert state.pull_offset == 4


def test_should_take_a_pending_seek_before_the_pull_offset(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 10)
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=8)
    harness.assigned.seek(queue, 2)
    harness.task(queue).run()
    assert broker.pull_log == [(queue, 2)]
    assert state.seek_offset == -1
    assert state.consume_offset == 2
    assert cached(harness, queue)[0] == 2


def test_should_drop_a_result_when_a_seek_came_during_the_pull(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 10)
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=0)
    broker.hold_pulls = True
    harness.task(queue).run()
    harness.assigned.seek(queue, 7)
    broker.release_held()
    assert cached(harness, queue) == []
    assert state.pull_offset == 0
    assert state.seek_offset == 7
    assert harness.counters.stale_results == 1


def test_should_not_let_a_stale_task_overwrite_a_requeued_queue_bug_2732(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    """A queue rebalanced away and back: the old task's late result must change nothing."""
    broker.send_many(queue, [b"m"] * 20)
    harness = Harness(broker)
    harness.assigned.add(queue, pull_offset=0)
    broker.hold_pulls = True
    harness.tasks.start([queue])
    harness.scheduler.run_next()  # the old task pulls at 0, held
    harness.assigned.remove(queue)
    harness.tasks.cancel([queue])
    new_state = harness.assigned.add(queue, pull_offset=15)
    harness.tasks.start([queue])
    harness.scheduler.run_next()  # the new task pulls at 15, held
    broker.release_held()
    assert new_state.pull_offset == 20
    assert cached(harness, queue) == [15, 16, 17, 18, 19]
    assert harness.counters.stale_results == 1
    assert harness.scheduler.delays() == [0]  # only the new task goes on


def test_should_never_pull_at_minus_one_bug_10176(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    """An unknown start offset is computed first; a failure or -1 retries, never pulls."""
    broker.send_many(queue, [b"m"] * 5)
    harness = Harness(broker)
    answers: list[int | Exception] = [BrokerUnavailableError("down"), -1, 3]

    def start_offset(_: MessageQueue) -> int:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    harness.start_offset = start_offset
    state = harness.assigned.add(queue)
    task = harness.task(queue)
    for expected_delay in (3000, 3000):
        task.run()
        assert broker.pull_log == []
        harness.run_executed()
        assert harness.scheduler.delays() == [expected_delay]
        harness.scheduler.pending.clear()
    assert harness.counters.offset_errors == 1
    task.run()
    harness.run_executed()
    assert state.pull_offset == 3
    harness.scheduler.run_next()
    assert broker.pull_log == [(queue, 3)]
    assert cached(harness, queue) == [3, 4]


def test_should_not_set_a_computed_offset_over_a_seek(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker)
    harness.start_offset = lambda _: 9
    state = harness.assigned.add(queue)
    harness.task(queue).run()
    harness.assigned.seek(queue, 1)
    harness.run_executed()
    assert state.pull_offset == -1
    assert state.seek_offset == 1


def test_should_start_one_task_per_queue_under_racing_starts_bug_10630(
    broker: InMemoryBroker,
) -> None:
    queues = broker.create_topic("Race", 8)
    harness = Harness(broker)
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        for _ in range(50):
            harness.tasks.start(queues)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(harness.tasks) == 8
    assert len(harness.scheduler.pending) == 8
    task = harness.tasks.get(queues[0])
    assert task is not None and not task.start()
    assert len(harness.scheduler.pending) == 8


def test_should_replace_the_task_on_restart(broker: InMemoryBroker, queue: MessageQueue) -> None:
    harness = Harness(broker)
    harness.assigned.add(queue, pull_offset=0)
    harness.tasks.start([queue])
    old = harness.tasks.get(queue)
    harness.tasks.restart(queue)
    new = harness.tasks.get(queue)
    assert old is not None and old.cancelled
    assert new is not None and new is not old and not new.cancelled
    assert len(harness.scheduler.pending) == 2
    harness.scheduler.run_next()  # the old one does nothing
    assert broker.pull_log == []


def test_should_drop_the_late_result_of_a_cancelled_task(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 3)
    harness = Harness(broker)
    state = harness.assigned.add(queue, pull_offset=0)
    broker.hold_pulls = True
    task = harness.task(queue)
    task.run()
    task.cancel()
    broker.release_held()
    assert state.pull_offset == 0
    assert cached(harness, queue) == []
    assert harness.scheduler.pending == []


def test_should_cancel_tasks_of_one_topic_or_those_not_retained(broker: InMemoryBroker) -> None:
    a = broker.create_topic("A", 2)
    b = broker.create_topic("B", 1)
    harness = Harness(broker)
    harness.tasks.start([*a, *b])
    harness.tasks.cancel_topic("A")
    assert harness.tasks.queues() == set(b)
    harness.tasks.retain({a[0]}, topic="B")
    assert harness.tasks.queues() == {a[0]}
    harness.tasks.cancel_all()
    assert len(harness.tasks) == 0


def test_should_start_a_taken_over_queue_at_the_committed_offset_its_grant_carries(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 8)
    harness = Harness(broker)
    harness.context.acquire = lambda q, force: QueueGrant("", 5)
    state = harness.assigned.add(queue, pull_offset=2)
    state.take_over = True
    task = harness.task(queue)
    task.run()
    assert broker.pull_log == [] and len(harness.executed) == 1
    harness.run_executed()
    assert state.pull_offset == 5 and not state.take_over
    harness.scheduler.run_next()
    assert broker.pull_log == [(queue, 5)]


def test_should_ask_again_soon_while_the_previous_holder_has_not_released_the_queue(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 8)
    harness = Harness(broker)
    answers = [QueueGrant("10.0.0.2@old"), QueueGrant("10.0.0.2@old"), QueueGrant("", 6)]
    asked: list[bool] = []
    harness.context.acquire = lambda q, force: (asked.append(force), answers.pop(0))[1]
    state = harness.assigned.add(queue, pull_offset=2)
    state.take_over = True
    task = harness.task(queue)
    task.run()
    for _ in range(2):
        harness.run_executed()
        assert harness.scheduler.delays() == [RELEASE_POLL_MS] and broker.pull_log == []
        harness.scheduler.run_next()
    harness.run_executed()
    assert asked == [False, False, False] and harness.counters.release_waits == 2
    harness.scheduler.run_next()
    assert broker.pull_log == [(queue, 6)] and not state.take_over


def test_should_force_the_take_over_once_the_release_timeout_passed(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker, release_timeout_ms=30)
    asked: list[bool] = []

    def acquire(q: MessageQueue, force: bool) -> QueueGrant:
        asked.append(force)
        return QueueGrant("" if force else "10.0.0.2@silent", 3 if force else -1)

    harness.context.acquire = acquire
    state = harness.assigned.add(queue, pull_offset=0)
    state.take_over = True
    harness.task(queue).run()
    harness.run_executed()
    time.sleep(0.05)  # past the 30 ms release timeout (no upper bound: load only delays it)
    harness.scheduler.run_next()
    harness.run_executed()
    assert asked == [False, True]
    assert state.pull_offset == 3 and not state.take_over


def test_should_let_a_seek_win_over_the_committed_offset_of_a_taken_over_queue(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 8)
    harness = Harness(broker)
    harness.context.acquire = lambda q, force: QueueGrant("", 5)
    state = harness.assigned.add(queue, pull_offset=2)
    state.take_over = True
    harness.assigned.seek(queue, 1)
    harness.task(queue).run()
    assert broker.pull_log == [(queue, 1)]
    assert harness.executed == [] and not state.take_over


def test_should_send_the_next_pull_from_the_thread_that_read_the_answer(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    harness = Harness(broker, run_on_answer=True)
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()  # NO_NEW_MSG: held by the broker
    sender = threading.Thread(target=broker.send, args=(queue, b"late"), name="answerer")
    sender.start()  # the held pull is answered on the sending thread
    sender.join(5)
    assert cached(harness, queue) == [0]
    assert broker.pull_log == [(queue, 0), (queue, 1)]  # the next pull, sent at once
    assert harness.scheduler.pending == []  # not through the scheduler
    assert harness.counters.pulls == 2 and state.pull_offset == 1


def test_should_schedule_the_next_run_when_the_answer_came_within_such_a_run(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 25)  # the in-memory broker answers these at once
    harness = Harness(broker, run_on_answer=True, pull_batch_size=10)
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    # the first answer ran the next step on; the second, within that step, is not run inline
    assert broker.pull_log == [(queue, 0), (queue, 10)]
    assert harness.scheduler.delays() == [0]
    harness.scheduler.run_next()
    assert broker.pull_log == [(queue, 0), (queue, 10), (queue, 20), (queue, 25)]


def test_should_schedule_the_next_pull_when_it_cannot_be_sent_without_blocking(
    broker: InMemoryBroker, queue: MessageQueue
) -> None:
    broker.send_many(queue, [b"m"] * 3)
    broker.refuse_nonblocking_pulls = True  # no fresh route or open session at hand
    harness = Harness(broker, run_on_answer=True)
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    assert broker.pull_log == [(queue, 0)] and broker.refused_pulls == 1
    assert harness.scheduler.delays() == [0]
    assert harness.counters.pulls == 1 and state.pull_offset == 3
    broker.refuse_nonblocking_pulls = False
    harness.scheduler.run_next()
    assert broker.pull_log == [(queue, 0), (queue, 3)]
