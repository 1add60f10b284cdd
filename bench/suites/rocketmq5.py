"""RocketMQ 5 clients on aeromq: the official Python client's send + receive + ack throughput
against the broker's RocketMQ 5 endpoint, beside aeromq's own clients on the same broker, in one
run (issue 18: reported, no target yet).

One broker process, the broker suite's (``aeromq.broker.testing``: embedded media driver, ASYNC
flush, 4 queues, auto-created topics; the RocketMQ 5 endpoint on a free port). ``official``: the ``rocketmq-python-client`` in a process of its own
(``bench/peers/rocketmq5_official.py bench``: ``Producer.send_async`` with 32 in flight, then a
``SimpleConsumer`` receiving batches of 32 and acking each message). ``aeromq``: this process,
``Producer.send_async`` with 32 in flight, then a ``DefaultLitePullConsumer`` polling from the
first offset (its offsets committed automatically: the lite consumer's ack). Bodies are 100 B.
The ``send+receive+ack`` row's ``extra`` has the client's and the broker's CPU per message
over the whole run. Without the official
client installed (the ``test`` extra), its row is skipped with one line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from aeromq.broker.testing import ServerProcess
from aeromq.transport.util import process_cpu_s
from bench._harness import Result, Target
from bench.suites.broker import _cpu_extra, _start_broker

BODY_LENGTH = 100
WINDOW = 32
OFFICIAL = Path(__file__).resolve().parents[1] / "peers" / "rocketmq5_official.py"


def _rows(
    name: str, count: int, send_s: float, receive_s: float, cpu: dict[str, float]
) -> Iterator[Result]:
    yield Result(f"{name}:send", msgs_per_s=count / send_s)
    yield Result(f"{name}:receive+ack", msgs_per_s=count / receive_s)
    yield Result(f"{name}:send+receive+ack", msgs_per_s=count / (send_s + receive_s), extra=cpu)


def _run_official(broker: ServerProcess, count: int) -> Iterator[Result]:
    server_cpu = process_cpu_s(broker.pid)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, str(OFFICIAL), "bench", broker.ready["rocketmq"], "bench-official",
         "bench-official-readers", str(count), str(BODY_LENGTH)],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"official client failed: {done.stderr[-2000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    if answer["received"] < count:
        raise RuntimeError(f"official client received {answer['received']} of {count}")
    cpu = _cpu_extra(count, answer["cpu_s"], process_cpu_s(broker.pid) - server_cpu)
    yield from _rows("official", count, answer["send_s"], answer["receive_s"], cpu)


def _run_aeromq(broker: ServerProcess, count: int) -> Iterator[Result]:
    from aeromq.client import Message
    from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
    from aeromq.producer import Producer

    topic = "bench-aeromq"
    body = b"x" * BODY_LENGTH
    server_cpu = process_cpu_s(broker.pid)
    cpu = time.process_time()
    with Producer("bench-aeromq-producers", broker.grpc_address) as producer:
        producer.send(Message(topic, body))  # warm up: route, session
        began = time.perf_counter()
        window = []
        for _ in range(count):
            window.append(producer.send_async(Message(topic, body)))
            if len(window) >= WINDOW:
                window.pop(0).result(30)
        for future in window:
            future.result(30)
        sent = time.perf_counter()
    config = LitePullConsumerConfig(
        consumer_group="bench-aeromq-readers",
        endpoints=(broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(topic, "*")
    received = 0
    deadline = time.monotonic() + 300
    with consumer:
        start = time.perf_counter()
        while received < count + 1 and time.monotonic() < deadline:
            received += len(consumer.poll(timeout_ms=1000))
        done = time.perf_counter()
    if received < count + 1:
        raise RuntimeError(f"aeromq consumer received {received} of {count + 1}")
    extra = _cpu_extra(count, time.process_time() - cpu, process_cpu_s(broker.pid) - server_cpu)
    yield from _rows("aeromq", count, sent - began, done - start, extra)


def run(quick: bool) -> Iterator[Result | Target]:
    count = 2_000 if quick else 20_000
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-rocketmq5-"))
    broker = _start_broker(root)
    try:
        yield from _run_aeromq(broker, count)
        if importlib.util.find_spec("rocketmq") is None:
            yield Result("official skipped: rocketmq-python-client not installed (test extra)")
        else:
            yield from _run_official(broker, count)
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)
