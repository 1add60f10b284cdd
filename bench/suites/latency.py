"""Latency as a user with an ordinary workload sees it: one producer process sending 100 B
messages one at a time (each send acknowledged) at a fixed rate, one consumer process polling
on the client's defaults, the broker on its defaults in a process of its own (embedded media
driver), all on this machine; beside Redis Streams, NATS JetStream and the floor (no broker:
pipes), measured in the same run.

Latency is from a message's scheduled send time to ``poll()`` returning it. The schedule is
open loop (message ``i`` is due at ``t0 + i / rate``; a late send does not skip, so queueing
counts); the due time travels in the body and every process reads one ``CLOCK_MONOTONIC``
(:mod:`bench._schedule`). Messages due in the first seconds (the warm-up) are not measured.
Each row: the achieved send rate (msgs/s; ``fell_behind`` when the producer could not keep the
schedule within 1%), p50/p99/p99.9 (p90 and max in the JSON) from an HDR histogram, the send
call's own p50/p99 (``send_p50_us``, ``send_p99_us``), how late the producer's wake-ups were
(``lag_*``), and the CPU of every process over the run (user + system, % of a core and us per
message; ``cpu_total_us_per_msg``). An aeromq case that fails with its broker gone says so, with
the broker's exit status and last lines of output (:func:`broker_exit`).

Cases: ``aeromq:ipc:RATE`` (the clients on IPC, the default on one host), ``aeromq:udp:RATE``
(each client with its own media driver, the broker's UDP ingress on 127.0.0.1),
``aeromq:send-only:max`` (``send()`` one at a time as fast as it returns, no consumer; the
p-columns are the send's duration), ``aeromq:cold:QUIET`` (a ``send()`` after QUIET seconds
with no traffic, a few rounds: its p50 and max, the warm sends' p50, the CPU of both in the
caller and the broker: :mod:`bench._latency_cold`), ``aeromq:idle-broker`` (a broker with no traffic, just
after start-up settled). Baselines: ``baseline:floor:RATE`` (producer -> relay -> consumer over
pipes, two wake-ups per message: the physical limit here), ``baseline:redis-streams:RATE``
(``XADD`` one at a time, ``XREADGROUP ... BLOCK``; AOF every second) with
``baseline:redis-streams:send-only:max``, ``baseline:nats-jetstream:RATE`` (``js.publish``
awaited one at a time; a durable pull consumer's ``fetch``; file storage). Each system's
roles: :mod:`bench._latency_systems`.

``AEROMQ_BENCH_CPU_AFFINITY='server=1 producer=1 consumer=0'`` pins every system's processes
alike, by role, and the rows say where (:mod:`bench._affinity`; docs/latency.md tells why).
``AEROMQ_BENCH_LATENCY_DUMP=DIR`` makes every run's producer and consumer also write each
message's figures there (``bench._latency_roles.dump``: the send's duration and lag, the
receipt's sequence and latency), to find what the slow ones waited for.

Targets (the issue's, over IPC): at 10 to 5,000 msgs/s, aeromq's p50 within 1.5x the floor's,
its p99 <= 1 ms, its p50 and p99 below Redis Streams' and NATS JetStream's; 5,000 msgs/s kept
with a consumer running; >= 20,000 msgs/s ``send()`` one at a time with no consumer; the CPU of
broker + producer + consumer at 1,000 msgs/s no more than Redis's; an idle broker under 2% of
a core.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path

from aeromq.broker.testing import ServerProcess, start_broker_process
from bench._baselines import baseline_rows
from bench._gc_stats import GC_DIR_ENV
from bench._harness import Result, Target, case_rows, figure, note, ratio_of, started
from bench._latency_cold import cold_row
from bench._latency_roles import Link, relay
from bench._latency_run import measure, role, spawn
from bench._latency_systems import (
    LATENCY_GROUP,
    aeromq_consumer,
    aeromq_producer,
    floor_consumer,
    floor_producer,
    nats_consumer,
    nats_producer,
    redis_consumer,
    redis_producer,
)
from bench._nats import NatsServer, nats_missing
from bench._proc_cpu import CpuWindow
from bench._redis import RedisServer, redis_missing
from bench._schedule import Plan
from bench._traced_run import traced_environment

_GC_SITE = Path(__file__).resolve().parents[1] / "_gc_site"
RATES = (10, 100, 1_000, 5_000, 20_000)
DURATION_S = {10: 30.0, 100: 20.0, 1_000: 15.0, 5_000: 12.0, 20_000: 10.0}
"""How long each rate's schedule runs: enough messages for a steady p99.9, bounded in time."""
QUICK_RATES = (100, 1_000, 5_000)
QUICK_DURATION_S = 3.0
TARGET_RATES = (10, 100, 1_000, 5_000)
SUSTAINED_RATE = 5_000
SEND_ONLY_GOAL = 20_000.0
CPU_RATE = 1_000
IDLE_GOAL_PCT = 2.0
COLD_QUIET_S = (0.5, 3.0)
COLD_ROUNDS = 5
QUICK_COLD_QUIET_S = (2.0,)
QUICK_COLD_ROUNDS = 3


