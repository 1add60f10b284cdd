"""The columnar cases of ``bench broker``: columns in through ``Producer.send_columns_async``,
``poll_batch()`` out of a ``DefaultLitePullConsumer``, on the suite's broker, after its other
aeromq cases: ``aeromq:produce-columnar`` (3,000,000 rows; 300,000 with ``--quick``) and
``aeromq:end-to-end-columnar`` (the same rows, the consumer started first), each on a topic
of its own of 4 queues; targets (issue 36): >= 1,000,000 msgs/s each, with the client and
broker CPU per message in each row's ``extra`` (what a rate on a shared machine hides).

Producer (:func:`produce_columns`): the bodies of 100 B are one numpy array of rows, made once;
each call sends :data:`CHUNK_ROWS` of them (each row's first 8 bytes the call's send time,
monotonic ns, then its sequence), :data:`CALLS_IN_FLIGHT` calls in flight; the producer cuts
each call into record batches (``producer/_columns.py``). Latency is per call, from the send to
the last batch's acknowledgement. Consumer (:func:`poll_columns`): a ``DefaultLitePullConsumer``
of the topic's 4 queues (pulls of 1,024 messages, the most it asks), each ``poll_batch()``'s
send stamps read from the bodies as columns; end-to-end latency per message, from its send
time to the poll that returned it.

Both report as the other workers of ``bench.suites.broker`` do: ``("produced", elapsed_ns,
latencies, cpu_s)`` and ``("consumed", elapsed_ns, received, poll_latencies, e2e, cpu_s)``.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Final, Protocol

from bench._harness import Result, Target

if TYPE_CHECKING:
    from concurrent.futures import Future
    from multiprocessing.process import BaseProcess

    import numpy as np
    import numpy.typing as npt

    from aeromq.broker.testing import ServerProcess
    from aeromq.producer import ColumnSendResults
    from bench.suites.broker import Outbox

__all__ = [
    "CALLS_IN_FLIGHT",
    "CASES",
    "CHUNK_ROWS",
    "TARGET_MSGS_PER_S",
    "PhaseRunner",
    "cases",
    "poll_columns",
    "produce_columns",
    "targets",
]

CHUNK_ROWS: Final = 16_384
"""Rows of one ``send_columns_async`` call."""
CALLS_IN_FLIGHT: Final = 4
"""Calls the producer keeps in flight."""
BODY_LENGTH: Final = 100
_WAIT_S: Final = 60


def _rows(count: int) -> npt.NDArray[np.uint8]:
    """``count`` bodies of :data:`BODY_LENGTH` bytes: a zero stamp, the sequence, dots."""
    import numpy as np

    rows = np.full((count, BODY_LENGTH), ord("."), np.uint8)
    rows[:, :8] = 0
    rows[:, 8:16] = np.arange(count, dtype="<i8").view(np.uint8).reshape(count, 8)
    return rows


def produce_columns(grpc: str, topic: str, count: int, out: Outbox) -> None:
    """Send ``count`` rows in calls of :data:`CHUNK_ROWS`, :data:`CALLS_IN_FLIGHT` in flight."""
    import numpy as np

    from aeromq.producer import Producer

    rows = _rows(count)
    stamps = rows[:, :8].view("<i8")  # each row's send time, written before its call
    latencies: list[int] = []
    with Producer("bench-columnar-producer", grpc) as producer:
        producer.send_columns(topic, _rows(1))  # connect and warm up
        window: deque[tuple[Future[ColumnSendResults], int]] = deque()
        cpu = time.process_time()
        began = time.monotonic_ns()
        for start in range(0, count, CHUNK_ROWS):
            chunk = rows[start : start + CHUNK_ROWS]
            sent_ns = time.monotonic_ns()
            stamps[start : start + len(chunk)] = sent_ns
            window.append((producer.send_columns_async(topic, chunk), sent_ns))
            if len(window) >= CALLS_IN_FLIGHT:
                future, sent_ns = window.popleft()
                future.result(_WAIT_S)
                latencies.append(time.monotonic_ns() - sent_ns)
        for future, sent_ns in window:
            future.result(_WAIT_S)
            latencies.append(time.monotonic_ns() - sent_ns)
        elapsed_ns = time.monotonic_ns() - began
        cpu = time.process_time() - cpu
    assert np.all(stamps > 0)
    out.put(("produced", elapsed_ns, latencies, cpu))


def poll_columns(grpc: str, topic: str, count: int, live: bool, out: Outbox) -> None:
    """``poll_batch()`` until ``count`` messages arrived (the first of a live run from its
    send time, else from the first poll that found any)."""
    import numpy as np

    from aeromq.consumer import (
        ConsumeFromWhere,
        DefaultLitePullConsumer,
        LitePullConsumerConfig,
    )

    config = LitePullConsumerConfig(
        consumer_group="bench-columnar-consumer",
        endpoints=(grpc,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        pull_batch_size=1024,
        pull_threshold_for_queue=16_384,
        pull_threshold_for_all=65_536,
        consume_max_span=65_535,
        max_poll_records=16_384,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(topic, "*")
    received = 0
    poll_latencies: list[int] = []
    e2e: list[npt.NDArray[np.int64]] = []
    stamp_bytes = np.arange(8)
    began = last_ns = 0
    cpu = 0.0
    with consumer:
        consumer.poll_batch(10)  # the rebalance: queues assigned, pulls started
        out.put(("ready",))
        deadline = time.monotonic() + 120
        while received < count and time.monotonic() < deadline:
            asked_ns = time.monotonic_ns()
            batch = consumer.poll_batch(1_000)
            now_ns = time.monotonic_ns()
            if not len(batch):
                continue
            poll_latencies.append(now_ns - asked_ns)
            starts, data = batch.bodies()
            stamps = data[starts[:-1, None] + stamp_bytes].view("<i8").ravel()
            if not began:
                began = min(asked_ns, int(stamps.min())) if live else asked_ns
                cpu = time.process_time()
            last_ns = now_ns
            received += len(stamps)
            e2e.append(now_ns - stamps)
        cpu = time.process_time() - cpu
    latencies = np.concatenate(e2e).tolist() if e2e else []
    out.put(("consumed", last_ns - began, received, poll_latencies, latencies, cpu))


CASES: Final = ["aeromq:produce-columnar", "aeromq:end-to-end-columnar"]
"""The cases of :func:`cases`, named as ``bench.suites.broker`` names its rows."""
TARGET_MSGS_PER_S: Final = 1_000_000
_TOPICS: Final = {"produce": "BenchProduceColumnar", "e2e": "BenchEndToEndColumnar"}


class PhaseRunner(Protocol):
    """``bench.suites.broker._phase``: one phase's workers started, their rows."""

    def __call__(
        self,
        kind: str,
        name: str,
        pid: int,
        count: int,
        start: dict[str, Callable[..., BaseProcess]],
        suffix: str = "",
    ) -> Iterator[Result]: ...


