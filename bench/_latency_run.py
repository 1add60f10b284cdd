"""One run of ``python -m bench latency``: its roles started (each in a spawned process), their
reports gathered, every process's CPU read over the schedule, and the row made of it.

:func:`measure` starts the consumer's roles (a consumer; the floor's relay too), waits for
``ready``, starts the producer, reads the CPU of every role and server from ``started`` to the
consumer's ``done`` (the producer's ``finished`` without a consumer), then sets ``finish`` and
reads the reports (:mod:`bench._latency_roles` tells the exchange). A role that ends before its
report, or a report that does not come in time, fails the run; the roles are stopped either way.
With ``AEROMQ_BENCH_CPU_AFFINITY`` set, the servers and each role are pinned as they start
(:mod:`bench._affinity`) and the row says where (``cpu_affinity``).

Used by the latency suite (:mod:`bench.suites.latency`).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import queue
import signal
import time
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Literal, TypedDict, TypeVarTuple, overload

from bench._affinity import pin_roles, requested
from bench._gc_stats import GC_DIR_ENV, GcWindow, client_gc
from bench._harness import JsonRecord, Result, note
from bench._latency_roles import Consumed, LatencyReport, Link, Sent
from bench._latency_stats import merged, percentiles_us
from bench._proc_cpu import CpuWindow
from bench._schedule import BODY_LENGTH, Plan

__all__ = ["Starter", "measure", "role", "spawn"]

_Ts = TypeVarTuple("_Ts")

Starter = Callable[[Plan, Link], dict[str, BaseProcess]]
"""Starts a run's roles (spawned processes, by role name) with its plan and link."""


def spawn(target: Callable[[*_Ts], object], *args: *_Ts) -> BaseProcess:
    """``target(*args)`` in a new spawned process (a daemon: it cannot outlive the suite)."""
    process = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
    process.start()
    return process


def role(name: str, target: Callable[[*_Ts, Plan, Link], object], *args: *_Ts) -> Starter:
    """A starter of one role ``name``: ``target(*args, plan, link)`` in a spawned process."""
    return lambda plan, link: {name: spawn(target, *args, plan, link)}


def _link() -> Link:
    context = multiprocessing.get_context("spawn")
    return Link(
        context.Queue(), context.Event(), context.Event(), context.RawValue(ctypes.c_longlong, -1)
    )


class _Reports:
    """The roles' reports as they come, by kind; a wait ends at its deadline or when a role
    failed (a role that ended well has sent its reports: they are in the queue)."""

    def __init__(self, link: Link, roles: dict[str, BaseProcess]) -> None:
        self.link = link
        self.roles = roles
        self.got: dict[str, LatencyReport] = {}

    @overload
    def wait(
        self, kind: Literal["ready", "finished", "done"], timeout_s: float
    ) -> tuple[Literal["ready", "finished", "done"]]: ...
    @overload
    def wait(
        self, kind: Literal["started"], timeout_s: float
    ) -> tuple[Literal["started"], int]: ...
    @overload
    def wait(self, kind: Literal["sent"], timeout_s: float) -> tuple[Literal["sent"], Sent]: ...
    @overload
    def wait(
        self, kind: Literal["consumed"], timeout_s: float
    ) -> tuple[Literal["consumed"], Consumed]: ...
    def wait(self, kind: str, timeout_s: float) -> LatencyReport:
        """The report of ``kind`` (the first of it), once it came (a report is filed under its
        kind, so it is of the shape its kind's overload says)."""
        deadline = time.monotonic() + timeout_s
        while kind not in self.got:
            try:
                item = self.link.out.get(timeout=min(1.0, max(0.01, deadline - time.monotonic())))
            except queue.Empty:
                failed = [_ended(r, p.exitcode) for r, p in self.roles.items() if p.exitcode]
                if failed or time.monotonic() > deadline:
                    why = ", ".join(failed) if failed else f"{timeout_s:.0f} s passed"
                    raise RuntimeError(f"no {kind!r} report: {why}") from None
                continue
            self.got[item[0]] = item
        return self.got[kind]