@dataclass(frozen=True)
class Settings:
    """One run of the suite: the rates, how long each runs, the warm-up and the rest."""

    rates: tuple[int, ...]
    duration_s: dict[int, float]
    warm_up_s: float
    send_only_s: float
    idle_settle_s: float
    idle_measure_s: float
    cold_quiet_s: tuple[float, ...] = QUICK_COLD_QUIET_S
    cold_rounds: int = QUICK_COLD_ROUNDS

    @classmethod
    def of(cls, quick: bool) -> Settings:
        if quick:
            return cls(
                QUICK_RATES,
                dict.fromkeys(QUICK_RATES, QUICK_DURATION_S),
                0.5,
                2.0,
                2.0,
                5.0,
                QUICK_COLD_QUIET_S,
                QUICK_COLD_ROUNDS,
            )
        return cls(RATES, DURATION_S, 2.0, 5.0, 3.0, 8.0, COLD_QUIET_S, COLD_ROUNDS)

    def plan(self, rate: int) -> Plan:
        """A run at ``rate``: its messages, warm-up and the producer's last chance."""
        duration_s = self.duration_s[rate]
        return Plan(rate, round(rate * duration_s), self.warm_up_s, 2 * duration_s + 5)

    def send_only(self) -> Plan:
        """A run without a schedule: as many sends as ``send_only_s`` allows."""
        return Plan(None, 10**8, 0.0, self.send_only_s)

    def limit_s(self, plan: Plan) -> float:
        """A case's time limit: the producer's last chance, start-ups and the warm-up."""
        return plan.give_up_s + 120.0


# -- the systems --------------------------------------------------------------------------------


def _floor_rows(settings: Settings) -> Iterator[Result]:
    """The floor: producer -> relay -> consumer over pipes, no server."""
    for rate in settings.rates:
        plan = settings.plan(rate)
        pipes: dict[str, Connection] = {}

        def consumer_roles(
            plan: Plan, link: Link, pipes: dict[str, Connection] = pipes
        ) -> dict[str, BaseProcess]:
            context = multiprocessing.get_context("spawn")
            into_relay, pipes["producer"] = context.Pipe(duplex=False)
            into_consumer, out_of_relay = context.Pipe(duplex=False)
            roles = {
                "relay": spawn(relay, into_relay, out_of_relay),
                "consumer": spawn(floor_consumer, into_consumer, plan, link),
            }
            for end in (into_relay, out_of_relay, into_consumer):
                end.close()  # the children have theirs: an end closed there is closed
            return roles

        def producer_roles(
            plan: Plan, link: Link, pipes: dict[str, Connection] = pipes
        ) -> dict[str, BaseProcess]:
            roles = {"producer": spawn(floor_producer, pipes["producer"], plan, link)}
            pipes["producer"].close()
            return roles

        yield from case_rows(
            f"baseline:floor:{rate}",
            measure,
            f"baseline:floor:{rate}",
            plan,
            {},
            consumer_roles,
            producer_roles,
            timeout_s=settings.limit_s(plan),
        )


_BROKER_LINES = 20
"""How many of a dead broker's last lines of output a failed case's row quotes."""


def broker_exit(broker: ServerProcess) -> str | None:
    """When ``broker`` has exited: its exit status and its last lines of output (what a case
    that failed with it gone reports, rather than the refused connections that follow); None
    while it runs."""
    status = broker.process.poll()
    if status is None:
        return None
    lines = " | ".join(broker.log[-_BROKER_LINES:]) or "(none)"
    return f"the broker exited with status {status}; its last lines: {lines}"


def _start_broker(root: Path) -> ServerProcess:
    """The broker on its defaults, but for a UDP ingress on a free port of 127.0.0.1."""
    return start_broker_process(
        root / "broker", extra_args=["--ingress-udp-endpoint", "127.0.0.1:0"]
    )


