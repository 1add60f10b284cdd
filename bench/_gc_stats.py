"""The garbage collector's work in every Python process of a latency run: its collections and
their pauses per generation, read over the window the suite marks, as CPU is
(:mod:`bench._proc_cpu`).

With ``bench/_gc_site`` on ``PYTHONPATH`` and :data:`GC_DIR_ENV` naming a directory, every Python
process started so (the broker, its clients, the floor's processes) calls :func:`install` at
start-up: a ``gc.callbacks`` recorder that times each collection and adds it to a file of its
own, ``gc-<pid>.bin`` in that directory (a mapped file of 64-bit slots, written with ordered
stores and read with volatile loads: another process reads it). :class:`GcWindow` reads the files
of the pids a run measures at its start and stop. A collection costs the recorder two Python
calls and two reads of the thread's CPU clock (a few us); a young collection comes every few hundred container allocations.

Layout of ``gc-<pid>.bin`` (little-endian 64-bit slots, one row per generation 0, 1, 2)::

    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +---------------------------------------------------------------+
   |                 collections of generation 0                   |  0
   +---------------------------------------------------------------+
   |              their pauses, summed, ns                         |  8
   +---------------------------------------------------------------+
   |              the longest pause since the last reset, ns       | 16
   +---------------------------------------------------------------+
   |      unreachable objects (cyclic garbage) they freed          | 24
   +---------------------------------------------------------------+
   |      the collecting thread's CPU time in them, ns             | 32
   +---------------------------------------------------------------+
   |                    ... generation 1 at 40, generation 2 at 80 |
   +---------------------------------------------------------------+
   |  objects in the permanent generation (gc.freeze), as the last  | 120
   |  collection of generation 2 left it                           |
   +---------------------------------------------------------------+

The longest pause is since the window's start: :meth:`GcWindow.start` resets it (a collection
that ends as it resets may keep its figure: a benchmark's race, not the broker's).

Used by the latency suite (:mod:`bench.suites.latency`, :mod:`bench._latency_run`).
"""

from __future__ import annotations

import gc
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from aeromq.transport.concurrent.atomic_buffer import AtomicBuffer, MappedFile

__all__ = ["CLIENT_GC_ENV", "GC_DIR_ENV", "GcWindow", "client_gc", "install", "stats_path"]

GC_DIR_ENV: Final = "AEROMQ_BENCH_GC_DIR"
GENERATIONS: Final = 3
ROW_LENGTH: Final = 40
COLLECTIONS_OFFSET: Final = 0
PAUSE_NS_OFFSET: Final = 8
MAX_PAUSE_NS_OFFSET: Final = 16
FREED_OFFSET: Final = 24
CPU_NS_OFFSET: Final = 32
FROZEN_OFFSET: Final = GENERATIONS * ROW_LENGTH
FILE_LENGTH: Final = GENERATIONS * ROW_LENGTH + 8
assert FROZEN_OFFSET + 8 == FILE_LENGTH
_kept: list[MappedFile] = []


def stats_path(directory: Path, pid: int) -> Path:
    """The file process ``pid`` records into."""
    return directory / f"gc-{pid}.bin"


def install() -> None:
    """Record this process's collections into its file in the directory :data:`GC_DIR_ENV`
    names (nothing when it is unset)."""
    directory = os.environ.get(GC_DIR_ENV)
    if not directory:
        return
    mapped = MappedFile.create(stats_path(Path(directory), os.getpid()), FILE_LENGTH)
    _kept.append(mapped)  # mapped for the process's life
    buffer = mapped.buffer
    started = [0, 0]
    clock, cpu_clock = time.perf_counter_ns, time.thread_time_ns

    def on_collection(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0], started[1] = clock(), cpu_clock()
            return
        pause_ns, cpu_ns = clock() - started[0], cpu_clock() - started[1]
        row = info["generation"] * ROW_LENGTH
        buffer.add_int64_ordered(row + COLLECTIONS_OFFSET, 1)
        buffer.add_int64_ordered(row + PAUSE_NS_OFFSET, pause_ns)
        buffer.add_int64_ordered(row + CPU_NS_OFFSET, cpu_ns)
        if pause_ns > buffer.get_int64_volatile(row + MAX_PAUSE_NS_OFFSET):
            buffer.put_int64_ordered(row + MAX_PAUSE_NS_OFFSET, pause_ns)
        if info["collected"]:
            buffer.add_int64_ordered(row + FREED_OFFSET, info["collected"])
        if info["generation"] == GENERATIONS - 1:
            buffer.put_int64_ordered(FROZEN_OFFSET, gc.get_freeze_count())

    gc.callbacks.append(on_collection)


