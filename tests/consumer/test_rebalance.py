from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from aeromq.client import BrokerUnavailableError, MessageQueue, build_subscription_data
from aeromq.consumer._broker_api import ConsumerHeartbeat, QueueGrant
from aeromq.consumer.allocate import AllocateMessageQueueAveragely
from aeromq.consumer.config import ConsumeFromWhere, MessageModel
from aeromq.consumer.offset_store import RemoteBrokerOffsetStore
from aeromq.consumer.pull_task import RELEASE_POLL_MS
from aeromq.consumer.rebalance import RebalanceService
from aeromq.consumer.testing import InMemoryBroker
from tests.consumer._lite import GROUP, TOPIC, Harness, wait_for

ME = "10.0.0.1@me"
OTHER = "10.0.0.2@other"


def join(broker: InMemoryBroker, client_id: str, pushes: list[Sequence[str]] | None = None) -> None:
    def listener(group: str, ids: Sequence[str]) -> None:
        if pushes is not None:
            pushes.append(list(ids))

    heartbeat = ConsumerHeartbeat(
        client_id, GROUP, MessageModel.CLUSTERING, ConsumeFromWhere.LAST_OFFSET
    )
    broker.start_heartbeat(heartbeat, listener)


class Rebalancing:
    def __init__(self, broker: InMemoryBroker, **changes: Any) -> None:
        self.harness = Harness(broker, **changes)
        self.store = RemoteBrokerOffsetStore(broker, GROUP)
        self.changes: list[tuple[str, set[MessageQueue], set[MessageQueue]]] = []
        self.service = RebalanceService(
            config=self.harness.config,
            client_id=ME,
            strategy=AllocateMessageQueueAveragely(),
            broker_api=broker,
            assigned=self.harness.assigned,
            tasks=self.harness.tasks,
            offset_store=self.store,
            cache=self.harness.cache,
            listener=lambda topic, all_queues, owned: self.changes.append(
                (topic, all_queues, owned)
            ),
        )
        self.service.subscriptions[TOPIC] = build_subscription_data(TOPIC, "*")
        self.harness.start_offset = self.service.compute_pull_from_where
        self.harness.context.acquire = lambda queue, force: broker.acquire_queue(
            GROUP, queue, ME, force=force
        )

    def start_tasks(self, rounds: int = 2) -> None:
        """``rounds`` times: run each scheduled step, then the work they asked for on the
        executor (a take-over's ask of the broker, a start offset): a queue granted at once
        is pulled in the second round."""
        scheduler = self.harness.scheduler
        for _ in range(rounds):
            for _ in range(len(scheduler.pending)):
                scheduler.run_next()
            self.harness.run_executed()

    def owned(self) -> list[int]:
        return sorted(q.queue_id for q in self.harness.assigned.queues())


@pytest.fixture
def queues(broker: InMemoryBroker) -> list[MessageQueue]:
    return broker.create_topic(TOPIC, 4)


def test_should_own_the_queues_the_strategy_allocates(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    join(broker, OTHER)
    rebalancing = Rebalancing(broker)
    assert rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1]
    assert rebalancing.harness.tasks.queues() == set(queues[:2])
    assert rebalancing.changes == [(TOPIC, set(queues), set(queues[:2]))]


def test_should_take_the_committed_offset_first_and_fix_it_at_allocation(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"m"] * 9)
    broker.commit_offset(GROUP, queues[0], 4)
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    rebalancing.service.do_rebalance()
    state = rebalancing.harness.assigned.state(queues[0])
    assert state is not None and state.pull_offset == 4
    rebalancing.start_tasks()
    assert (queues[0], 4) in broker.pull_log


def test_should_fix_the_last_offset_at_allocation_so_later_sends_are_delivered(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[0], [b"old"] * 3)
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    rebalancing.service.do_rebalance()
    broker.send_many(queues[0], [b"new"] * 2)
    rebalancing.start_tasks()
    assert (queues[0], 3) in broker.pull_log
    assert wait_for(lambda: len(rebalancing.harness.cache) == 1)
    request = rebalancing.harness.cache.take(0)
    assert request is not None and [m.body for m in request.messages] == [b"new", b"new"]


