"""Pinning a latency run's processes to CPUs, by role, to see what the scheduler's placement
costs: ``AEROMQ_BENCH_CPU_AFFINITY='server=1 producer=1 consumer=0'``.

Why: on this VM a woken process lands on the CPU of the process that woke it nearly every time,
even with the other CPU idle (the guest kernel packs tasks onto busy vCPUs), so producer, broker
and consumer run one after another on one CPU while the other idles; docs/latency.md gives the
measurements. Pinning each role is how a user would take that placement away (``taskset -c``,
or Aeron's agent CPU-affinity settings), and this lets the suite measure it for every system
alike: the role ``server`` is the broker, ``redis-server`` or ``nats-server``; ``producer``,
``consumer`` and the floor's ``relay`` are the spawned roles.

Each value is a CPU list as ``taskset -c`` takes it (``0``, ``0,1``, ``0-1``). Every thread of a
process is pinned as the run starts (:func:`pin`); a thread started later inherits its
creator's CPUs. A role the setting does not name runs where the scheduler puts it.

Used by :func:`bench._latency_run.measure`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["AFFINITY_ENV", "ROLES", "SERVER_NAMES", "parse", "pin", "pin_roles", "requested"]

AFFINITY_ENV = "AEROMQ_BENCH_CPU_AFFINITY"
ROLES = frozenset({"server", "producer", "consumer", "relay"})
SERVER_NAMES = frozenset({"broker", "redis-server", "nats-server"})
"""The processes :func:`pin_roles` pins as the role ``server``."""


def parse(text: str) -> dict[str, frozenset[int]]:
    """``'server=1 producer=1 consumer=0'`` as role -> CPUs; raises ValueError naming the part
    that is not ``ROLE=CPULIST`` with a known role and CPUs this machine has."""
    have = os.sched_getaffinity(0)
    pinned: dict[str, frozenset[int]] = {}
    for part in text.split():
        role, sep, cpus = part.partition("=")
        if not sep or role not in ROLES:
            raise ValueError(
                f"{AFFINITY_ENV}: {part!r} is not ROLE=CPULIST with ROLE one of {sorted(ROLES)}"
            )
        chosen = _cpu_list(cpus, part)
        if not chosen <= have:
            raise ValueError(
                f"{AFFINITY_ENV}: {part!r} names CPUs {sorted(chosen - have)} this process "
                f"cannot run on (it can: {sorted(have)})"
            )
        pinned[role] = chosen
    return pinned


def _cpu_list(text: str, part: str) -> frozenset[int]:
    cpus: set[int] = set()
    for item in text.split(","):
        low, dash, high = item.partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise ValueError(
                f"{AFFINITY_ENV}: {part!r} has a CPU list that is not N[-M][,...]"
            ) from None
        if first < 0 or last < first:
            raise ValueError(f"{AFFINITY_ENV}: {part!r} has an empty or negative range {item!r}")
        cpus.update(range(first, last + 1))
    return frozenset(cpus)


def requested() -> dict[str, frozenset[int]]:
    """The setting of ``AEROMQ_BENCH_CPU_AFFINITY`` (empty when unset)."""
    return parse(os.environ.get(AFFINITY_ENV, ""))


def pin(pid: int, cpus: frozenset[int]) -> frozenset[int]:
    """Every thread of ``pid`` pinned to ``cpus``; the CPUs the process then has. A thread
    that ends meanwhile is skipped; the process having ended raises ProcessLookupError."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except ProcessLookupError:
            continue
    return frozenset(os.sched_getaffinity(pid))


def pin_roles(
    pids: Mapping[str, int], wanted: Mapping[str, frozenset[int]]
) -> dict[str, list[int]]:
    """The processes ``pids`` (name -> pid; a server by its own name) pinned as ``wanted``
    says; each pinned one's CPUs, read back, by name."""
    done: dict[str, list[int]] = {}
    for name, pid in pids.items():
        cpus = wanted.get("server" if name in SERVER_NAMES else name)
        if cpus is not None:
            done[name] = sorted(pin(pid, cpus))
    return done
