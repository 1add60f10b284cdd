"""Cost of one call of each operation of the native atomic helper, beside plain-Python baselines.

Every hot path of the transport is a few of these calls, so this suite is the floor of all the
others. Baselines: ``struct.unpack_from`` / ``pack_into`` on a memoryview, the plain-Python way.
Each case runs in a process of its own (:func:`bench._harness.isolated`), bounded in time.
"""

from __future__ import annotations

import struct
import timeit
from collections.abc import Iterator

from aeromq.transport.concurrent import AtomicBuffer
from bench._harness import Result, Target, case_rows, isolated

_CASES = {
    "get_int64": "b.get_int64(64)",
    "get_int32_volatile": "b.get_int32_volatile(64)",
    "get_int64_volatile": "b.get_int64_volatile(64)",
    "put_int64": "b.put_int64(64, 1)",
    "put_int32_ordered": "b.put_int32_ordered(64, 1)",
    "put_int64_ordered": "b.put_int64_ordered(64, 1)",
    "compare_and_set_int64": "b.compare_and_set_int64(64, 1, 1)",
    "get_and_add_int64": "b.get_and_add_int64(64, 1)",
    "add_int64_ordered": "b.add_int64_ordered(64, 1)",
    "put_bytes_64B": "b.put_bytes(128, data)",
    "get_bytes_64B": "b.get_bytes(128, 64)",
    "baseline:struct.unpack_from_q": "unpack(m, 64)",
    "baseline:struct.pack_into_q": "pack(m, 64, 1)",
}


def _cost(name: str, stmt: str, number: int) -> Result:
    """Nanoseconds per ``stmt``: the best of three ``timeit`` runs of ``number`` calls."""
    buffer = AtomicBuffer.allocate(4096)
    view = memoryview(buffer)
    names = {
        "b": buffer,
        "m": view,
        "data": b"x" * 64,
        "unpack": struct.Struct("<q").unpack_from,
        "pack": struct.Struct("<q").pack_into,
    }
    best = min(timeit.repeat(stmt, globals=names, number=number, repeat=3))
    names.clear()
    view.release()
    return Result(name, ns_per_op=best / number * 1e9)


def run(quick: bool) -> Iterator[Result | Target]:
    number = 200_000 if quick else 2_000_000
    limit_s = 30.0 if quick else 120.0
    for case, stmt in _CASES.items():
        name = f"atomic:{case}" if ":" not in case else case
        yield from case_rows(name, isolated, _cost, name, stmt, number, timeout_s=limit_s)
