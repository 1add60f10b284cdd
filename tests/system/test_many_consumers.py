"""Many consumers on one broker: membership streams hold no server thread, so with 200
consumers subscribed (crowds of membership streams from other processes, and real lite pull
consumers) route lookups, admin calls and new clients are still answered at once."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.client import Message
from aeromq.client.grpc_client import GrpcClient
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, create_topic, start_broker
from tests.system._crowd import crowd
from tests.system.conftest import Workers

TOPIC = "CrowdTopic"
CROWDS = 3
PER_CROWD = 65
REAL = 5
ANSWER_S = 1.0
"""The issue's target for admin calls and route lookups with 200 consumers subscribed. Each
such call takes a few milliseconds on an idle machine; 1 s holds on a loaded 2-core CI machine
too (the old thread-per-stream server did not answer at all past 32 consumers)."""


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path, "broker-crowd")
    try:
        create_topic(process, TOPIC, 4)
        yield process
    finally:
        process.stop()


def _answered_in_time(call: Callable[[], Any]) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


@pytest.mark.slow
def test_should_answer_admin_calls_and_route_lookups_within_a_second_with_200_consumers(
    broker: ServerProcess, workers: Workers
) -> None:
    stop = workers.event()
    for index in range(CROWDS):
        workers.start(crowd, broker.grpc_address, f"crowd{index}", PER_CROWD, 20, TOPIC, stop)
    for _ in range(CROWDS):
        report = workers.expect("subscribed", timeout_s=90)
        assert report[2] == PER_CROWD
    consumers = [
        DefaultLitePullConsumer(
            config=LitePullConsumerConfig(
                consumer_group="crowd-real",
                endpoints=(broker.grpc_address,),
                consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
                broker_suspend_max_time_ms=1000,
                instance_name=f"real{index}",
            )
        )
        for index in range(REAL)
    ]
    try:
        for consumer in consumers:
            consumer.subscribe(TOPIC)
            consumer.start()
        with GrpcClient(broker.grpc_address, timeout_s=ANSWER_S) as admin:
            deadline = time.monotonic() + 30
            while admin.broker_stats(timeout_s=5).consumer_count < CROWDS * PER_CROWD + REAL:
                assert time.monotonic() < deadline, "not every consumer registered"
                time.sleep(0.2)
            timings = {
                "QueryRoute": _answered_in_time(lambda: admin.query_route(TOPIC)),
                "ListGroups": _answered_in_time(admin.list_groups),
                "GetBrokerStats": _answered_in_time(admin.broker_stats),
                "GetConsumerIds": _answered_in_time(lambda: admin.get_consumer_ids("crowd-0")),
                "CreateTopic": _answered_in_time(
                    lambda: admin.create_topic("CrowdLate", read_queue_nums=1, write_queue_nums=1)
                ),
            }
            assert max(timings.values()) < ANSWER_S, timings
            assert len(admin.get_consumer_ids("crowd-real").consumer_ids) == REAL
        with Producer("crowd-producer", broker.grpc_address) as producer:
            producer.send(Message(TOPIC, b"to the real consumers"))
        got: list[Any] = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:
            for consumer in consumers:
                got.extend(consumer.poll(100))
        assert [m.body for m in got] == [b"to the real consumers"]
    finally:
        for consumer in consumers:
            consumer.shutdown()
        stop.set()
    for _ in range(CROWDS):
        workers.expect("left", timeout_s=60)
