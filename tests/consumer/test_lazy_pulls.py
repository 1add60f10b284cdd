"""Lazy pulls (``consumer/pull_task.py``): a caught-up queue's next pull does not ring the
broker's doorbell. Step by step on the in-memory broker (which pulls go lazy, which do not), and
against a real ``aeromq broker`` process over IPC: a lazy pull is still answered empty at its
hold deadline, a message sent after a quiet period still reaches ``poll()`` (within a generous
bound, not a speed), and the broker's doorbell is rung once per held pull's deadline (by the
hold service), not twice (the consumer's next pull rings nothing)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from aeromq.client import Message, MessageQueue
from aeromq.common import retry_topic
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.consumer.pull_task import LAZY_PULL_MARGIN_MS
from aeromq.consumer.testing import InMemoryBroker
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, create_topic, start_broker
from tests.consumer._lite import FAST, GROUP, TOPIC, Harness, running

REAL_TOPIC = "LazyPulls"
HOLD_MS = 300


def answered_by_a_send_on_another_thread(broker: InMemoryBroker, queue: MessageQueue) -> None:
    sender = threading.Thread(target=broker.send, args=(queue, b"late"), name="answerer")
    sender.start()  # the held pull is answered on the sending thread, which pulls on
    sender.join(5)


def test_should_send_a_caught_up_queues_next_pull_lazy(broker: InMemoryBroker) -> None:
    queue = broker.create_topic(TOPIC, 1)[0]
    harness = Harness(broker, run_on_answer=True)
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()  # the first pull, from the scheduler: it rings
    assert broker.lazy_pulls == 0
    answered_by_a_send_on_another_thread(broker, queue)
    assert broker.pull_log == [(queue, 0), (queue, 1)]
    assert broker.lazy_pulls == 1 and harness.counters.lazy_pulls == 1


def test_should_ring_for_the_next_pull_after_a_backlogs_answer(broker: InMemoryBroker) -> None:
    queue = broker.create_topic(TOPIC, 1)[0]
    broker.send_many(queue, [b"m"] * 25)
    harness = Harness(broker, run_on_answer=True, pull_batch_size=10)
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()  # 0..9, then 10..19 from the answer's thread: not caught up
    assert broker.pull_log == [(queue, 0), (queue, 10)]
    assert broker.lazy_pulls == 0
    harness.scheduler.run_next()  # 20..24 (a scheduled run rings), then the caught-up pull
    assert broker.pull_log[-2:] == [(queue, 20), (queue, 25)]
    assert broker.lazy_pulls == 1


def test_should_ring_for_the_pulls_of_a_retry_topic(broker: InMemoryBroker) -> None:
    queue = broker.create_topic(retry_topic(GROUP), 1)[0]
    harness = Harness(broker, run_on_answer=True)
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    answered_by_a_send_on_another_thread(broker, queue)
    assert broker.pull_log == [(queue, 0), (queue, 1)]
    assert broker.lazy_pulls == 0


def test_should_ring_for_the_pull_after_a_seek(broker: InMemoryBroker) -> None:
    queue = broker.create_topic(TOPIC, 1)[0]
    harness = Harness(broker, run_on_answer=True)
    state = harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    state.seek_offset = 0  # comes while the pull is held: its answer is dropped
    answered_by_a_send_on_another_thread(broker, queue)
    assert broker.lazy_pulls == 0


def test_should_ask_a_lazy_pull_to_be_held_short_of_its_timeout(broker: InMemoryBroker) -> None:
    queue = broker.create_topic(TOPIC, 1)[0]
    suspends: list[tuple[int, bool]] = []
    pull_async = broker.pull_async

    def recording(*args: Any, **kwargs: Any) -> bool:
        suspends.append((args[5], kwargs.get("lazy", False)))
        return pull_async(*args, **kwargs)

    broker.pull_async = recording  # type: ignore[method-assign]
    harness = Harness(
        broker,
        run_on_answer=True,
        broker_suspend_max_time_ms=20_000,
        consumer_timeout_ms_when_suspend=20_000,  # allowed: as long as the hold
    )
    harness.assigned.add(queue, pull_offset=0)
    harness.task(queue).run()
    answered_by_a_send_on_another_thread(broker, queue)
    # the broker may read a lazy pull up to its idle park late: held a margin shorter
    assert suspends == [(20_000, False), (20_000 - LAZY_PULL_MARGIN_MS, True)]


# -- against a real broker ---------------------------------------------------------------


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("lazy-pulls"))
    try:
        create_topic(process, REAL_TOPIC, 1)
        yield process
    finally:
        process.stop()


def real_consumer(server: ServerProcess, group: str) -> DefaultLitePullConsumer:
    config = LitePullConsumerConfig(
        consumer_group=group, endpoints=(server.grpc_address,), **FAST
    )  # broker_suspend_max_time_ms 300
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(REAL_TOPIC, "*")
    return consumer


def ring_sequence(consumer: DefaultLitePullConsumer) -> int:
    """The broker agent's doorbell's ring count (31 bits, wraps), read through the consumer's
    session, which maps the same counter."""
    api = consumer._services.require_api()
    assert isinstance(api, GrpcBrokerApi)
    session = api.answer_pump()
    assert session is not None and session.rings_broker
    bell = session._sender.broker_doorbell
    assert bell is not None
    return bell.prepare() >> 1


def poll_until(consumer: DefaultLitePullConsumer, count: int, timeout_s: float) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got.extend(m.body for m in consumer.poll(200))
    return got


def test_should_deliver_a_message_sent_after_a_quiet_period_to_a_caught_up_consumer(
    real_broker: ServerProcess,
) -> None:
    consumer = real_consumer(real_broker, "lazy-quiet")
    with Producer("lazy-quiet-producer", real_broker.grpc_address) as producer:
        producer.send(Message(REAL_TOPIC, b"warm"))
        with running(consumer):
            assert poll_until(consumer, 1, 10.0)[-1:] == [b"warm"]
            time.sleep(0.8)  # quiet: the lazy pulls are held, answered empty, sent again
            counters = consumer.flow_control_counters
            assert counters.lazy_pulls >= 1, counters
            producer.send(Message(REAL_TOPIC, b"after the quiet"))
            assert poll_until(consumer, 1, 2.0) == [b"after the quiet"]


def test_should_answer_lazy_pulls_at_their_hold_deadline_without_ringing_for_them(
    real_broker: ServerProcess,
) -> None:
    consumer = real_consumer(real_broker, "lazy-rings")
    with running(consumer):
        poll_until(consumer, 1 << 30, 1.0)  # caught up (whatever the other test sent)
        counters = consumer.flow_control_counters
        pulls, lazy, rings = counters.pulls, counters.lazy_pulls, ring_sequence(consumer)
        time.sleep(2.0)  # nothing sent: each pull held 300 ms, answered empty, sent again
        pulls = counters.pulls - pulls
        lazy = counters.lazy_pulls - lazy
        rings = (ring_sequence(consumer) - rings) & 0x7FFF_FFFF
        assert counters.pull_errors == 0
    # held pulls kept being answered at their deadline (2 s of 300 ms holds, each read up to
    # the broker's 100 ms park late): 4 or more even on a loaded machine; each answer's next
    # pull went lazy
    assert pulls >= 4, (pulls, lazy)
    assert lazy >= pulls - 1, (pulls, lazy)
    # the hold service rings once per deadline; a pull that rang would ring once more each
    # (2 * pulls): the margin is a keepalive or two
    assert rings <= pulls + 2, (rings, pulls)
