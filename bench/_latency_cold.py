"""The first ``send()`` after a quiet while against the sends that follow it: the
``aeromq:cold:QUIET`` rows of ``python -m bench latency``.

A producer process (IPC, its route cached for longer than the run, so no send fetches one)
sends a few warm-up messages, then, for each round, sleeps ``quiet_s``, times one ``send()``
(the cold one) and five more 20 ms apart (the warm ones). For every send it records the wall
time, the CPU of the calling thread and the CPU of the broker's process (all its threads, from
``/proc``) over the call. A wait on the path shows as wall time without CPU; a path that is
slower because the machine's caches, TLBs and page tables went cold while it was quiet shows as
CPU (on ``docs/latency.md``'s 2-core VM the same calls cost 3 to 30 times their warm CPU after a
quiet second). The row: the cold send's p50 and max, the warm sends' p50, and the CPU figures.

Used by :mod:`bench.suites.latency`; the producer runs in a process of its own (spawned).
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from multiprocessing.connection import Connection

from bench._harness import Result, note
from bench._latency_run import spawn
from bench._proc_cpu import cpu_ns

WARM_UP_SENDS = 20
WARM_SENDS = 5
WARM_GAP_S = 0.02

Sample = tuple[int, int, int]
"""One send: (wall ns, the caller's CPU ns, the broker's CPU ns)."""


def cold_producer(
    grpc: str, topic: str, broker_pid: int, quiet_s: float, rounds: int, out: Connection
) -> None:
    """In its own process: the rounds (see module); sends ``(cold, warm)`` sample lists."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    keep_route_ms = int((quiet_s + 1) * rounds * 1000 + 600_000)
    config = ProducerConfig(route_refresh_interval_ms=keep_route_ms)
    cold: list[Sample] = []
    warm: list[Sample] = []
    with Producer("bench-cold", [grpc], config=config) as producer:
        message = Message(topic, b"c" * 100)

        def timed() -> Sample:
            broker_before, cpu_before = cpu_ns(broker_pid), time.thread_time_ns()
            started = time.perf_counter_ns()
            producer.send(message)
            wall = time.perf_counter_ns() - started
            return wall, time.thread_time_ns() - cpu_before, cpu_ns(broker_pid) - broker_before

        for _ in range(WARM_UP_SENDS):
            producer.send(message)
        for _ in range(rounds):
            time.sleep(quiet_s)
            cold.append(timed())
            for _ in range(WARM_SENDS):
                time.sleep(WARM_GAP_S)
                warm.append(timed())
    out.send((cold, warm))
    out.close()


def cold_row(
    name: str, grpc: str, topic: str, broker_pid: int, quiet_s: float, rounds: int
) -> Result:
    """One ``aeromq:cold:QUIET`` row (see module), the producer in a spawned process."""
    receiver, sender = multiprocessing.get_context("spawn").Pipe(duplex=False)
    process = spawn(cold_producer, grpc, topic, broker_pid, quiet_s, rounds, sender)
    sender.close()
    try:
        limit_s = rounds * (quiet_s + 1.0) + 60.0
        if not receiver.poll(limit_s):
            raise TimeoutError(f"{name}: no samples within {limit_s:.0f} s")
        cold, warm = receiver.recv()
    finally:
        receiver.close()
        process.join(10)
        if process.is_alive():
            process.kill()
    row = _row(name, quiet_s, cold, warm)
    note(
        f"{name}: cold send p50 {row.p50_us:.0f} us (max {row.extra['cold_max_us']:.0f}), "
        f"warm p50 {row.extra['warm_p50_us']:.0f} us; CPU of the cold send: caller "
        f"{row.extra['cold_caller_cpu_p50_us']:.0f} us, broker "
        f"{row.extra['cold_broker_cpu_p50_us']:.0f} us"
    )
    return row


def _p50_us(samples: list[Sample], field: int) -> float:
    return round(statistics.median(sample[field] for sample in samples) / 1e3, 1)


def _row(name: str, quiet_s: float, cold: list[Sample], warm: list[Sample]) -> Result:
    """The row's figures: wall p50/max of the cold sends, p50 of the warm, CPU p50 of both."""
    return Result(
        name,
        p50_us=_p50_us(cold, 0),
        extra={
            "quiet_s": quiet_s,
            "rounds": len(cold),
            "cold_max_us": round(max(sample[0] for sample in cold) / 1e3, 1),
            "warm_p50_us": _p50_us(warm, 0),
            "cold_caller_cpu_p50_us": _p50_us(cold, 1),
            "warm_caller_cpu_p50_us": _p50_us(warm, 1),
            "cold_broker_cpu_p50_us": _p50_us(cold, 2),
            "warm_broker_cpu_p50_us": _p50_us(warm, 2),
        },
    )