def _read(buffer: AtomicBuffer) -> list[int]:
    return [buffer.get_int64_volatile(i) for i in range(0, FILE_LENGTH, 8)]


@dataclass
class GcWindow:
    """The collections of each of ``pids`` (role -> pid) between :meth:`start` and
    :meth:`stop`, from the files in ``directory``; a process without one (not Python, or not
    started with the recorder) is left out.

    Caller: the latency suite, around a run. Affects: the longest-pause slots (reset at start)."""

    directory: Path
    pids: dict[str, int]
    _files: dict[str, MappedFile] = field(default_factory=dict)
    _start: dict[str, list[int]] = field(default_factory=dict)
    _stop: dict[str, list[int]] = field(default_factory=dict)

    def start(self) -> None:
        """Mark the window's start."""
        for role, pid in self.pids.items():
            path = stats_path(self.directory, pid)
            if path.exists():
                self._files[role] = MappedFile.open(path, min_length=FILE_LENGTH)
        for role, mapped in self._files.items():
            buffer = mapped.buffer
            for generation in range(GENERATIONS):
                buffer.put_int64_ordered(generation * ROW_LENGTH + MAX_PAUSE_NS_OFFSET, 0)
            self._start[role] = _read(buffer)

    def stop(self) -> None:
        """Mark the window's end."""
        self._stop = {role: _read(mapped.buffer) for role, mapped in self._files.items()}
        for mapped in self._files.values():
            mapped.close()

    def report(self, messages: int) -> dict[str, dict[str, float]]:
        """Per role: ``genN`` collections of each generation, ``genN_pause_ms`` their pauses
        summed, ``genN_max_ms`` the longest, ``genN_cpu_ms`` the CPU time they took (less than
        the pause when the thread was preempted in one), ``pause_us_per_msg`` every pause over ``messages``,
        ``freed_per_msg`` the cyclic garbage they freed over ``messages``, and ``frozen`` (objects in the permanent generation, as the last full collection saw)."""
        out: dict[str, dict[str, float]] = {}
        for role, end in self._stop.items():
            begin = self._start[role]
            figures: dict[str, float] = {}
            total_ns = freed = 0
            for generation in range(GENERATIONS):
                row = generation * ROW_LENGTH // 8
                paused_ns = end[row + 1] - begin[row + 1]
                total_ns += paused_ns
                freed += end[row + 3] - begin[row + 3]
                figures[f"gen{generation}"] = end[row] - begin[row]
                figures[f"gen{generation}_pause_ms"] = round(paused_ns / 1e6, 3)
                figures[f"gen{generation}_max_ms"] = round(end[row + 2] / 1e6, 3)
                cpu_ns = end[row + 4] - begin[row + 4]
                figures[f"gen{generation}_cpu_ms"] = round(cpu_ns / 1e6, 3)
            figures["pause_us_per_msg"] = round(total_ns / 1e3 / messages, 3) if messages else 0.0
            figures["freed_per_msg"] = round(freed / messages, 3) if messages else 0.0
            figures["frozen"] = end[FROZEN_OFFSET // 8]
            out[role] = figures
        return out


CLIENT_GC_ENV: Final = "AEROMQ_BENCH_CLIENT_GC"
"""``tuned``: the aeromq workers of a latency run call :func:`aeromq.common.tune_gc` once their
client has started (a row says so: ``"gc": "tuned"``); unset or anything else, they leave the
collector as a user's process has it (``"gc": "default"``)."""


def client_gc() -> str:
    """What the latency run's aeromq clients do with their collector: ``tuned`` or
    ``default`` (see :data:`CLIENT_GC_ENV`)."""
    return "tuned" if os.environ.get(CLIENT_GC_ENV) == "tuned" else "default"
