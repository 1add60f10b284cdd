"""A long-polling pull, held by a broker process for a puller process, returns within 50 ms of
an arrival in its queue."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.client import Message, MessageQueue
from aeromq.client.grpc_client import GrpcClient
from aeromq.producer import Producer, ProducerConfig
from aeromq.proto import messages_pb2
from tests.broker.data._system import long_poll_worker
from tests.system.conftest import ADMIN_TIMEOUT_S, Workers

ROUNDS = 7


@pytest.mark.slow
def test_should_answer_a_held_pull_within_50_ms_of_an_arrival(
    tmp_path: Path, workers: Workers
) -> None:
    broker = start_broker_process(
        tmp_path / "data",
        extra_args=["--ingress-udp-endpoint", "none", "--index-enabled", "false",
                    "--commit-log-segment-bytes", "16MiB", "--log-level", "WARNING"],
    )  # fmt: skip
    try:
        with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
            admin.create_topic("polled", read_queue_nums=2, write_queue_nums=2)
        queue = MessageQueue("polled", "broker-a", 1)
        with Producer("long-poll-test", broker.grpc_address, config=ProducerConfig()) as producer:
            producer.send(
                Message("polled", b"warm up"), queue=MessageQueue("polled", "broker-a", 0)
            )
            workers.start(long_poll_worker, broker.ready, "polled", 1, ROUNDS)
            latencies_ms = []
            for round_ in range(ROUNDS):
                workers.expect("holding", 30)
                time.sleep(0.2)  # the pull is held by now: nothing arrived for it
                sent_ns = time.monotonic_ns()
                producer.send(Message("polled", b"arrival %d" % round_), queue=queue)
                _, answered_round, answered_ns, status, count = workers.expect("answered", 30)
                assert (answered_round, status, count) == (round_, messages_pb2.FOUND, 1)
                latencies_ms.append((answered_ns - sent_ns) / 1e6)
        # measured from before the send: an upper bound of arrival-to-answer. Typical is 2-5 ms;
        # a machine loaded far past its 2 cores can stall any process for a while, so allow
        # two stragglers, still far below the 10 s suspend a missed wake-up would take
        within = [ms for ms in latencies_ms if ms < 50]
        assert len(within) >= ROUNDS - 2 and statistics.median(latencies_ms) < 50, latencies_ms
        assert max(latencies_ms) < 1_000, latencies_ms
        workers.join()
    finally:
        broker.stop()
