"""A broker group of three (``min_isr`` 2) against a single broker, in the same run: end to end
(producer -> consumer, msgs/s, latency) and ``send()`` one at a time (sends/s, latency p50/p99),
with CPU per message.

The group: ``aeromq cluster up`` (etcd and three broker processes, each with its embedded media
driver, data on the default temp filesystem, ASYNC flush mode, which a group's ack rule
replaces: a send completes once fsynced on every member of the committed ISR). The single
broker: one ``aeromq broker`` (ASYNC flush: acknowledged once appended), as in the ``broker``
suite. The workers are the ``broker`` suite's: one producer process (batches of 32 pipelined 8
deep over IPC; given every member's gRPC address, it finds the leader by itself) and one puller
process on the leader's media driver (4 queues, one pull in flight per queue); ``send-sync``:
one ``producer.send()`` per message, each awaited. Server CPU per message is the sum over the
group's three brokers (``server_cpu_us_per_msg``; the leader's alone in ``leader_cpu_us_per_msg``).
Wake-ups per message the same way (``server_wakeups_per_msg``, ``leader_wakeups_per_msg``), and
``threads``: each broker's threads that spent the most (``role thread us/msg wake-ups/msg``,
from ``/proc``, ``bench/_thread_stats.py``): these move far less with the machine's load than
the rates do. ``etcd_cpu_us_per_msg``: the group's etcd process, the same way.

``end-to-end-large``: the same workers with batches of :data:`LARGE_BATCH` messages (8 in flight
still): 1,024 messages outstanding rather than 256. On its defaults the producer has one
request of a topic in flight and coalesces the async sends that wait behind it into the next
(``async_requests_in_flight``), so its requests grow with what the application has
outstanding: with 256 messages outstanding a request carries the whole window (the answered
sends are settled and their thread refills the window before the next request is cut), so the
group's rate is at most 256 messages a commit round trip, and a round trip in a group includes a
replication and two fsyncs. Both sides run this case too (``docs/history/replication-log.md``,
rounds three and five and "The window refilled before the next request").

Target (issue 31): the group's end-to-end rate at least 0.5x the single broker's (on
``end-to-end``; the same ratio on ``end-to-end-large`` is reported beside it). A third side,
``single-sync:`` (:data:`SYNC_SIDE`), runs the same cases on a single broker in SYNC flush mode.

Settings for experiments (the default run sets none of them): :data:`IN_FLIGHT_ENV` gives both
sides' producers their ``async_requests_in_flight``; the broker's own environment
(``AEROMQ_BROKER_LEADER_FSYNC_INLINE=false``, any ``AEROMQ_BROKER_*``) reaches every broker of
both sides; :data:`SIDES_ENV` and :data:`CASES_ENV` run some sides and cases only. Each row
names the producer's ``in_flight`` and the brokers' ``leader_fsync_inline`` it ran with.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from itertools import chain
from multiprocessing.process import BaseProcess
from pathlib import Path

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.transport.util import process_cpu_s
from bench._harness import Result, Target, case_rows, chosen, figure, ratio_of, started
from bench._thread_stats import ThreadSample, costs, sample
from bench.suites.broker import (
    BATCH,
    BROKER_ARGS,
    QUEUES,
    Outbox,
    _collect,
    _consume,
    _produce,
    _rows,
    _send_sync,
    _spawn,
)

IN_FLIGHT_ENV = "AEROMQ_BENCH_IN_FLIGHT"
"""The producers' ``async_requests_in_flight`` (unset: the producer's default)."""
SIDES_ENV = "AEROMQ_BENCH_CLUSTER_SIDES"
"""Comma-separated sides to run of ``single``, ``single-sync``, ``group`` (unset: all)."""
CASES_ENV = "AEROMQ_BENCH_CLUSTER_CASES"
"""Comma-separated cases to run of :data:`KINDS` (unset: all)."""
KINDS = ("end-to-end", "end-to-end-large", "send-sync")
_FSYNC_ENV = "AEROMQ_BROKER_LEADER_FSYNC_INLINE"
_TOPICS = {
    "e2e": "BenchClusterEndToEnd",
    "e2e-large": "BenchClusterEndToEndLarge",
    "sync": "BenchClusterSendSync",
}
SYNC_SIDE = "single-sync"
"""The rows of a single broker in SYNC flush mode (acknowledged once fsynced, as a group's
member acknowledges only what every ISR member fsynced): the same durability on one disk,
measured beside the target's ASYNC single broker so the part of the gap that is the fsync shows
(``group:CASE`` over ``single-sync:CASE``; no target of its own)."""
LARGE_BATCH = 128
"""Messages a batch in ``end-to-end-large`` (see module)."""
_BROKER_ARGS = (*BROKER_ARGS, "--ingress-udp-endpoint", "none", "--metrics-port", "none")
_TOP_THREADS = 3
"""Threads of each broker named in a row's ``threads`` (those that spent the most CPU)."""
_READY = "broker ready:"
_CLUSTER_READY = "cluster ready:"


