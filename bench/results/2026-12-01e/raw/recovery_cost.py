"""What an unclean start costs: a store (defaults but the index interval) takes keyed messages
as fast as one thread can put them, in batches of 100, for SECONDS, and is SIGKILLed; a new
process opens the directory and prints the recovery report as JSON.

``python recovery_cost.py SECONDS FLUSH_INDEX_INTERVAL_MS`` from a tree's root with it on
``PYTHONPATH``."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

from aeromq.broker.store import InboundMessage, MessageStore, StoreConfig


def _config(root: Path, interval_ms: int) -> StoreConfig:
    return StoreConfig(data_dir=root, flush_index_interval_ms=interval_ms)


def _fill_then_die(root: str, seconds: float, interval_ms: int) -> None:
    store = MessageStore(_config(Path(root), interval_ms))
    store.start()
    time.sleep(1.5)  # the first checkpoint (which flushes the index) is behind us
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        batch = [InboundMessage("T", n % 4, b"x" * 100, {"KEYS": f"k{n + i}"}) for i in range(100)]
        assert store.put_messages(batch).ok
        n += 100
    print(json.dumps({"put": n}), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    seconds = float(sys.argv[1])
    interval_ms = int(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="recov-") as root:
        child = multiprocessing.get_context("spawn").Process(
            target=_fill_then_die, args=(root, seconds, interval_ms)
        )
        child.start()
        child.join(seconds + 120)
        began = time.perf_counter()
        store = MessageStore(_config(Path(root), interval_ms))
        report = store.start()
        took_ms = (time.perf_counter() - began) * 1000.0
        print(
            json.dumps(
                {
                    "flush_index_interval_ms": interval_ms,
                    "start_ms": round(took_ms, 1),
                    "recovery_ms": round(report.duration_ms, 1),
                    "records_scanned": report.records_scanned,
                    "records_redispatched": report.records_redispatched,
                    "scanned_from": report.scanned_from,
                    "end_offset": report.end_offset,
                }
            ),
            flush=True,
        )
        store.shutdown()


if __name__ == "__main__":
    main()
