"""Processes of the rebalance system test (run with the ``spawn`` start method).

A consumer writes one line per event to its file with ``os.write`` (so a SIGKILL loses nothing
it wrote): ``S <wall_ns>`` before ``start``, ``R <wall_ns>`` after it, ``A <wall_ns> <queues>`` at each assignment change
(queues as ``broker:id``, comma-separated), ``M <wall_ns> <broker:id:offset> ...`` per ``poll``,
written before the next ``poll`` commits them, and ``E <wall_ns>`` after a clean shutdown
(SIGTERM).
A producer sends batches round robin over the queues at a steady rate until the test creates its
stop file, then writes ``D <count>``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType

from aeromq.client import Message, MessageQueue


def _line(fd: int, text: str) -> None:
    os.write(fd, (text + "\n").encode())


def run_consumer(endpoints: str, group: str, topic: str, instance: str, path: str) -> None:
    from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
    from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)

    def on_change(topic_: str, all_queues: set[MessageQueue], owned: set[MessageQueue]) -> None:
        queues = ",".join(f"{q.broker_name}:{q.queue_id}" for q in sorted(owned))
        _line(fd, f"A {time.time_ns()} {queues}")

    config = LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(endpoints,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        instance_name=instance,
        pull_batch_size=32,
        persist_consumer_offset_interval_ms=1000,
        auto_commit_interval_ms=1000,
        broker_suspend_max_time_ms=2000,
    )
    consumer = DefaultLitePullConsumer(config=config, message_queue_listener=on_change)
    consumer.subscribe(topic)
    _line(fd, f"S {time.time_ns()}")
    consumer.start()
    _line(fd, f"R {time.time_ns()}")
    try:
        while not stop.is_set():
            messages = consumer.poll(100)
            if messages:
                keys = " ".join(f"{m.broker_name}:{m.queue_id}:{m.queue_offset}" for m in messages)
                _line(fd, f"M {time.time_ns()} {keys}")
    finally:
        consumer.shutdown()
        _line(fd, f"E {time.time_ns()}")
        os.close(fd)


def run_producer(
    endpoints: str, topic: str, stop_path: str, rate_per_s: int, max_count: int, path: str
) -> None:
    """Send batches round robin over the queues at ``rate_per_s`` messages a second until
    ``stop_path`` exists (or ``max_count`` are sent), then write ``D <count>``: a steady stream,
    so every queue the group moves still receives messages after the move."""
    from aeromq.producer import Producer

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    body = b"x" * 100
    batch_size = 50
    with Producer(f"producer-{os.getpid()}", endpoints, namesrv=True) as producer:
        queues = producer.fetch_publish_queues(topic)
        in_flight = []
        sent = 0
        index = 0
        started = time.monotonic()
        while sent < max_count and not os.path.exists(stop_path):
            ahead_s = started + sent / rate_per_s - time.monotonic()
            if ahead_s > 0:
                time.sleep(ahead_s)
            size = min(batch_size, max_count - sent)
            batch = [Message(topic, body) for _ in range(size)]
            in_flight.append(producer.send_batch_async(batch, queue=queues[index % len(queues)]))
            index += 1
            sent += size
            if len(in_flight) >= 8:
                in_flight.pop(0).result(30)
        for future in in_flight:
            future.result(30)
    _line(fd, f"D {sent}")
    os.close(fd)
