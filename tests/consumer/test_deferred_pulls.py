"""Deferred pulls (``consumer/pull_task.py``): a caught-up queue's next pull, when a ``poll()``
read its answer, goes out at the application's next ``poll()``, not before that ``poll()``
returns. Against a real ``aeromq broker`` process over IPC: with deferral (the default) nothing
is pulled while the application works between two polls, up to ``deferred_pull_max_delay_ms``,
and what was sent meanwhile comes with the next ``poll()``; past that bound the pull goes out
from the scheduler; without deferral (``defer_caught_up_pulls=False``) the pull is out before
``poll()`` returns, and what was sent meanwhile is in the cache before the next ``poll()``.
Either way every message comes once and in order."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from aeromq.client import Message
from aeromq.client.session import ClientSession
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, create_topic, start_broker
from tests.consumer._lite import FAST, running

TOPIC = "DeferredPulls"
WORK_S = 0.3
"""The application's work between two polls."""


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("deferred-pulls"))
    try:
        create_topic(process, TOPIC, 1)
        yield process
    finally:
        process.stop()


def consumer_of(
    server: ServerProcess, group: str, *, defer: bool, bound_ms: int = 100
) -> DefaultLitePullConsumer:
    config = LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(server.grpc_address,),
        defer_caught_up_pulls=defer,
        deferred_pull_max_delay_ms=bound_ms,
        **{**FAST, "broker_suspend_max_time_ms": 20_000},  # held until the next arrival
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    return consumer


