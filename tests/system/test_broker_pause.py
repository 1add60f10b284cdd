"""A broker process stopped (``SIGSTOP``: a debugger, a suspended VM, a starved host) for longer
than its media driver's client liveness timeout works again once resumed (``SIGCONT``).

Its embedded driver and its own Aeron client stopped together: the driver, seeing its own stall,
gives its clients a fresh liveness timeout, and the broker's client conductor, seeing its own,
carries on because the driver still holds it (``transport/driver/conductor.py``,
``transport/client/client_liveness.py``). Before, the broker's client closed itself on the
interval (Aeron's rule) and the broker took no session on its ingress again. The broker runs with
a 2 s client liveness timeout (``AERON_CLIENT_LIVENESS_TIMEOUT``) and is stopped for
:data:`PAUSE_S`.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import GrpcClient, Message, MessageQueue
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer
from tests.system._driver import start_driver

TOPIC = "PauseTopic"
LIVENESS_TIMEOUT = "2s"
PAUSE_S = 4.0
"""Past the 2 s client liveness timeout and the driver's stall threshold (2 timer intervals),
short of the clients' 10 s driver timeout."""
DEADLINE_S = 30.0


def _one_message_stored(broker: ServerProcess, producer_name: str) -> None:
    """The topic made and one message sent to it."""
    with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
        admin.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
    with Producer(producer_name, broker.grpc_address) as producer:
        producer.send(Message(TOPIC, b"before"))


def _stop_for(broker: ServerProcess, seconds: float) -> None:
    """SIGSTOP the broker, and SIGCONT it ``seconds`` later (whatever happens meanwhile)."""
    os.kill(broker.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(broker.pid, signal.SIGCONT)


def _poll_until(consumer: DefaultLitePullConsumer, count: int) -> list[bytes]:
    bodies: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(bodies) < count and time.monotonic() < deadline:
        bodies += [message.body for message in consumer.poll(timeout_ms=200)]
    return bodies


@pytest.mark.slow
def test_should_take_sessions_and_serve_them_after_being_stopped_past_the_liveness_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AERON_CLIENT_LIVENESS_TIMEOUT", LIVENESS_TIMEOUT)
    broker = start_broker_process(tmp_path / "store", "broker-pause")
    monkeypatch.delenv("AERON_CLIENT_LIVENESS_TIMEOUT")
    try:
        _one_message_stored(broker, "pause-before")
        _stop_for(broker, PAUSE_S)
        with Producer("pause-after", broker.grpc_address) as producer:  # a new session
            result = producer.send(Message(TOPIC, b"after"))
        assert result.queue_offset == 1
        config = LitePullConsumerConfig(
            consumer_group="pause-group",
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        )
        with DefaultLitePullConsumer(config=config) as consumer:
            consumer.assign([MessageQueue(TOPIC, "broker-pause", 0)])
            assert _poll_until(consumer, 2) == [b"before", b"after"]
        assert broker.process.poll() is None
    finally:
        broker.stop()
    errors = [line for line in broker.log if "transport error" in line]
    assert errors == [], errors


@pytest.mark.slow
def test_should_exit_with_status_one_when_its_external_driver_dropped_it_while_stopped(
    tmp_path: Path,
) -> None:
    driver = start_driver(tmp_path / "aeron")  # a 1.5 s client liveness timeout
    broker = start_broker_process(
        tmp_path / "store",
        "broker-external",
        ["--aeron-dir", driver.aeron_dir, "--ingress-udp-endpoint", "none"],
    )
    try:
        _one_message_stored(broker, "external-before")
        _stop_for(broker, PAUSE_S)  # the driver, running on, times the broker's client out
        exit_code = broker.process.wait(DEADLINE_S)
    finally:
        broker.stop()
        driver.stop()
    assert exit_code == 1
    assert any("its transport failed" in line for line in broker.log), broker.log[-20:]
