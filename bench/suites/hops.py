"""Where one message's microseconds go, hop by hop: a producer process sending 100 B messages
one at a time (``Producer.send``) at 10 and at 1,000 msgs/s, a ``DefaultLitePullConsumer``
process polling, a broker process on its defaults with a topic of one queue, every process
traced (``bench/_hop_trace.py``: off by default, on here through ``bench/_hop_site`` on
``PYTHONPATH`` and ``AEROMQ_HOPS_DIR``).

Rows, per rate:

- ``hops:RATE:STEP`` for each step of a message's path (``bench._hop_trace.CHAIN``: send()
  called, offered, polled by the session agent, stored, answered, read by the consumer, cached,
  returned by ``poll()``): ``p50_us`` is the step's time since ``send()`` was called, ``extra``
  its own time (since the step before) and what it is;
- ``hops:RATE:beside:STEP`` for each step off that path (``bench._hop_trace.BESIDE``: the
  send's answer): ``p50_us`` since ``send()`` was called, ``extra`` its time since the step it
  follows and the share of messages where it came after the pull's answer was offered;
- ``hops:RATE:cpu:ROLE`` for each process: the CPU between consecutive events of its busiest
  threads (median, in ``extra``, as ``thread: from > to``), and its wake-ups a message (the
  voluntary context switches of its threads, ``/proc``).

With ``AEROMQ_BENCH_HOPS_TRANSPORT=udp`` (:data:`TRANSPORT_ENV`) both clients talk to the
broker over UDP on loopback, each through a media driver of its own, rather than over IPC.

The tracing itself costs about a microsecond an event. The docs' per-hop timeline
(``docs/latency.md``) comes from this suite, run on the code before and after a change.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import statistics
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

from bench import _hop_trace
from bench._harness import Result, case_rows, note
from bench._proc_cpu import cpu_ns
from bench._traced_run import send_paced, traced_broker, traced_environment, transport_from_env

Usage = tuple[str, int, int]
"""A role's report: (role, CPU ns, wake-ups) over its run."""

RATES = (10, 1_000)
MESSAGES = {10: 200, 1_000: 5_000}
QUICK_MESSAGES = {10: 40, 1_000: 1_000}
WARM_UP = {10: 5, 1_000: 200}
TOPIC = "Hops"
GROUP = "hops"
_SITE = Path(__file__).resolve().parents[1] / "_hop_site"
TRANSPORT_ENV = "AEROMQ_BENCH_HOPS_TRANSPORT"
"""``udp``: the clients talk to the broker over UDP (see module); else IPC."""
_STEPS_SHOWN = 8


def _produce(grpc: str, rate: int, count: int, go: EventType, out: Queue[Usage]) -> None:
    """``send()`` one message at a time, message ``i`` due at ``t0 + i / rate``."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(transport=transport_from_env(TRANSPORT_ENV))
    with Producer("hops-producer", grpc, config=config) as producer:
        producer.send(Message(TOPIC, b"w" * 100))
        go.wait(60)
        used, woken = cpu_ns(os.getpid()), _wakeups(os.getpid())
        send_paced(lambda: producer.send(Message(TOPIC, b"m" * 100)), rate, count)
        out.put(("producer", cpu_ns(os.getpid()) - used, _wakeups(os.getpid()) - woken))


def _consume(grpc: str, count: int, ready: EventType, out: Queue[Usage]) -> None:
    """``poll()`` in a loop until ``count`` messages (and the warm-up one) came."""
    from aeromq.consumer import DefaultLitePullConsumer, LitePullConsumerConfig

    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=GROUP, endpoints=(grpc,), transport=transport_from_env(TRANSPORT_ENV)
        )
    )
    consumer.subscribe(TOPIC, "*")
    consumer.start()
    try:
        got = len(consumer.poll(200))
        ready.set()
        deadline = time.monotonic() + 120
        used, woken = 0, 0
        while got < count + 1 and time.monotonic() < deadline:
            polled = len(consumer.poll(200))
            if polled and not used:  # the first messages: the run is on
                used, woken = cpu_ns(os.getpid()), _wakeups(os.getpid())
            got += polled
        out.put(("consumer", cpu_ns(os.getpid()) - used, _wakeups(os.getpid()) - woken))
    finally:
        consumer.shutdown()


def _wakeups(pid: int) -> int:
    """The voluntary context switches of every thread of ``pid`` so far."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("voluntary_ctxt_switches:"):
                        total += int(line.split()[1])
        except OSError:  # a thread that ended meanwhile
            continue
    return total


@dataclass(frozen=True)
class TracedRun:
    """What one traced run recorded: every process's events by role (``_hop_trace.load``),
    each process's CPU ns and wake-ups over the run, and how many messages to leave out as
    the warm-up."""

    roles: dict[str, list[_hop_trace.Event]]
    usage: dict[str, tuple[int, int]]
    skip: int