def _idle(pid: int, settle_s: float, measure_s: float) -> Result:
    """A broker with no traffic: its CPU over ``measure_s`` once start-up settled."""
    time.sleep(settle_s)
    window = CpuWindow({"broker": pid})
    window.start()
    time.sleep(measure_s)
    window.stop()
    pct = 100.0 * window.used_ns["broker"] / window.wall_ns
    note(f"aeromq:idle-broker: {pct:.2f}% of a core over {measure_s:.0f} s")
    return Result(
        "aeromq:idle-broker", extra={"cpu_pct_core": round(pct, 3), "measured_s": measure_s}
    )


def _aeromq_rows(root: Path, settings: Settings) -> Iterator[Result]:
    """The idle broker, then every rate over IPC and over UDP, then send-only, on one broker."""
    from aeromq.client.grpc_client import GrpcClient

    cases = ["aeromq:idle-broker"]
    cases += [f"aeromq:{t}:{rate}" for t in ("ipc", "udp") for rate in settings.rates]
    cases.append("aeromq:send-only:max")
    cases += [_cold_name(quiet_s) for quiet_s in settings.cold_quiet_s]
    broker, failed = started("broker start", _start_broker, root, cases=cases, timeout_s=60.0)
    if broker is None:
        yield from failed
        return
    admin = GrpcClient(broker.grpc_address)
    grpc, servers = broker.grpc_address, {"broker": broker.pid}

    def run(name: str, plan: Plan, topic: str, transport: str, consumer: bool) -> Result:
        try:
            admin.create_topic(topic)
            return measure(
                name,
                plan,
                servers,
                role("consumer", aeromq_consumer, grpc, topic, transport) if consumer else None,
                role("producer", aeromq_producer, grpc, topic, transport),
            )
        except Exception as exc:
            gone = broker_exit(broker)
            if gone is None:
                raise
            raise RuntimeError(f"{gone} ({type(exc).__name__}: {exc})") from exc

    try:
        yield from case_rows(
            "aeromq:idle-broker",
            _idle,
            broker.pid,
            settings.idle_settle_s,
            settings.idle_measure_s,
            timeout_s=60.0,
        )
        for transport, label in (("auto", "ipc"), ("udp", "udp")):
            for rate in settings.rates:
                name, plan = f"aeromq:{label}:{rate}", settings.plan(rate)
                yield from case_rows(
                    name,
                    run,
                    name,
                    plan,
                    f"Latency{label}{rate}",
                    transport,
                    True,
                    timeout_s=settings.limit_s(plan),
                )
        plan = settings.send_only()
        yield from case_rows(
            "aeromq:send-only:max",
            run,
            "aeromq:send-only:max",
            plan,
            "LatencySendOnly",
            "auto",
            False,
            timeout_s=settings.limit_s(plan),
        )
        admin.create_topic("LatencyCold")
        for quiet_s in settings.cold_quiet_s:
            name = _cold_name(quiet_s)
            rounds = settings.cold_rounds
            yield from case_rows(
                name,
                cold_row,
                name,
                grpc,
                "LatencyCold",
                broker.pid,
                quiet_s,
                rounds,
                timeout_s=rounds * (quiet_s + 1.0) + 120.0,
            )
    finally:
        admin.close()
        broker.stop()


def _cold_name(quiet_s: float) -> str:
    """The name of the cold case after ``quiet_s`` of quiet."""
    return f"aeromq:cold:{quiet_s:g}s"


def _redis_rows(root: Path, settings: Settings) -> Iterator[Result]:
    """Every rate, then send-only, on one ``redis-server``."""
    prefix = "baseline:redis-streams"
    cases = [f"{prefix}:{rate}" for rate in settings.rates] + [f"{prefix}:send-only:max"]
    server, failed = started("redis-server start", RedisServer, root, cases=cases, timeout_s=60.0)
    if server is None:
        yield from failed
        return
    servers = {"redis-server": server.process.pid}

    def run(name: str, plan: Plan, stream: str, consumer: bool) -> Result:
        server.client.xgroup_create(stream, LATENCY_GROUP, id="0", mkstream=True)
        return measure(
            name,
            plan,
            servers,
            role("consumer", redis_consumer, server.port, stream) if consumer else None,
            role("producer", redis_producer, server.port, stream),
        )

    try:
        for rate in settings.rates:
            name, plan = f"{prefix}:{rate}", settings.plan(rate)
            yield from case_rows(
                name, run, name, plan, f"latency-{rate}", True, timeout_s=settings.limit_s(plan)
            )
        name, plan = f"{prefix}:send-only:max", settings.send_only()
        yield from case_rows(
            name, run, name, plan, "latency-send-only", False, timeout_s=settings.limit_s(plan)
        )
    finally:
        server.close()


