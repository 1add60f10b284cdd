"""Clients find a restarted broker at once: a running lite pull consumer and a producer, the
broker SIGKILLed and started again on the same gRPC port (with a new media driver directory).
The session's driver liveness check fails the old session, the route is looked up again, and
gRPC reconnects within its capped backoff."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import ClientError, GrpcClient, Message, MessageQueue
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer

TOPIC = "RestartTopic"
RESUME_S = 2.0
"""The issue's target, from the new broker's ready line to the first message consumed (and to
the producer's first send). Measured well under it on a quiet machine; a loaded 2-core CI
machine has the same bound (the old clients took 10-60 s)."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _start(data_dir: Path, port: int) -> ServerProcess:
    return start_broker_process(
        data_dir,
        "broker-restart",
        ["--grpc-port", str(port), "--flush-interval-ms", "50", "--ingress-udp-endpoint", "none"],
    )


@pytest.mark.slow
def test_should_resume_consuming_and_producing_within_two_seconds_of_a_broker_restart(
    tmp_path: Path,
) -> None:
    port = _free_port()
    broker = _start(tmp_path / "store", port)
    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group="restart-group",
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            broker_suspend_max_time_ms=500,
        )
    )
    try:
        with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
            admin.create_topic(TOPIC, read_queue_nums=1, write_queue_nums=1)
        queue = MessageQueue(TOPIC, "broker-restart", 0)
        consumer.assign([queue])
        consumer.start()
        with Producer("restart-producer", broker.grpc_address) as producer:
            producer.send(Message(TOPIC, b"before"))
            assert _poll_for(consumer, b"before", 30.0) is not None

            broker.kill()
            time.sleep(0.5)  # the clients are in the middle of their pulls and routes
            broker = _start(tmp_path / "store", port)
            ready = time.monotonic()
            sent_after_s = _send_until_ok(producer, b"after", ready + 30.0) - ready
            consumed_at = _poll_for(consumer, b"after", 30.0)
            assert consumed_at is not None, "the consumer never resumed"
            consumed_after_s = consumed_at - ready
            print(
                f"restart: producer resumed after {sent_after_s:.2f} s, "
                f"consumer after {consumed_after_s:.2f} s"
            )
            assert sent_after_s < RESUME_S
            assert consumed_after_s < RESUME_S
    finally:
        consumer.shutdown()
        broker.stop()


def _send_until_ok(producer: Producer, body: bytes, deadline: float) -> float:
    while True:
        try:
            producer.send(Message(TOPIC, body))
            return time.monotonic()
        except ClientError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _poll_for(consumer: DefaultLitePullConsumer, body: bytes, timeout_s: float) -> float | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for message in consumer.poll(100):
            if message.body == body:
                return time.monotonic()
    return None