def _ended(role: str, exitcode: int) -> str:
    if exitcode < 0:
        return f"the {role} was killed by {signal.Signals(-exitcode).name}"
    return f"the {role} exited with status {exitcode}"


def measure(
    name: str,
    plan: Plan,
    servers: dict[str, int],
    start_consumer: Starter | None,
    start_producer: Starter,
) -> Result:
    """One run (see :mod:`bench._latency_roles`): the consumer's roles first, then the
    producer; the CPU of every role and of ``servers`` (name -> pid) from the schedule's start
    to the last message's receipt (or send, without a consumer)."""
    link = _link()
    roles: dict[str, BaseProcess] = {}
    reports = _Reports(link, roles)
    wait_s = plan.give_up_s + 90.0
    wanted = requested()
    pinned = pin_roles(servers, wanted)
    try:
        if start_consumer is None:
            link.primed.set()
        else:
            pinned.update(pin_roles(_pids(roles, start_consumer(plan, link)), wanted))
            reports.wait("ready", 60.0)
        pinned.update(pin_roles(_pids(roles, start_producer(plan, link)), wanted))
        t0_ns = reports.wait("started", 90.0)[1]
        pids = {**{role: p.pid or 0 for role, p in roles.items()}, **servers}
        window = CpuWindow(pids)
        collections = GcWindow(Path(os.environ.get(GC_DIR_ENV, "/nonexistent")), pids)
        collections.start()
        window.start()
        reports.wait("finished" if start_consumer is None else "done", wait_s)
        window.stop()
        collections.stop()
        link.finish.set()
        sent = reports.wait("sent", 60.0)[1]
        consumed = None if start_consumer is None else reports.wait("consumed", 60.0)[1]
    finally:
        link.finish.set()
        for process in roles.values():
            process.join(30)
            if process.is_alive():
                process.kill()
                process.join(5)
    gc_stats = collections.report(sent["sent"])
    where: JsonRecord = {"cpu_affinity": pinned} if pinned else {}
    if consumed is None:
        return _send_only_row(name, sent, window, gc_stats, where)
    return _row(name, plan, t0_ns, sent, consumed, window, gc_stats, where)


def _pids(roles: dict[str, BaseProcess], started: dict[str, BaseProcess]) -> dict[str, int]:
    """``started`` added to ``roles``; their pids, by role."""
    roles.update(started)
    return {name: process.pid or 0 for name, process in started.items()}


def _row(
    name: str,
    plan: Plan,
    t0_ns: int,
    sent: Sent,
    consumed: Consumed,
    window: CpuWindow,
    gc_stats: dict[str, dict[str, float]],
    where: JsonRecord,
) -> Result:
    """A scheduled run's row (``where``: the CPUs its processes were pinned to, if any);
    raises when a message sent never came."""
    if consumed["received"] < sent["sent"]:
        raise RuntimeError(f"{consumed['received']} of {sent['sent']} messages sent came")
    latency = percentiles_us(merged([consumed["latency"]]))
    receive_s = (consumed["last_ns"] - t0_ns) / 1e9
    extra: JsonRecord = {
        "rate": plan.rate,
        "scheduled": plan.count,
        "sent": sent["sent"],
        "received": consumed["received"],
        "duplicates": consumed["duplicates"],
        "warm_up_dropped": plan.warm_up_count,
        "samples": latency["samples"],
        "p90_us": latency.get("p90_us"),
        "max_us": latency.get("max_us"),
        "fell_behind": sent["fell_behind"],
        "gave_up": sent["gave_up"],
        "received_msgs_per_s": round(consumed["received"] / receive_s) if receive_s > 0 else 0,
        **_send_figures(sent),
        **_cpu_figures(window, sent["sent"]),
        **_gc_figures(gc_stats),
        **where,
    }
    return _result(name, sent, latency, extra)


def _send_only_row(
    name: str,
    sent: Sent,
    window: CpuWindow,
    gc_stats: dict[str, dict[str, float]],
    where: JsonRecord,
) -> Result:
    """A send-only run's row: the p-columns are the send call's duration."""
    extra = {
        "sent": sent["sent"],
        **_send_figures(sent),
        **_cpu_figures(window, sent["sent"]),
        **_gc_figures(gc_stats),
        **where,
    }
    return _result(name, sent, percentiles_us(merged([sent["send"]])), extra)


