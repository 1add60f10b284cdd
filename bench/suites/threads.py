"""The CPU and the wake-ups of one message in every thread of the producer, the broker and
the consumer: a producer process sending 100 B messages one at a time (``Producer.send``), a
broker process on its defaults with a topic of one queue, and, but for ``send-only``, a
``DefaultLitePullConsumer`` process polling; each thread read from ``/proc`` before and after
the messages that follow a warm-up (``bench/_thread_stats.py``). Nothing is traced or profiled:
the processes run as a user's would.

Cases: ``send-only`` (sends back to back, no consumer), ``1000`` and ``5000`` (msgs/s, the
consumer polling); ``100`` too when ``AEROMQ_BENCH_THREADS_CASES`` names it (a comma-separated
list of cases, default ``send-only,1000,5000``). The clients send over IPC (their
``transport="auto"`` on the broker's host); ``AEROMQ_BENCH_THREADS_TRANSPORT=udp`` makes them
send over UDP to the broker's UDP ingress, each with a media driver of its own (its thread
among theirs), and the cases' names ``udp-CASE``. Rows ``threads:CASE:ROLE`` per process: ``cpu_us_per_msg`` and
``wakeups_per_msg`` of the whole process, then one entry a thread name (``us a message,
wake-ups a message``); the producer's row also has the sends a second it reached
(``msgs_per_s``). CPU and wake-ups a message hardly depend on the machine's load, the rate
does. The docs' figures of who spins and who sleeps (``docs/latency.md``) come from this suite.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from bench._harness import Result, case_rows, chosen, note
from bench._thread_stats import costs, sample
from bench._traced_run import send_paced, started_consumer, traced_broker, transport_from_env

CASES = {"send-only": 0, "100": 100, "1000": 1_000, "5000": 5_000}
"""Case -> rate (0: back to back, no consumer)."""
DEFAULT_CASES = ("send-only", "1000", "5000")
CASES_ENV = "AEROMQ_BENCH_THREADS_CASES"
TRANSPORT_ENV = "AEROMQ_BENCH_THREADS_TRANSPORT"
"""``udp``: the clients send over UDP (see module); else IPC."""
MESSAGES = {"send-only": 5_000, "100": 1_500, "1000": 5_000, "5000": 15_000}
QUICK_MESSAGES = {"send-only": 2_000, "100": 600, "1000": 2_000, "5000": 5_000}
WARM_UP = 300
TOPIC = "Threads"
GROUP = "threads"


def _produce(
    grpc: str,
    rate: int,
    count: int,
    transport: str,
    ready: EventType,
    go: EventType,
    out: Queue[float],
) -> None:
    """Warm up, then ``send()`` ``count`` messages, message ``i`` due at ``t0 + i / rate``
    (0: at once); puts the sends a second reached."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(transport=transport)
    with Producer("threads-producer", grpc, config=config) as producer:
        for _ in range(WARM_UP):
            producer.send(Message(TOPIC, b"w" * 100))
        ready.set()
        go.wait(60)
        started_ns = time.monotonic_ns()
        send_paced(lambda: producer.send(Message(TOPIC, b"m" * 100)), rate, count)
        out.put(count * 1e9 / (time.monotonic_ns() - started_ns))


def _consume(grpc: str, count: int, transport: str, ready: EventType, out: Queue[float]) -> None:
    """``poll()`` until the warm-up and ``count`` more messages came (2 minutes at most)."""
    consumer = started_consumer(grpc, GROUP, TOPIC, transport)
    try:
        ready.set()
        got = 0
        deadline = time.monotonic() + 120
        while got < WARM_UP + count and time.monotonic() < deadline:
            got += len(consumer.poll(200))
    finally:
        consumer.shutdown()
    out.put(float(got))


def _measure(root: Path, case: str, count: int, transport: str = "auto") -> list[Result]:
    """One run of ``case`` with the clients on ``transport``: its rows (see module)."""
    rate = CASES[case]
    if transport == "udp":
        case = f"udp-{case}"
    with traced_broker(root / f"broker-{case}", TOPIC) as broker:
        context = multiprocessing.get_context("spawn")
        go, out, done = context.Event(), context.Queue(), context.Queue()
        pids = {"broker": broker.pid}
        processes = []
        if rate:
            ready = context.Event()
            consumer = context.Process(
                target=_consume,
                args=(broker.grpc_address, count, transport, ready, done),
                daemon=True,
            )
            consumer.start()
            ready.wait(60)
            processes.append(consumer)
            pids["consumer"] = consumer.pid or 0
        ready = context.Event()
        producer = context.Process(
            target=_produce,
            args=(broker.grpc_address, rate, count, transport, ready, go, out),
            daemon=True,
        )
        producer.start()
        ready.wait(60)
        processes.append(producer)
        pids["producer"] = producer.pid or 0
        time.sleep(1.0)  # the warm-up's messages consumed
        before = {role: sample(pid) for role, pid in pids.items()}
        go.set()
        sends_per_s = out.get(timeout=count / max(rate, 500) * 3 + 120)
        if rate:
            done.get(timeout=120)
        after = {role: sample(pid) for role, pid in pids.items()}
        for process in processes:
            process.join(60)
    rows = []
    for role in ("producer", "broker", "consumer"):
        if role not in pids:
            continue
        threads = costs(before[role], after[role], count)
        cpu = sum(thread.cpu_us_per_msg for thread in threads)
        wakeups = sum(thread.wakeups_per_msg for thread in threads)
        extra: dict[str, object] = {
            "cpu_us_per_msg": round(cpu, 1),
            "wakeups_per_msg": round(wakeups, 2),
        }
        for thread in threads:
            if thread.cpu_us_per_msg >= 0.5 or thread.wakeups_per_msg >= 0.05:
                extra[thread.name] = (
                    f"{thread.cpu_us_per_msg:.1f} us, {thread.wakeups_per_msg:.2f} wake-ups"
                )
        rows.append(
            Result(
                f"threads:{case}:{role}",
                msgs_per_s=round(sends_per_s, 1) if role == "producer" else None,
                extra=extra,
            )
        )
        note(f"threads:{case}: {role} {cpu:.1f} us and {wakeups:.2f} wake-ups a message")
    return rows


def run(quick: bool) -> Iterator[Result]:
    """Each case (see module)."""
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-threads-"))
    transport = transport_from_env(TRANSPORT_ENV)
    cases = chosen(CASES_ENV, CASES, DEFAULT_CASES)
    try:
        for case in cases:
            count = (QUICK_MESSAGES if quick else MESSAGES)[case]
            name = f"threads:{'udp-' if transport == 'udp' else ''}{case}"
            yield from case_rows(name, _measure, root, case, count, transport, timeout_s=600)
    finally:
        shutil.rmtree(root, ignore_errors=True)