def traced_run(root: Path, rate: int, count: int, warm_up: int | None = None) -> TracedRun:
    """One traced run of ``count`` messages at ``rate`` (see module), its trace kept in a new
    folder of ``root``; the first ``warm_up`` messages (default :data:`WARM_UP`'s for the rate,
    or a tenth of ``count`` for another rate) are the warm-up. The suite's rows come from it;
    so can a script's own look at the events."""
    trace = root / f"trace-{rate}-{count}"
    trace.mkdir()
    with (
        traced_environment(_SITE, {_hop_trace.HOPS_DIR_ENV: str(trace)}),
        traced_broker(root / f"broker-{rate}", TOPIC) as broker,
    ):
        context = multiprocessing.get_context("spawn")
        ready, go, out = context.Event(), context.Event(), context.Queue()
        consumer = context.Process(
            target=_consume, args=(broker.grpc_address, count, ready, out), daemon=True
        )
        consumer.start()
        ready.wait(60)
        producer = context.Process(
            target=_produce, args=(broker.grpc_address, rate, count, go, out), daemon=True
        )
        producer.start()
        time.sleep(1.0)  # connected and warm
        usage = {"broker": (cpu_ns(broker.pid), _wakeups(broker.pid))}
        go.set()
        reports = [out.get(timeout=count / rate * 3 + 120) for _ in range(2)]
        usage = {
            "broker": (
                cpu_ns(broker.pid) - usage["broker"][0],
                _wakeups(broker.pid) - usage["broker"][1],
            ),
            **{role: (used, woken) for role, used, woken in reports},
        }
        producer.join(60)
        consumer.join(60)
        os.kill(broker.pid, signal.SIGUSR1)  # the broker writes its events
        time.sleep(1.0)
    skip = WARM_UP.get(rate, count // 10) if warm_up is None else warm_up
    return TracedRun(_hop_trace.load(trace), usage, skip)


def _measure(root: Path, rate: int, count: int) -> list[Result]:
    """One traced run at ``rate``: its rows (see module)."""
    return rows_of(traced_run(root, rate, count), rate, count)


def rows_of(run: TracedRun, rate: int, count: int) -> list[Result]:
    """The suite's rows of ``run``, a traced run of ``count`` messages at ``rate`` (see
    module)."""
    return _rows(run.roles, rate, count, run.usage, run.skip)


def _rows(
    roles: dict[str, list[_hop_trace.Event]],
    rate: int,
    count: int,
    usage: dict[str, tuple[int, int]],
    skip: int,
) -> list[Result]:
    paths = _hop_trace.chains(roles, skip=skip)
    if not paths:
        raise RuntimeError(f"no message was followed from send() to poll() at {rate} msgs/s")
    rows = []
    previous = 0.0
    for index, (_, name, what) in enumerate(_hop_trace.CHAIN):
        at = statistics.median(path[index] - path[0] for path in paths) / 1e3
        alone = statistics.median(path[index] - path[max(0, index - 1)] for path in paths) / 1e3
        rows.append(
            Result(
                f"hops:{rate}:{index:02d}:{name}",
                p50_us=at,
                extra={"step_p50_us": round(alone, 1), "what": what, "followed": len(paths)},
            )
        )
        previous = at
    answered = [name for _, name, _ in _hop_trace.CHAIN].index("answer")
    for (_, name, index, what), times in zip(
        _hop_trace.BESIDE, _hop_trace.beside(roles, paths), strict=True
    ):
        found = [(path, at) for path, at in zip(paths, times, strict=True) if at]
        if not found:
            continue
        rows.append(
            Result(
                f"hops:{rate}:beside:{name}",
                p50_us=statistics.median(at - path[0] for path, at in found) / 1e3,
                extra={
                    "step_p50_us": round(
                        statistics.median(at - path[index] for path, at in found) / 1e3, 1
                    ),
                    "what": what,
                    "after_the_pulls_answer": round(
                        sum(at > path[answered] for path, at in found) / len(found), 3
                    ),
                    "followed": len(found),
                },
            )
        )
    note(f"hops:{rate}: {len(paths)} messages followed, send() to poll() p50 {previous:.0f} us")
    for role, events in roles.items():
        steps = _hop_trace.steps(events, least=max(5, count // 10))[:_STEPS_SHOWN]
        used_ns, woken = usage.get(role, (0, 0))
        extra: dict[str, object] = {
            "cpu_us_per_msg": round(used_ns / 1e3 / count, 1),
            "wakeups_per_msg": round(woken / count, 2),
        }
        for hop in steps:
            extra[f"{hop.thread}: {hop.start} > {hop.end}"] = (
                f"cpu {hop.cpu_us:.1f} us, wall {hop.wall_us:.1f} us, n {hop.count}"
            )
        rows.append(Result(f"hops:{rate}:cpu:{role}", extra=extra))
        note(
            f"hops:{rate}: {role} {extra['cpu_us_per_msg']} us of CPU and "
            f"{extra['wakeups_per_msg']} wake-ups a message"
        )
    return rows


def run(quick: bool) -> Iterator[Result]:
    """Each rate, traced (see module)."""
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-hops-"))
    try:
        for rate in RATES:
            count = (QUICK_MESSAGES if quick else MESSAGES)[rate]
            yield from case_rows(
                f"hops:{rate}", _measure, root, rate, count, timeout_s=count / rate * 3 + 240
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