def poll_one(consumer: DefaultLitePullConsumer, timeout_s: float = 5.0) -> list[bytes]:
    """Poll until something comes (or ``timeout_s``): the bodies of the first poll that
    returned any."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = consumer.poll(200)
        if got:
            return [message.body for message in got]
    return []


CATCH_UP_S = 15.0
"""How long ``catch_up`` sends marks: past the 5 s a replaced session's former member may
linger (``client.broker_sessions.FORMER_SESSION_LINGER_MS``), during which ``poll()`` reads no
answers itself (there is no sole session) and none is deferred."""


def deferral_pending(consumer: DefaultLitePullConsumer) -> bool:
    """Whether a pull waits for the next ``poll()`` (or the bound) now."""
    return bool(consumer._cache._deferred)


def catch_up(consumer: DefaultLitePullConsumer, producer: Producer, mark: bytes) -> None:
    """Send marks, polling until each comes, until one's answer was read by a ``poll()`` which
    left its next pull to the next ``poll()``, and that pull still waits: the consumer is caught
    up. (The first pull goes out from the scheduler's thread before any ``poll()``, so the
    session's poller thread reads for a while, racing the ``poll()``s for the answers, until it
    keeps away; under load it may still read one now and then, and then sends the next pull at
    once; with ``defer`` False, one mark.) Up to :data:`CATCH_UP_S`, and 1,000 marks."""
    counters = consumer.flow_control_counters
    deferred = counters.deferred_pulls
    marks_without_pump = 0
    end = time.monotonic() + CATCH_UP_S
    for i in range(1_000):
        body = mark + b"-%d" % i
        if _answer_pump(consumer) is None:
            marks_without_pump += 1
        producer.send(Message(TOPIC, body))
        deadline = time.monotonic() + 10.0
        while body not in [message.body for message in consumer.poll(200)]:
            if time.monotonic() > deadline:
                pytest.fail(f"{body!r} never came")
        if not consumer._services.config.defer_caught_up_pulls:
            return
        if counters.deferred_pulls > deferred and deferral_pending(consumer):
            return
        if time.monotonic() > end:
            break
    pytest.fail(
        f"no answer read by a poll() whose next pull still waits, in {i + 1} marks"
        f" ({marks_without_pump} sent with no sole session to read): {counters};"
        f" {_pump_state(consumer)}"
    )


def _answer_pump(consumer: DefaultLitePullConsumer) -> ClientSession | None:
    """The session whose answers ``poll()`` reads itself now (None: none, it waits for the
    poller thread's)."""
    api = consumer._services.api
    return api.answer_pump() if isinstance(api, GrpcBrokerApi) else None


def _pump_state(consumer: DefaultLitePullConsumer) -> str:
    """Why ``poll()`` may not have read the answers itself: the session it would read, and
    whether that session is read so (for a failure's message)."""
    api = consumer._services.api
    if not isinstance(api, GrpcBrokerApi):
        return f"no answer pump: {type(api).__name__}"
    session = _answer_pump(consumer)
    if session is None:
        return "no sole open session (several, or a former member lingering, or not open)"
    return f"session reads_when_rung={session._reader.reads_when_rung}"


def test_should_pull_a_caught_up_queue_at_the_next_poll_not_before_poll_returns(
    real_broker: ServerProcess,
) -> None:
    # (a bound past the application's work: nothing goes out from the scheduler meanwhile)
    consumer = consumer_of(real_broker, "deferred-on", defer=True, bound_ms=30_000)
    with Producer("deferred-on-producer", real_broker.grpc_address) as producer, running(consumer):
        counters = consumer.flow_control_counters
        bodies: list[bytes] = []
        deferred_answers = 0
        for i in range(5):
            if not deferral_pending(consumer):  # (the poller thread read the last answer)
                catch_up(consumer, producer, b"mark-on-%d" % i)
            deferred, pulls = counters.deferred_pulls, counters.pulls
            producer.send(Message(TOPIC, b"sent while the application works %d" % i))
            time.sleep(WORK_S)  # the application's work: nothing pulled meanwhile
            assert counters.pulls == pulls, counters
            assert len(consumer._cache) == 0  # so nothing prefetched either
            bodies += poll_one(consumer)  # its pull goes out first, then it waits
            assert counters.pulls > pulls
            deferred_answers += counters.deferred_pulls > deferred  # its next pull waits
        assert bodies == [b"sent while the application works %d" % i for i in range(5)]
        # (the session's poller thread may read an answer now and then under load: most wait)
        assert deferred_answers >= 3, counters
        assert counters.pull_errors == 0 and counters.stale_results == 0


def test_should_pull_from_the_scheduler_once_the_application_has_not_polled_within_the_bound(
    real_broker: ServerProcess,
) -> None:
    bound_ms = 1_000  # a stall of the machine shorter than two thirds of it is tolerated
    consumer = consumer_of(real_broker, "deferred-bound", defer=True, bound_ms=bound_ms)
    with (
        Producer("deferred-bound-producer", real_broker.grpc_address) as producer,
        running(consumer),
    ):
        counters = consumer.flow_control_counters
        for i in range(3):
            catch_up(consumer, producer, b"mark-bound-%d" % i)  # the last answer's pull waits
            pulls, deferred_at = counters.pulls, time.monotonic()
            time.sleep(bound_ms / 1e3 / 3)
            assert counters.pulls == pulls, counters  # within the bound: still waits for poll()
            deadline = deferred_at + 5.0  # the application does not poll: the bound sends it
            while counters.pulls == pulls and time.monotonic() < deadline:
                time.sleep(0.005)
            assert counters.pulls > pulls, counters
            assert time.monotonic() - deferred_at >= bound_ms / 1e3
            body = b"sent while nobody polls %d" % i
            producer.send(Message(TOPIC, body))
            deadline = time.monotonic() + 5.0  # the pull was out: the answer comes unasked
            while not len(consumer._cache) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(consumer._cache) == 1
            assert poll_one(consumer) == [body]
        assert counters.pull_errors == 0 and counters.stale_results == 0


def test_should_pull_before_poll_returns_when_deferral_is_off(
    real_broker: ServerProcess,
) -> None:
    consumer = consumer_of(real_broker, "deferred-off", defer=False)
    with Producer("deferred-off-producer", real_broker.grpc_address) as producer, running(consumer):
        catch_up(consumer, producer, b"mark-off")
        counters = consumer.flow_control_counters
        bodies: list[bytes] = []
        for i in range(3):
            producer.send(Message(TOPIC, b"prefetched %d" % i))
            deadline = time.monotonic() + 5.0  # the pull was out: the answer comes unasked
            while not len(consumer._cache) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(consumer._cache) == 1
            bodies += poll_one(consumer)
        assert bodies == [b"prefetched %d" % i for i in range(3)]
        assert counters.deferred_pulls == 0


def test_should_deliver_every_message_once_in_order_to_a_consumer_keeping_up(
    real_broker: ServerProcess,
) -> None:
    consumer = consumer_of(real_broker, "deferred-order", defer=True)
    sent = [b"in order %03d" % i for i in range(200)]
    with (
        Producer("deferred-order-producer", real_broker.grpc_address) as producer,
        running(consumer),
    ):
        catch_up(consumer, producer, b"mark-order")
        got: list[bytes] = []
        for body in sent:  # one at a time: every answer leaves the queue caught up
            producer.send(Message(TOPIC, body))
            got += poll_one(consumer)
        assert got == sent
        assert consumer.flow_control_counters.deferred_pulls >= len(sent) // 2
