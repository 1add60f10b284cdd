"""The CPU of one message, function by function: a producer process sending 100 B messages
one at a time (``Producer.send``), a broker process on its defaults with a topic of one queue,
and, but for ``send-only``, a ``DefaultLitePullConsumer`` process polling; every thread of every
process profiled (``bench/_thread_profile.py``: ``cProfile``, off by default, on here through
``bench/_profile_site`` on ``PYTHONPATH`` and ``AEROMQ_PROFILE_DIR``), over the messages after
a warm-up (the broker's window starts once the clients' warm-up is sent and read: none of it
counts).

Cases: ``send-only`` (sends back to back, no consumer) and ``1000`` (1,000 msgs/s, the
consumer polling); ``100`` (100 msgs/s) when ``AEROMQ_BENCH_PROFILE_CASES`` names it (a
comma-separated list of cases, default ``send-only,1000``). The clients send over IPC (their
``transport="auto"`` on the broker's host); ``AEROMQ_BENCH_PROFILE_TRANSPORT=udp`` makes them
send over UDP to the broker's UDP ingress, each with a media driver of its own, and the cases'
names ``udp-CASE``. Rows ``profile:CASE:ROLE`` per process: ``calls_per_msg`` (the calls a
message takes in that process: a count that hardly depends on the machine's load, but for the
polls of a thread waiting for its answer), ``python_calls_per_msg`` (those of Python
functions, built-ins left out; the profiler's own, its snapshot at the window's end, left out
of both), for the consumer and the broker with a consumer ``pulls_per_msg`` (below 1 when a
loaded machine makes a pull bring more than one message, which lowers the counts a message)
and, for the consumer, ``python_calls_per_pull`` (its Python calls over its pulls, which hardly
move with that), ``profiled_us_per_msg`` (the own time of every entry but the waits: cProfile makes it
two to three times what it is unprofiled), and the entries of most own time, each ``us a message (profiled), calls a message``. A
process that runs a media driver (the broker's embedded one; a client's own over UDP) has its
driver thread's figures too (the thread that runs ``CompositeAgent.do_work``):
``driver_cycles_per_msg`` (its duty cycles), ``driver_parks_per_msg`` (its parks in the socket
waiter) and ``driver_python_calls_per_msg``. The docs' profile (``docs/latency.md``) comes from
this suite.
"""

from __future__ import annotations

import marshal
import multiprocessing
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event as EventType
from pathlib import Path
from typing import Final

from bench import _thread_profile
from bench._harness import Result, case_rows, chosen, note
from bench._traced_run import (
    send_paced,
    started_consumer,
    traced_broker,
    traced_environment,
    transport_from_env,
)

CASES = {"send-only": 0, "100": 100, "1000": 1_000}
"""Case -> rate (0: back to back, no consumer)."""
DEFAULT_CASES = ("send-only", "1000")
CASES_ENV = "AEROMQ_BENCH_PROFILE_CASES"
TRANSPORT_ENV = "AEROMQ_BENCH_PROFILE_TRANSPORT"
"""``udp``: the clients send over UDP (see module); else IPC."""
MESSAGES = 3_000
QUICK_MESSAGES = 1_000
WARM_UP = 300
TOPIC = "Profile"
GROUP = "profile"
_SITE = Path(__file__).resolve().parents[1] / "_profile_site"
_TOP = 12
_PROFILER = "cProfile.py"
_AGENT_MODULE = "concurrent/agent.py"
_PULLS: Final = {
    "consumer": ("consumer/_grpc_broker_api.py", "pull_async"),
    "broker": ("processor/pull.py", "process"),
}
"""Each role's function called once a pull (the consumer sends it, the broker takes it)."""
_WAITER_MODULE = "udp/socket_waiter.py"


