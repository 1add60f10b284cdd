"""Orderly push consumers in real processes keep each queue's order through handler failures
and a rebalance: consumer A consumes a topic of four queues alone, B joins (two queues move,
handed over once A's message in hand is done and A unlocked them), then A is SIGKILLed (B gets
the rest as soon as the broker sees A's membership stream break). Each queue's messages are
consumed in order by whoever held it; a message is consumed twice only where its consumer was
killed before its offset was persisted, and the re-delivery then starts no later than the next
message (no gap, no step back inside one consumer's run)."""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import time
from collections import defaultdict
from multiprocessing.process import BaseProcess
from pathlib import Path

from aeromq.client import Message
from aeromq.producer import Producer
from tests.consumer._broker_process import create_topic, start_broker
from tests.consumer.push._orderly_worker import run_orderly_consumer

TOPIC = "OrderlyTopic"
GROUP = "orderly-group"
QUEUES = 4
PER_QUEUE = 60
"""Sent in two halves: the second once B has started, so both consumers have work."""
WORK_MS = 10
FAIL_EVERY = 7


def _consumed(path: Path) -> list[tuple[int, int, int]]:
    """(wall ns, queue id, number) of each message the process consumed."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "C":
            queue_id, number = parts[3].split(":")
            out.append((int(parts[1]), int(queue_id), int(number)))
    return out


def _wait(check: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_should_keep_each_queues_order_through_failures_a_join_and_a_kill(
    tmp_path: Path,
) -> None:
    broker = start_broker(tmp_path)
    context = multiprocessing.get_context("spawn")
    processes: dict[str, BaseProcess] = {}
    producer: Producer | None = None
    paths = {name: tmp_path / f"{name}.log" for name in ("a", "b")}
    try:
        create_topic(broker, TOPIC, QUEUES)
        producer = Producer("orderly-producer", broker.grpc_address).start()
        queues = sorted(producer.fetch_publish_queues(TOPIC), key=lambda q: q.queue_id)

        def send(numbers: range) -> None:
            for number in numbers:
                for queue in queues:
                    body = f"{queue.queue_id}:{number}".encode()
                    producer.send(Message(TOPIC, body), queue=queue)

        send(range(PER_QUEUE // 2))

        def start(name: str) -> None:
            process = context.Process(
                target=run_orderly_consumer,
                args=(
                    broker.grpc_address,
                    GROUP,
                    TOPIC,
                    name,
                    str(paths[name]),
                    WORK_MS,
                    FAIL_EVERY,
                ),
                daemon=True,
            )
            process.start()
            processes[name] = process

        start("a")
        _wait(lambda: len(_consumed(paths["a"])) >= 40, 60, "A consuming")
        start("b")
        _wait(lambda: paths["b"].exists() and "S " in paths["b"].read_text(), 60, "B started")
        send(range(PER_QUEUE // 2, PER_QUEUE))
        producer.shutdown()
        _wait(lambda: len(_consumed(paths["b"])) >= 5, 60, "B consuming")
        os.kill(processes["a"].pid or 0, signal.SIGKILL)
        processes["a"].join(10)

        def done() -> bool:
            seen = {(q, n) for name in paths for _, q, n in _consumed(paths[name])}
            return len(seen) == QUEUES * PER_QUEUE

        _wait(done, 90, "every message consumed")
        processes["b"].terminate()
        processes["b"].join(20)
        assert processes["b"].exitcode == 0
        _check_order({name: _consumed(path) for name, path in paths.items()})
    finally:
        for process in processes.values():
            if process.is_alive():
                process.kill()
                process.join(10)
        if producer is not None:
            producer.shutdown()  # idempotent
        broker.stop()


def _check_order(consumed: dict[str, list[tuple[int, int, int]]]) -> None:
    by_queue: defaultdict[int, list[tuple[int, str, int]]] = defaultdict(list)
    for name, events in consumed.items():
        for wall_ns, queue_id, number in events:
            by_queue[queue_id].append((wall_ns, name, number))
    moved = 0
    for queue_id, events in by_queue.items():
        events.sort()
        numbers = [number for _, _, number in events]
        assert set(numbers) == set(range(PER_QUEUE)), f"queue {queue_id} misses messages"
        for (_, before_name, before), (_, name, number) in itertools.pairwise(events):
            if name == before_name:
                assert number == before + 1, f"queue {queue_id}: {name} {before} -> {number}"
            else:  # a hand-over: the new owner goes on, or repeats what the killed one did
                moved += 1
                assert number <= before + 1, f"queue {queue_id}: gap {before} -> {number}"
                if number <= before:
                    assert before_name == "a", f"queue {queue_id}: repeat after a clean move"
    assert moved >= 2, "no queue changed hands"
