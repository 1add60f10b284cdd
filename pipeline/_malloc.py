"""``retain_freed_memory``: glibc's malloc keeps the memory a reader frees, for its next answers.

A queue reader (:mod:`pipeline._queue_reader`) allocates and frees a few mebibytes a moment: each
answer's stored batches (about 1 MiB), the Arrow columns built from them. glibc's malloc hands
blocks from 128 KiB up to ``mmap`` (raising that threshold as such blocks are freed) and gives
the top of its heap back to the system once more than twice that threshold is free there, so
the same memory goes back to the system and comes again as fresh pages, each faulted in and
zeroed by the kernel: measured in Spark's Python workers, 16-20 page faults per 1,000 rows read,
about 0.06 us of a worker's 0.5 us per row (outside Spark, 0.14-0.15 -> 0.13 us per row).

So the first read in a process sets ``M_MMAP_THRESHOLD`` to :data:`MMAP_THRESHOLD_BYTES` and
``M_TRIM_THRESHOLD`` to :data:`TRIM_THRESHOLD_BYTES`: blocks under 32 MiB come from the heap,
and up to 64 MiB of free memory stays at its top, reused by the next answers. The cost is that
much resident memory kept by the process once freed. It is process-wide, which suits the
processes the connector reads in (Spark's Python workers run tasks and nothing else); set
:data:`OPT_OUT_ENV` to ``0`` to leave malloc as it is. Only glibc has these knobs: elsewhere
nothing is changed.
"""

from __future__ import annotations

import ctypes
import logging
import os
import platform
import threading
from typing import Final

__all__ = ["MMAP_THRESHOLD_BYTES", "OPT_OUT_ENV", "TRIM_THRESHOLD_BYTES", "retain_freed_memory"]

MMAP_THRESHOLD_BYTES: Final = 32 * 1024 * 1024
"""glibc's largest ``M_MMAP_THRESHOLD`` on 64-bit systems."""
TRIM_THRESHOLD_BYTES: Final = 64 * 1024 * 1024
OPT_OUT_ENV: Final = "AEROMQ_SPARK_MALLOC_TUNING"
_M_TRIM_THRESHOLD: Final = -1  # malloc.h
_M_MMAP_THRESHOLD: Final = -3

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_tuned: dict[int, bool] = {}  # pid -> whether set (a forked child decides again)


def retain_freed_memory() -> bool:
    """Set glibc's thresholds in this process, once (see module); whether they are set."""
    pid = os.getpid()
    with _lock:
        done = _tuned.get(pid)
        if done is None:
            done = _tuned[pid] = _set_thresholds()
        return done


def _set_thresholds() -> bool:
    if os.environ.get(OPT_OUT_ENV, "1") == "0":
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
    if not done:
        _log.debug("glibc refused the malloc thresholds; malloc is left as it is")
    return done