def _produce(
    grpc: str,
    rate: int,
    count: int,
    transport: str,
    warm: EventType,
    go: EventType,
    out: Queue[str],
) -> None:
    """``send()`` ``count`` messages, message ``i`` due at ``t0 + i / rate`` (0: at once),
    after a warm-up (``warm`` set once it is sent)."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(transport=transport)
    with Producer("profile-producer", grpc, config=config) as producer:
        for _ in range(WARM_UP):
            producer.send(Message(TOPIC, b"w" * 100))
        warm.set()
        go.wait(60)
        _thread_profile.mark()
        send_paced(lambda: producer.send(Message(TOPIC, b"m" * 100)), rate, count)
        _thread_profile.dump()
    out.put("producer")


def _consume(
    grpc: str,
    count: int,
    transport: str,
    ready: EventType,
    warm: EventType,
    go: EventType,
    out: Queue[str],
) -> None:
    """``poll()`` until the warm-up (``warm`` set then), then until ``count`` more messages
    came."""
    consumer = started_consumer(grpc, GROUP, TOPIC, transport)
    try:
        ready.set()
        got = 0
        deadline = time.monotonic() + 120
        while got < WARM_UP and time.monotonic() < deadline:
            got += len(consumer.poll(200))
        warm.set()
        go.wait(60)
        _thread_profile.mark()
        got = 0
        while got < count and time.monotonic() < deadline:
            got += len(consumer.poll(200))
        _thread_profile.dump()
    finally:
        consumer.shutdown()
    out.put("consumer")


def _measure(root: Path, case: str, count: int, transport: str = "auto") -> list[Result]:
    """One profiled run of ``case`` with the clients on ``transport``: its rows (see
    module)."""
    rate = CASES[case]
    if transport == "udp":
        case = f"udp-{case}"
    traces = root / f"profile-{case}"
    traces.mkdir()
    role = _thread_profile.PROFILE_ROLE_ENV
    variables = {_thread_profile.PROFILE_DIR_ENV: str(traces), role: "broker"}
    with (
        traced_environment(_SITE, variables),
        traced_broker(root / f"broker-{case}", TOPIC) as broker,
    ):
        context = multiprocessing.get_context("spawn")
        ready, go, out = context.Event(), context.Event(), context.Queue()
        warm = [context.Event()]
        processes = []
        if rate:
            os.environ[role] = "consumer"
            warm.append(context.Event())
            consumer = context.Process(
                target=_consume,
                args=(broker.grpc_address, count, transport, ready, warm[1], go, out),
                daemon=True,
            )
            consumer.start()
            ready.wait(60)
            processes.append(consumer)
        os.environ[role] = "producer"
        producer = context.Process(
            target=_produce,
            args=(broker.grpc_address, rate, count, transport, warm[0], go, out),
            daemon=True,
        )
        producer.start()
        processes.append(producer)
        for event in warm:  # every warm-up message sent and read: none in the broker's window
            event.wait(120)
        time.sleep(0.5)  # the warm-up's last answers out
        os.kill(broker.pid, signal.SIGUSR1)  # the broker's window starts
        time.sleep(0.2)
        go.set()
        for _ in processes:
            out.get(timeout=count / max(rate, 500) * 3 + 120)
        os.kill(broker.pid, signal.SIGUSR2)  # the broker writes its counts
        time.sleep(1.0)
        for process in processes:
            process.join(60)
    return _rows(_thread_profile.load(traces), _driver_threads(traces), case, count)


def _driver_threads(traces: Path) -> dict[str, _thread_profile.Stats]:
    """Each role's media driver thread (see module), from its thread's own file."""
    drivers: dict[str, _thread_profile.Stats] = {}
    for path in sorted(traces.glob("*.prof")):
        with open(path, "rb") as source:
            stats: _thread_profile.Stats = marshal.load(source)
        if any(_is_cycle(func) for func in stats):
            drivers[path.name.split("-", 1)[0]] = stats
    return drivers


def _is_cycle(func: _thread_profile.Func) -> bool:
    """The composite agent's duty cycle (the media driver's thread runs one)."""
    return func[2] == "do_work" and func[0].endswith(_AGENT_MODULE)


def _driver_extra(stats: _thread_profile.Stats, count: int) -> dict[str, object]:
    cycles = sum(entry[1] for func, entry in stats.items() if _is_cycle(func))
    parks = sum(
        entry[1]
        for func, entry in stats.items()
        if func[2] == "wait" and func[0].endswith(_WAITER_MODULE)
    )
    python = _thread_profile.calls(stats)[1]
    return {
        "driver_cycles_per_msg": round(cycles / count, 2),
        "driver_parks_per_msg": round(parks / count, 2),
        "driver_python_calls_per_msg": round(python / count, 1),
    }


def _rows(
    roles: dict[str, _thread_profile.Stats],
    drivers: dict[str, _thread_profile.Stats],
    case: str,
    count: int,
) -> list[Result]:
    rows = []
    for role in ("producer", "broker", "consumer"):
        stats = roles.get(role)
        if not stats:
            continue
        # the profiler's own calls in the window (its snapshot at the dump) left out
        stats = {func: entry for func, entry in stats.items() if _PROFILER not in func[0]}
        total, python = _thread_profile.calls(stats)
        entries = _thread_profile.top(stats, _TOP)
        working_s = _thread_profile.doing(stats)
        extra: dict[str, object] = {
            "calls_per_msg": round(total / count, 1),
            "python_calls_per_msg": round(python / count, 1),
            "profiled_us_per_msg": round(working_s * 1e6 / count, 1),
        }
        pull = _PULLS.get(role)
        if pull is not None and "send-only" not in case:
            pulls = sum(
                entry[1]
                for func, entry in stats.items()
                if func[2] == pull[1] and func[0].endswith(pull[0])
            )
            extra["pulls_per_msg"] = round(pulls / count, 2)
            if pulls and role == "consumer":  # (hardly moved by how many a pull brings)
                extra["python_calls_per_pull"] = round(python / pulls, 1)
        driver = drivers.get(role)
        if driver is not None:
            extra.update(_driver_extra(driver, count))
        for func, entry in entries:
            extra[_thread_profile.label(func)] = (
                f"{entry[2] * 1e6 / count:.1f} us, {entry[1] / count:.2f} calls"
            )
        rows.append(Result(f"profile:{case}:{role}", extra=extra))
        note(
            f"profile:{case}: {role} {extra['calls_per_msg']} calls a message "
            f"({extra['python_calls_per_msg']} of Python functions), "
            f"{extra['profiled_us_per_msg']} us profiled"
            + (
                f"; driver {extra['driver_cycles_per_msg']} cycles, "
                f"{extra['driver_parks_per_msg']} parks, "
                f"{extra['driver_python_calls_per_msg']} Python calls a message"
                if driver is not None
                else ""
            )
        )
    return rows


def run(quick: bool) -> Iterator[Result]:
    """Each case, profiled (see module)."""
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-profile-"))
    count = QUICK_MESSAGES if quick else MESSAGES
    transport = transport_from_env(TRANSPORT_ENV)
    cases = chosen(CASES_ENV, CASES, DEFAULT_CASES)
    try:
        for case in cases:
            name = f"profile:{'udp-' if transport == 'udp' else ''}{case}"
            yield from case_rows(name, _measure, root, case, count, transport, timeout_s=600)
    finally:
        shutil.rmtree(root, ignore_errors=True)