def test_should_read_a_queue_that_appeared_later_from_its_first_offset(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    assert rebalancing.service.do_rebalance()
    grown = broker.create_topic(TOPIC, 6)
    broker.send_many(grown[5], [b"early"] * 3)
    rebalancing.service.on_route(TOPIC, set(grown))
    assert rebalancing.service.do_rebalance()
    state = rebalancing.harness.assigned.state(grown[5])
    assert state is not None and state.pull_offset == 0
    first = rebalancing.harness.assigned.state(queues[0])
    assert first is not None and first.pull_offset == 0  # LAST_OFFSET of an empty queue


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (ConsumeFromWhere.LAST_OFFSET, 9),
        (ConsumeFromWhere.FIRST_OFFSET, 0),
        (ConsumeFromWhere.TIMESTAMP, 6),
    ],
)
def test_should_start_a_queue_without_committed_offset_by_consume_from_where(
    broker: InMemoryBroker, queues: list[MessageQueue], where: ConsumeFromWhere, expected: int
) -> None:
    for offset in range(9):
        broker.send(queues[0], b"m", store_timestamp_ms=1000 + offset * 100)
    join(broker, ME)
    rebalancing = Rebalancing(broker, consume_from_where=where, consume_timestamp_ms=1550)
    assert rebalancing.service.compute_pull_from_where(queues[0]) == expected
    rebalancing.service.do_rebalance()
    state = rebalancing.harness.assigned.state(queues[0])
    assert state is not None and state.pull_offset == expected
    rebalancing.start_tasks()
    assert (queues[0], expected) in broker.pull_log


def test_should_drop_a_queue_and_persist_its_consumed_offset(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    rebalancing.service.do_rebalance()
    state = rebalancing.harness.assigned.state(queues[3])
    assert state is not None
    state.consume_offset = 42
    join(broker, OTHER)
    assert rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1]
    assert state.process_queue.dropped
    assert queues[3] not in rebalancing.harness.tasks
    assert broker.committed_offset(GROUP, queues[3]) == 42
    assert queues[3] not in rebalancing.store.offsets()


def test_should_persist_only_explicit_commits_of_a_dropped_queue_without_auto_commit(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker, auto_commit=False)
    rebalancing.service.do_rebalance()
    for queue in queues[2:]:
        state = rebalancing.harness.assigned.state(queue)
        assert state is not None
        state.consume_offset = 42
    rebalancing.store.update_offset(queues[3], 40)
    join(broker, OTHER)
    rebalancing.service.do_rebalance()
    assert broker.committed_offset(GROUP, queues[2]) == -1
    assert broker.committed_offset(GROUP, queues[3]) == 40


def test_should_be_unbalanced_without_a_route(broker: InMemoryBroker) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    assert not rebalancing.service.do_rebalance()
    assert rebalancing.owned() == []


def test_should_be_unbalanced_and_own_nothing_while_not_a_member(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, OTHER)
    rebalancing = Rebalancing(broker)
    assert not rebalancing.service.do_rebalance()
    assert rebalancing.owned() == []


def test_should_retry_a_start_offset_the_broker_cannot_give(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    broker.fail_next("query_offset", BrokerUnavailableError("down"))
    assert not rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [1, 2, 3]
    assert rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1, 2, 3]


def test_should_start_every_new_queue_at_once_and_take_it_over_from_the_broker(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    join(broker, OTHER)
    rebalancing = Rebalancing(broker, release_timeout_ms=60_000)
    rebalancing.service.do_rebalance()
    assert rebalancing.harness.scheduler.delays() == [0, 0]  # no fixed take-over delay
    states = [rebalancing.harness.assigned.state(q) for q in queues[:2]]
    assert all(state is not None and state.take_over for state in states)
    rebalancing.start_tasks()
    assert [broker.queue_holder(GROUP, q) for q in queues] == [ME, ME, "", ""]
    assert sorted(q.queue_id for q, _ in broker.pull_log) == [0, 1]


def test_should_take_over_at_the_committed_offset_once_the_live_holder_released(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[1], [b"m"] * 9)
    join(broker, OTHER)
    assert broker.acquire_queue(GROUP, queues[1], OTHER).granted
    broker.commit_offset(GROUP, queues[1], 2)  # its last periodic persist
    join(broker, ME)
    rebalancing = Rebalancing(broker, release_timeout_ms=60_000)
    rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1]
    rebalancing.start_tasks()  # queue 1 refused: OTHER still holds it
    assert [q.queue_id for q, _ in broker.pull_log] == [0]
    assert rebalancing.harness.scheduler.delays()[-1] == RELEASE_POLL_MS
    # OTHER dropped it: commit and release
    broker.release_queue(GROUP, queues[1], 5, client_id=OTHER)
    rebalancing.start_tasks()  # asked again: granted with the release's commit
    assert broker.pull_log[-1] == (queues[1], 5)
    assert broker.queue_holder(GROUP, queues[1]) == ME


