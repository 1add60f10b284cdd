"""``PYTHONPATH=TREE python putloop.py COUNT [random]``: COUNT one-message puts into a new store
on its defaults (a 100-byte body), each timed: the puts over 0.3 ms by index, and the mean.
``random``: the log's first segment advised ``MADV_RANDOM`` by hand (for a tree without
``MappedFile.advise_end``). On the round's base the slow puts came at every 8 MiB of log (this
VM's ``read_ahead_kb``)."""

from __future__ import annotations

import mmap
import shutil
import sys
import tempfile
import time
from pathlib import Path

from aeromq.broker.store import InboundMessage, MessageStore, StoreConfig

_SLOW_NS = 300_000


def main() -> None:
    count = int(sys.argv[1])
    root = Path(tempfile.mkdtemp(prefix="putloop"))
    store = MessageStore(StoreConfig(root / "store"))
    store.start()
    try:
        store.put_messages([InboundMessage("Hops", 0, b"x" * 100, None)])
        segment = store.commit_log.files.last
        if len(sys.argv) > 2 and sys.argv[2] == "random" and segment is not None:
            segment.mm.madvise(mmap.MADV_RANDOM)
        slow: list[tuple[int, int]] = []
        total_ns = 0
        for i in range(count):
            started = time.perf_counter_ns()
            store.put_messages([InboundMessage("Hops", 0, b"x" * 100, None)])
            took = time.perf_counter_ns() - started
            total_ns += took
            if took > _SLOW_NS:
                slow.append((i, took // 1000))
        print(f"puts over 0.3 ms (index, us): {slow[:20]} ({len(slow)} in all)")
        print(f"mean put {total_ns / count / 1e3:.2f} us")
    finally:
        store.shutdown()
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