class _Cluster:
    """``aeromq cluster up`` in a session of its own; the fields of its ready lines."""

    def __init__(self, root: Path, timeout_s: float = 90.0) -> None:
        command = [sys.executable, "-m", "aeromq", "cluster", "up", "--data-dir", str(root),
                   "--no-restart", "--", *_BROKER_ARGS]  # fmt: skip
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        self.members: list[dict[str, str]] = []
        self.ready: dict[str, str] = {}
        self.log: list[str] = []
        found = threading.Event()
        threading.Thread(target=self._read, args=(found,), daemon=True).start()
        if not found.wait(timeout_s) or not self.ready:
            self.stop()
            raise RuntimeError("cluster up did not start: " + " | ".join(self.log[-10:]))

    def _read(self, found: threading.Event) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.log.append(line.rstrip())
            for prefix in (_READY, _CLUSTER_READY):
                if line.startswith(prefix):
                    words = line[len(prefix) :].split()
                    fields = dict(w.split("=", 1) for w in words if "=" in w)
                    if prefix == _READY:
                        self.members.append(fields)
                    else:
                        self.ready = fields
                        found.set()
        self.process.stdout.close()
        found.set()

    @property
    def leader(self) -> dict[str, str]:
        return next(m for m in self.members if m.get("role") == "leader")

    @property
    def pids(self) -> list[int]:
        return [int(m["pid"]) for m in self.members]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def _create_topics(cluster: _Cluster, topics: list[str]) -> dict[str, str]:
    """Create ``topics`` on the leader (the clients, given every member, route them from the
    leader while a follower has not learnt them from the log yet); returns the ready fields of
    the member that took them. That is the member whose ready line said ``role=leader``, but
    for a leadership that moved since (seen once in about a hundred runs): then the member its
    ``NotLeaderError`` names."""
    from aeromq.client import GrpcClient
    from aeromq.common import NotLeaderError

    leader = cluster.leader
    for _ in cluster.members:
        try:
            with GrpcClient(leader["grpc"], timeout_s=30.0) as admin:
                for topic in topics:
                    admin.create_topic(topic, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
            return leader
        except NotLeaderError as error:
            hint = str(error.values.get("leader_address", ""))
            named = next((m for m in cluster.members if hint and m.get("grpc") == hint), None)
            if named is None:
                raise
            leader = named
    raise RuntimeError(f"no member of the group took the topics: members={cluster.members}")


def _phase(
    name: str,
    kind: str,
    count: int,
    pids: list[int],
    start: dict[str, Callable[..., BaseProcess]],
    etcd_pid: int | None = None,
) -> list[Result]:
    """One phase (``end-to-end``, ``end-to-end-large`` or ``send-sync``); server CPU summed over ``pids`` (the
    first one's alone in ``leader_cpu_us_per_msg``), and ``etcd_pid``'s apart when given."""
    out: Outbox = multiprocessing.get_context("spawn").Queue()
    workers = []
    awaited = {"produced"}
    topic = {"end-to-end": "e2e", "end-to-end-large": "e2e-large"}.get(kind, "sync")
    if kind != "send-sync":
        workers.append(start["consume"](topic, True, out))
        _collect(out, {"ready"})
        awaited.add("consumed")
    cpu = [process_cpu_s(pid) for pid in pids]
    etcd_cpu = None if etcd_pid is None else process_cpu_s(etcd_pid)
    threads = [sample(pid) for pid in pids]
    workers.append(start[kind](topic, count, out))
    got = _collect(out, awaited)
    used = [process_cpu_s(pid) - before for pid, before in zip(pids, cpu, strict=True)]
    etcd_used = None if etcd_pid is None or etcd_cpu is None else process_cpu_s(etcd_pid) - etcd_cpu
    threads_after = [sample(pid) for pid in pids]
    rows = list(
        _rows(
            name,
            count,
            got,
            sum(used),
            "send-sync" if kind == "send-sync" else "produce",
            "-large" if kind == "end-to-end-large" else "",
        )
    )
    for row in rows:
        messages = row.extra.get("received", count)
        assert isinstance(messages, int)
        row.extra["leader_cpu_us_per_msg"] = round(used[0] * 1e6 / max(messages, 1), 2)
        if etcd_used is not None:
            row.extra["etcd_cpu_us_per_msg"] = round(etcd_used * 1e6 / max(messages, 1), 2)
        row.extra.update(_wakeups(threads, threads_after, messages))
        row.extra.update(_settings())
    for worker in workers:
        worker.join(30)
    return rows


def _settings() -> dict[str, float | str]:
    """The experiment's settings a row ran with (see module)."""
    in_flight = _in_flight()
    return {
        "in_flight": "default" if in_flight is None else in_flight,
        "leader_fsync_inline": os.environ.get(_FSYNC_ENV, "default"),
    }


def _in_flight() -> int | None:
    value = os.environ.get(IN_FLIGHT_ENV)
    return None if not value else int(value)


def _wakeups(
    before: list[ThreadSample], after: list[ThreadSample], messages: int
) -> dict[str, float | str]:
    """Wake-ups a message over the brokers and of the first (the leader), and each broker's
    costliest threads (see module)."""
    per_broker = [costs(b, a, messages) for b, a in zip(before, after, strict=True)]
    wakeups = [sum(row.wakeups_per_msg for row in rows) for rows in per_broker]
    named = []
    for index, rows in enumerate(per_broker):
        role = f"follower{index}" if index else "leader" if len(before) > 1 else "broker"
        named += [
            f"{role} {row.name} {row.cpu_us_per_msg:.1f} {row.wakeups_per_msg:.2f}"
            for row in rows[:_TOP_THREADS]
        ]
    return {
        "server_wakeups_per_msg": round(sum(wakeups), 3),
        "leader_wakeups_per_msg": round(wakeups[0], 3),
        "threads": "; ".join(named),
    }


def _phases(
    name: str,
    count: int,
    pids: list[int],
    start: dict[str, Callable[..., BaseProcess]],
    limit_s: float,
    etcd_pid: int | None = None,
) -> Iterator[Result]:
    for kind in chosen(CASES_ENV, KINDS):
        n = max(count // 20, 500) if kind == "send-sync" else count
        yield from case_rows(
            f"{name}:{kind}", _phase, name, kind, n, pids, start, etcd_pid, timeout_s=limit_s
        )


def _starters(grpc: str, aeron_dir: str, count: int) -> dict[str, Callable[..., BaseProcess]]:
    in_flight = _in_flight()
    return {
        "end-to-end": lambda t, n, out: _spawn(
            _produce, grpc, _TOPICS[t], n, out, BATCH, in_flight
        ),
        "end-to-end-large": lambda t, n, out: _spawn(
            _produce, grpc, _TOPICS[t], n, out, LARGE_BATCH, in_flight
        ),
        "send-sync": lambda t, n, out: _spawn(_send_sync, grpc, _TOPICS[t], n, out),
        "consume": lambda t, live, out: _spawn(_consume, aeron_dir, _TOPICS[t], count, live, out),
    }


def _run_single(
    root: Path, count: int, limit_s: float, name: str = "single", flush_mode: str = "ASYNC"
) -> Iterator[Result]:
    cases = [f"{name}:{kind}" for kind in chosen(CASES_ENV, KINDS)]

    def start(path: Path) -> ServerProcess:
        return start_broker_process(path, extra_args=[*_BROKER_ARGS, "--flush-mode", flush_mode])

    broker, failed = started("broker start", start, root / name, cases=cases, timeout_s=limit_s)
    if broker is None:
        yield from failed
        return
    try:
        starters = _starters(broker.grpc_address, broker.ready["aeron_dir"], count)
        yield from _phases(name, count, [broker.pid], starters, limit_s)
    finally:
        broker.stop()


def _run_group(root: Path, count: int, limit_s: float) -> Iterator[Result]:
    cases = [f"group:{kind}" for kind in chosen(CASES_ENV, KINDS)]
    cluster, failed = started(
        "cluster up", _Cluster, root / "group", cases=cases, timeout_s=limit_s
    )
    if cluster is None:
        yield from failed
        return
    try:
        endpoints = cluster.ready["endpoints"]
        leader = _create_topics(cluster, list(_TOPICS.values()))
        pids = [int(leader["pid"])] + [p for p in cluster.pids if p != int(leader["pid"])]
        starters = _starters(endpoints, leader["aeron_dir"], count)
        etcd = cluster.ready.get("etcd_pid")
        yield from _phases("group", count, pids, starters, limit_s, int(etcd) if etcd else None)
    finally:
        cluster.stop()


def run(quick: bool) -> Iterator[Result | Target]:
    count = 20_000 if quick else 200_000
    limit_s = 90.0 if quick else 300.0
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-cluster-"))
    rows: dict[str, Result] = {}
    try:
        picked = chosen(SIDES_ENV, ("single", SYNC_SIDE, "group"))
        sides = chain(
            _run_single(root, count, limit_s) if "single" in picked else (),
            _run_single(root, count, limit_s, SYNC_SIDE, "SYNC") if SYNC_SIDE in picked else (),
            _run_group(root, count, limit_s) if "group" in picked else (),
        )
        for row in sides:
            rows[row.name] = row
            yield row
        for case, label in (("end-to-end", ""), ("end-to-end-large", ", large requests")):
            yield Target(
                f"group / single broker end-to-end msgs/s{label}",
                ratio_of(figure(rows, f"group:{case}"), figure(rows, f"single:{case}")),
                0.5,
                "x",
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