def test_should_take_over_at_once_from_a_holder_that_left(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[3], [b"m"] * 9)
    join(broker, ME)
    join(broker, OTHER)
    assert broker.acquire_queue(GROUP, queues[3], OTHER).granted
    rebalancing = Rebalancing(broker, release_timeout_ms=60_000)
    rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1]
    broker.commit_offset(GROUP, queues[3], 7)  # the leaver persisted before it left
    broker.unregister(OTHER, GROUP)
    rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1, 2, 3]
    rebalancing.start_tasks()
    assert (queues[3], 7) in broker.pull_log
    assert rebalancing.harness.counters.release_waits == 0  # granted at the first ask


def test_should_commit_and_release_a_queue_the_rebalance_takes_away(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    broker.send_many(queues[3], [b"m"] * 9)
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    rebalancing.service.do_rebalance()
    rebalancing.start_tasks()
    assert broker.queue_holder(GROUP, queues[3]) == ME
    state = rebalancing.harness.assigned.state(queues[3])
    assert state is not None
    state.consume_offset = 4  # poll returned offsets 0-3
    join(broker, OTHER)
    rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1]
    assert broker.queue_holder(GROUP, queues[3]) == ""
    assert broker.committed_offset(GROUP, queues[3]) == 4
    assert broker.acquire_queue(GROUP, queues[3], OTHER) == QueueGrant("", 4)


def test_should_give_every_queue_to_every_broadcasting_consumer(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, OTHER)
    rebalancing = Rebalancing(broker, message_model=MessageModel.BROADCASTING)
    assert rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1, 2, 3]


def test_should_use_pushed_members_when_a_push_triggered_the_run(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker)
    rebalancing.service.on_membership(GROUP, [ME, OTHER])
    rebalancing.service.on_membership("another-group", [OTHER])
    rebalancing.service.do_rebalance(use_pushed_members=True)
    assert rebalancing.owned() == [0, 1]
    assert broker.calls["consumer_ids"] == 0
    assert broker.calls["fetch_subscribe_queues"] == 1  # no queues known yet
    rebalancing.service.do_rebalance()
    assert rebalancing.owned() == [0, 1, 2, 3]
    assert broker.calls["consumer_ids"] == 1
    rebalancing.service.on_membership(GROUP, [ME, OTHER])
    rebalancing.service.do_rebalance(use_pushed_members=True)
    assert rebalancing.owned() == [0, 1]
    assert broker.calls["fetch_subscribe_queues"] == 2  # the push reused the known queues


def test_should_rebalance_at_once_when_membership_is_pushed(
    broker: InMemoryBroker, queues: list[MessageQueue]
) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker, rebalance_interval_ms=60_000)
    service = rebalancing.service
    service.start()
    try:
        assert wait_for(lambda: rebalancing.owned() == [0, 1, 2, 3], 5)
        runs = service.runs
        service.on_membership(GROUP, [ME, OTHER])
        assert wait_for(lambda: rebalancing.owned() == [0, 1], 1.0)
        assert service.runs == runs + 1
    finally:
        service.shutdown()


def test_should_retry_soon_after_an_unbalanced_run(broker: InMemoryBroker) -> None:
    join(broker, ME)
    rebalancing = Rebalancing(broker, rebalance_interval_ms=60_000, rebalance_retry_interval_ms=20)
    service = rebalancing.service
    service.start()
    try:
        assert wait_for(lambda: service.runs >= 2, 5)
        assert not service.last_balanced
        broker.create_topic(TOPIC, 2)
        assert wait_for(lambda: rebalancing.owned() == [0, 1], 5)
        assert wait_for(lambda: service.last_balanced, 5)
        runs = service.runs
        assert not wait_for(lambda: service.runs > runs, 0.2)
    finally:
        service.shutdown()