def cases(
    broker: ServerProcess, count: int, limit_s: float, phase: PhaseRunner
) -> Iterator[Result]:
    """``aeromq:produce-columnar`` and ``aeromq:end-to-end-columnar`` on ``broker`` (its
    topics made first: the consumer subscribes before the first send), each bounded in
    time."""
    import multiprocessing

    from aeromq.client import GrpcClient
    from bench._harness import case_rows

    grpc = broker.grpc_address
    with GrpcClient(grpc, timeout_s=30) as admin:
        for topic in _TOPICS.values():
            admin.create_topic(topic, read_queue_nums=4, write_queue_nums=4)

    def spawn(target: Callable[..., None], *args: object) -> BaseProcess:
        context = multiprocessing.get_context("spawn")
        process = context.Process(target=target, args=args, daemon=True)
        process.start()
        return process

    start: dict[str, Callable[..., BaseProcess]] = {
        "produce": lambda t, n, out: spawn(produce_columns, grpc, _TOPICS[t], n, out),
        "consume": lambda t, live, out: spawn(poll_columns, grpc, _TOPICS[t], count, live, out),
    }
    for kind, case in zip(("produce", "end-to-end"), CASES, strict=True):
        rows = phase(kind, "aeromq", broker.pid, count, start, "-columnar")
        yield from case_rows(case, list, rows, timeout_s=limit_s)


def targets(rows: dict[str, Result]) -> Iterator[Target]:
    """The issue's targets: each columnar case at 1,000,000 msgs/s or more."""
    from bench._harness import figure

    for case in CASES:
        yield Target(f"{case} msgs/s", figure(rows, case), TARGET_MSGS_PER_S, "msgs/s")