def _gc_figures(gc_stats: dict[str, dict[str, float]]) -> JsonRecord:
    """The row's garbage collector figures: ``gc``, what the clients' collector ran with
    (``default``: untouched, as a user's process on defaults; ``tuned``: the suite was asked for
    :func:`aeromq.common.tune_gc` in its workers, :data:`bench._gc_stats.CLIENT_GC_ENV`), and ``gc_stats``, each
    Python process's collections over the run (:class:`bench._gc_stats.GcWindow`)."""
    return {"gc": client_gc(), "gc_stats": gc_stats}


def _result(name: str, sent: Sent, percentiles: dict[str, float], extra: JsonRecord) -> Result:
    """The row: the achieved send rate, ``percentiles`` in the p-columns, ``extra``; its
    figures without a column said on standard error."""
    achieved = float(sent["achieved_msgs_per_s"])
    row = Result(
        name,
        msgs_per_s=achieved,
        MB_per_s=achieved * BODY_LENGTH / 1e6,
        p50_us=percentiles.get("p50_us"),
        p99_us=percentiles.get("p99_us"),
        p999_us=percentiles.get("p999_us"),
        extra=extra,
    )
    _say(row)
    return row


def _send_figures(sent: Sent) -> dict[str, float | None]:
    """The send call's p50 and p99, and how late the sends started (from the producer's
    histograms)."""
    send, lag = percentiles_us(merged([sent["send"]])), percentiles_us(merged([sent["lag"]]))
    return {
        "send_p50_us": send.get("p50_us"),
        "send_p99_us": send.get("p99_us"),
        "lag_p50_us": lag.get("p50_us"),
        "lag_p99_us": lag.get("p99_us"),
        "lag_max_us": lag.get("max_us"),
    }


class _CpuFigures(TypedDict):
    """A row's CPU figures: per process (:meth:`CpuWindow.report`), and their sums."""

    cpu: dict[str, dict[str, float]]
    cpu_total_pct_core: float
    cpu_total_us_per_msg: float


def _cpu_figures(window: CpuWindow, messages: int) -> _CpuFigures:
    """Each process's CPU over the run, and their sum."""
    cpu = window.report(messages)
    return {
        "cpu": cpu,
        "cpu_total_pct_core": round(sum(r["pct_core"] for r in cpu.values()), 2),
        "cpu_total_us_per_msg": round(sum(r["us_per_msg"] for r in cpu.values()), 2),
    }


def _us(value: object) -> str:
    """``123 us``, or ``-`` for a figure not measured (an empty histogram: a producer that sent
    nothing after the warm-up)."""
    return "-" if value is None else f"{value:.0f} us"


def _say(row: Result) -> None:
    """The row's figures the table has no column for, on standard error."""
    extra = row.extra
    cpu = ", ".join(
        f"{role} {r['pct_core']:.1f}% ({r['us_per_msg']:.0f} us/msg)"
        for role, r in extra["cpu"].items()
    )
    behind = " FELL BEHIND the schedule," if extra.get("fell_behind") else ""
    tail = ""
    if extra.get("max_us") is not None:
        tail = f" p90 {_us(extra['p90_us'])}, max {_us(extra['max_us'])},"
    collections = "; ".join(
        f"{role} {g['gen0']:.0f}/{g['gen1']:.0f}/{g['gen2']:.0f} (longest "
        f"{max(g['gen0_max_ms'], g['gen1_max_ms'], g['gen2_max_ms']):.2f} ms)"
        for role, g in extra["gc_stats"].items()
    )
    pinned = extra.get("cpu_affinity")
    if pinned:
        tail += " pinned " + ", ".join(f"{r} to {c}" for r, c in pinned.items()) + ";"
    note(
        f"{row.name}:{behind}{tail} send() p50 {_us(extra['send_p50_us'])} p99 "
        f"{_us(extra['send_p99_us'])}, sends started late by p99 {_us(extra['lag_p99_us'])}; "
        f"CPU {cpu}; collections of generations 0/1/2 (gc {extra['gc']}): {collections or '-'}"
    )
