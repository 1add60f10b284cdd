"""The key index's write, Python key by key against the native call (``_index_put.c``): an index
file of the broker's default size (5M slots, 20M entries), 2,000 unique keys written and flushed
first (the flush write-protects their pages, as the checkpoint's does), then 18,000 more in
writes of 100 (a 20 ms drain at 5,000 msgs/s), flushed every 5,000. Prints each way's time a
write of 100 (p50, p99) and its CPU an entry. Run from a tree's root with it on ``PYTHONPATH``:
``python bench/results/2026-12-01/index_put_micro.py``."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from aeromq.broker.store._index_file import IndexFile


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="index-put-"))
    try:
        for run, native in enumerate((False, True, False, True)):
            index_file = IndexFile.create(root / str(run), 0, 0, 5_000_000, 20_000_000)
            items = [("TopicA", b"u-%016d" % i, i * 100, 1000 + i) for i in range(20_000)]
            index_file.put_entries(items[:2000], native=native)
            index_file.mapped.flush()
            took: list[float] = []
            cpu_began = time.process_time()
            for at in range(2000, 20_000, 100):
                began = time.perf_counter()
                index_file.put_entries(items[at : at + 100], native=native)
                took.append(time.perf_counter() - began)
                if at % 5000 == 0:
                    index_file.mapped.flush()
            cpu_us = (time.process_time() - cpu_began) / 18_000 * 1e6
            took.sort()
            print(
                "native" if native else "python",
                f"a write of 100: p50 {took[len(took) // 2] * 1e6:.0f} us,"
                f" p99 {took[int(len(took) * 0.99)] * 1e6:.0f} us; CPU an entry {cpu_us:.2f} us",
            )
            index_file.close()
    finally:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
