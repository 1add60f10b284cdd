"""Python's cyclic garbage collector set for a long-running messaging process: what start-up
left frozen out of every collection, and thresholds that keep young collections rare.

CPython walks every object it tracks in a full collection, and a process of aeromq holds about
55,000 once its ~800 modules are imported and it has started (a full collection of the broker
took 50-230 ms on a 2-core VM, with what it kept alive meanwhile), and a young collection comes
every 700 net allocations of containers, on whatever thread allocates: in the broker, often the
session agent mid-message. :func:`tune_gc` does what Instagram did for its servers: it collects
once (so no garbage of the start-up is kept forever), then moves every object left into the
permanent generation (``gc.freeze()``), which no collection walks again (they are still freed by
reference counting), and sets the collector's thresholds (``gc.set_threshold``) so that young
collections come every ``DEFAULT_GC_THRESHOLD[0]`` net allocations rather than every
700. Garbage cycles are still collected: later and in larger batches, and a full collection
walks only what was made after the freeze.

Callers: the broker's command (``aeromq broker``, once its services have started; the broker
settings ``gc_freeze`` and ``gc_threshold``), and an application, explicitly: a client never
changes its process's collector by itself (docs/reference/configuration.md, "Garbage
collector"). Affects: the interpreter's collector, for the whole process.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Final, TypeAlias

__all__ = [
    "DEFAULT_GC_THRESHOLD",
    "GcThreshold",
    "GcTuning",
    "format_gc_threshold",
    "parse_gc_threshold",
    "tune_gc",
]

GcThreshold: TypeAlias = tuple[int, int, int]
"""``gc.set_threshold``'s three numbers: net container allocations before a young collection,
young collections before a generation-1 one, generation-1 collections before a full one."""

DEFAULT_GC_THRESHOLD: Final[GcThreshold] = (10_000, 20, 100)
"""A young collection every 10,000 net allocations of containers (CPython's default 700): the
broker keeps about 4 a message alive for a while, so at 1,000 msgs/s one every 3 s or so
rather than 5 a second;
a generation-1 collection every 20 of them, a full one every 100 of those (and, as CPython
always does, only once the objects waiting for it are a quarter of those that survived the last
one). Measured in ``bench/results/2026-11-29g/gc.md``."""


@dataclass(frozen=True)
class GcTuning:
    """What :func:`tune_gc` did: ``frozen`` objects in the permanent generation (0 when it did
    not freeze), the ``threshold`` now, and the one before."""

    frozen: int
    threshold: GcThreshold
    previous_threshold: GcThreshold


def tune_gc(
    threshold: GcThreshold | None = DEFAULT_GC_THRESHOLD, *, freeze: bool = True
) -> GcTuning:
    """Collect once and freeze what is left (``freeze``), then set ``threshold`` (None: leave
    the thresholds as they are). Call it once the process has imported and built what it keeps
    for its life (a started producer, consumer or broker); objects made later are collected as
    before. Raises ``ValueError`` for a threshold that is not three positive numbers (0 would
    turn collection off, which this never does)."""
    if threshold is not None:
        _check(threshold)
    previous = _threshold_now()
    if freeze:
        gc.collect()
        gc.freeze()
    if threshold is not None:
        gc.set_threshold(*threshold)
    return GcTuning(gc.get_freeze_count() if freeze else 0, _threshold_now(), previous)


def parse_gc_threshold(text: str) -> GcThreshold:
    """``"10000,20,100"`` as a threshold; one or two numbers keep the defaults of the rest
    (:data:`DEFAULT_GC_THRESHOLD`). Raises ``ValueError`` naming what is wrong."""
    parts = [part.strip().replace("_", "") for part in text.split(",")]
    if not 1 <= len(parts) <= 3 or not all(part.isdigit() for part in parts):
        raise ValueError(f"not 1 to 3 comma-separated whole numbers: {text!r}")
    numbers = [int(part) for part in parts] + list(DEFAULT_GC_THRESHOLD[len(parts) :])
    threshold = (numbers[0], numbers[1], numbers[2])
    _check(threshold)
    return threshold


def format_gc_threshold(threshold: GcThreshold) -> str:
    """A threshold as :func:`parse_gc_threshold` reads it: ``10000,20,100``."""
    return ",".join(str(number) for number in threshold)


def _check(threshold: GcThreshold) -> None:
    if len(threshold) != 3 or not all(isinstance(n, int) and n > 0 for n in threshold):
        raise ValueError(f"a threshold is three positive numbers: {threshold!r}")


def _threshold_now() -> GcThreshold:
    first, second, third = gc.get_threshold()
    return (first, second, third)