def _nats_rows(root: Path, settings: Settings) -> Iterator[Result]:
    """Every rate on one ``nats-server`` (JetStream, file storage)."""
    prefix = "baseline:nats-jetstream"
    cases = [f"{prefix}:{rate}" for rate in settings.rates]
    server, failed = started("nats-server start", NatsServer, root, cases=cases, timeout_s=60.0)
    if server is None:
        yield from failed
        return
    servers = {"nats-server": server.pid}

    def run(name: str, plan: Plan, stream: str) -> Result:
        server.add_streams(stream, durable=LATENCY_GROUP)
        return measure(
            name,
            plan,
            servers,
            role("consumer", nats_consumer, server.url, stream),
            role("producer", nats_producer, server.url, stream),
        )

    try:
        for rate in settings.rates:
            name, plan = f"{prefix}:{rate}", settings.plan(rate)
            yield from case_rows(
                name, run, name, plan, f"latency-{rate}", timeout_s=settings.limit_s(plan)
            )
    finally:
        server.close()


# -- targets ------------------------------------------------------------------------------------


def targets(rows: dict[str, Result], rates: tuple[int, ...]) -> Iterator[Target]:
    """The issue's targets (see the module docstring), from rows of this run; a rate this run
    did not measure has none, and one whose case failed is not measured."""
    for rate in (r for r in TARGET_RATES if r in rates):
        ours = f"aeromq:ipc:{rate}"
        yield Target(
            f"{ours} p50 / floor p50",
            ratio_of(
                figure(rows, ours, "p50_us"), figure(rows, f"baseline:floor:{rate}", "p50_us")
            ),
            1.5,
            "x",
            lower_is_better=True,
        )
        yield Target(
            f"{ours} p99", figure(rows, ours, "p99_us"), 1_000.0, "us", lower_is_better=True
        )
        for baseline in ("redis-streams", "nats-jetstream"):
            for key in ("p50_us", "p99_us"):
                yield Target(
                    f"{ours} {key[:3]} / {baseline} {key[:3]}",
                    ratio_of(
                        figure(rows, ours, key), figure(rows, f"baseline:{baseline}:{rate}", key)
                    ),
                    1.0,
                    "x",
                    lower_is_better=True,
                )
    if SUSTAINED_RATE in rates:
        ours = f"aeromq:ipc:{SUSTAINED_RATE}"
        sent, received = figure(rows, ours), figure(rows, ours, "received_msgs_per_s")
        yield Target(
            f"{ours} sent and received on schedule (within 1%), msgs/s",
            None if sent is None or received is None else min(sent, received),
            0.99 * SUSTAINED_RATE,
            "msgs/s",
        )
    yield Target(
        "aeromq:send-only:max send() one at a time, no consumer",
        figure(rows, "aeromq:send-only:max"),
        SEND_ONLY_GOAL,
        "msgs/s",
    )
    if CPU_RATE in rates:
        key = "cpu_total_us_per_msg"
        yield Target(
            f"aeromq:ipc:{CPU_RATE} CPU (broker + producer + consumer) / redis-streams'",
            ratio_of(
                figure(rows, f"aeromq:ipc:{CPU_RATE}", key),
                figure(rows, f"baseline:redis-streams:{CPU_RATE}", key),
            ),
            1.0,
            "x",
            lower_is_better=True,
        )
    yield Target(
        "aeromq:idle-broker CPU",
        figure(rows, "aeromq:idle-broker", "cpu_pct_core"),
        IDLE_GOAL_PCT,
        "% of a core",
        lower_is_better=True,
    )


def run(quick: bool) -> Iterator[Result | Target]:
    settings = Settings.of(quick)
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-latency-"))
    (root / "gc").mkdir()
    rows: dict[str, Result] = {}
    try:
        with traced_environment(_GC_SITE, {GC_DIR_ENV: str(root / "gc")}):
            yield from _rows(root, settings, rows)
        yield from targets(rows, settings.rates)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _rows(root: Path, settings: Settings, rows: dict[str, Result]) -> Iterator[Result]:
    """Every system's rows, each kept in ``rows`` as it comes."""
    for row in chain(
        _floor_rows(settings),
        _aeromq_rows(root, settings),
        baseline_rows(
            ("redis-streams", redis_missing(), lambda: _redis_rows(root, settings)),
            ("nats-jetstream", nats_missing(), lambda: _nats_rows(root, settings)),
        ),
    ):
        rows[row.name] = row
        yield row
