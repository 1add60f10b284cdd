"""The broker store: append throughput (ASYNC and SYNC flush; single puts and batches of 32 and
256; 1 and 8 writer threads; SYNC with asynchronous acknowledgements, as the broker's ingress
would use it) and read throughput by queue, for 100 B message bodies.

Rates are messages per second of wall time; MB/s counts the bytes appended to the commit log
(records, not just bodies). The store runs on a temporary directory on the default temp
filesystem (real disk here, not tmpfs); SYNC numbers are bounded by ``fdatasync`` latency,
shown as a baseline. Targets (issue 6): >= 500,000 msgs/s appended ASYNC in batches; SYNC
with 8 concurrent writers >= 20x SYNC with one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from aeromq.broker.store import (
    FlushMode,
    InboundMessage,
    MessageStore,
    PutMessageResult,
    StoreConfig,
)
from aeromq.common import tag_hash_code
from bench._harness import Result, Target, latency_summary

TOPIC = "BenchTopic"
BODY = bytes(range(100))
SEGMENT_BYTES = 256 << 20


def _store(root: Path, name: str, mode: FlushMode) -> MessageStore:
    config = StoreConfig(
        root / name,
        commit_log_segment_bytes=SEGMENT_BYTES,
        flush_mode=mode,
        index_enabled=False,
    )
    store = MessageStore(config)
    store.start()
    return store


def _messages(count: int, queue_id: int = 0, tags: str | None = None) -> list[InboundMessage]:
    properties = {"TAGS": tags} if tags else None
    return [InboundMessage(TOPIC, queue_id, BODY, properties) for _ in range(count)]


def _append_async(root: Path, batch: int, total: int, tags: str | None) -> tuple[float, float]:
    """Best of three runs: (msgs/s, MB/s)."""
    best = (0.0, 0.0)
    for run in range(3):
        store = _store(root, f"async-{batch}-{tags}-{run}", FlushMode.ASYNC)
        try:
            messages = _messages(batch, tags=tags)
            put = store.put_messages if batch > 1 else None
            put_one = store.put_message
            one = messages[0]
            sent = 0
            began = time.perf_counter()
            while sent < total:
                result = put(messages) if put is not None else put_one(one)
                sent += batch
            elapsed = time.perf_counter() - began
            assert result.ok, result
            rate = sent / elapsed
            if rate > best[0]:
                best = (rate, store.max_physical_offset / elapsed / 1e6)
        finally:
            store.shutdown()
            shutil.rmtree(root / f"async-{batch}-{tags}-{run}", ignore_errors=True)
    return best


def _append_sync(
    root: Path, writers: int, batch: int, seconds: float
) -> tuple[float, float, list[int], int]:
    """Blocking SYNC puts from ``writers`` threads: (msgs/s, MB/s, latencies ns, flushes)."""
    name = f"sync-{writers}-{batch}"
    store = _store(root, name, FlushMode.SYNC)
    counts = [0] * writers
    latencies: list[list[int]] = [[] for _ in range(writers)]
    start = threading.Barrier(writers + 1)
    deadline = [0.0]

    def writer(index: int) -> None:
        messages = _messages(batch, queue_id=index)
        put = store.put_messages
        clock = time.perf_counter_ns
        samples = latencies[index]
        start.wait()
        stop = deadline[0]
        sent = 0
        while time.monotonic() < stop:
            began = clock()
            result = put(messages)
            samples.append(clock() - began)
            if not result.ok:
                raise RuntimeError(f"sync put failed: {result.status}")
            sent += batch
        counts[index] = sent

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    try:
        for thread in threads:
            thread.start()
        deadline[0] = time.monotonic() + seconds
        began = time.perf_counter()
        start.wait()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - began
        group_commit = store._group_commit
        flushes = group_commit.flush_count if group_commit is not None else 0
        wrote = store.max_physical_offset
    finally:
        store.shutdown()
        shutil.rmtree(root / name, ignore_errors=True)
    merged = [sample for samples in latencies for sample in samples]
    return sum(counts) / elapsed, wrote / elapsed / 1e6, merged, flushes


def _append_sync_pipelined(root: Path, window: int, total: int) -> tuple[float, int]:
    """SYNC flush, one thread putting single messages with up to ``window`` unacknowledged
    (``put_messages_async``): the broker ingress pattern. Returns (msgs/s, flushes)."""
    store = _store(root, f"sync-pipelined-{window}", FlushMode.SYNC)
    slots = threading.Semaphore(window)
    failures: list[PutMessageResult] = []

    def acknowledged(result: PutMessageResult) -> None:
        if not result.ok:
            failures.append(result)
        slots.release()

    try:
        messages = _messages(1)
        put = store.put_messages_async
        began = time.perf_counter()
        for _ in range(total):
            slots.acquire()
            put(messages, acknowledged)
        for _ in range(window):
            slots.acquire()
        elapsed = time.perf_counter() - began
        group_commit = store._group_commit
        flushes = group_commit.flush_count if group_commit is not None else 0
    finally:
        store.shutdown()
        shutil.rmtree(root / f"sync-pipelined-{window}", ignore_errors=True)
    if failures:
        raise RuntimeError(f"sync put failed: {failures[0].status}")
    return total / elapsed, flushes


def _read(root: Path, total: int) -> Iterator[Result]:
    store = _store(root, "read", FlushMode.ASYNC)
    try:
        a = _messages(128, tags="TagA")
        b = _messages(128, tags="TagB")
        for i in range(total // 128):
            store.put_messages(a if i % 2 == 0 else b)
        count = store.get_max_offset(TOPIC, 0)
        for name, filter_hashes in (("all", None), ("tag-filter-half", {tag_hash_code("TagA")})):
            offset = read = 0
            began = time.perf_counter()
            while offset < count:
                result = store.get_messages(TOPIC, 0, offset, 32, tag_hashes=filter_hashes)
                read += len(result.messages)
                offset = result.next_begin_offset
            elapsed = time.perf_counter() - began
            yield Result(
                f"store:read:by-queue:batch32:{name}",
                msgs_per_s=read / elapsed,
                extra={"messages_returned": read, "entries_scanned": count},
            )
    finally:
        store.shutdown()
        shutil.rmtree(root / "read", ignore_errors=True)


def _baselines(root: Path, rounds: int) -> Iterator[Result]:
    path = root / "fsync-baseline"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.ftruncate(fd, 1 << 20)
        samples = []
        for i in range(rounds):
            os.pwrite(fd, BODY, (i * 128) % (1 << 20))
            began = time.perf_counter_ns()
            os.fdatasync(fd)
            samples.append(time.perf_counter_ns() - began)
    finally:
        os.close(fd)
        path.unlink()
    samples.sort()
    yield Result("baseline:fdatasync_after_100B_write", ns_per_op=samples[len(samples) // 2])
    crc_rounds = 200_000
    crc32: Callable[[bytes], int] = zlib.crc32
    began = time.perf_counter_ns()
    for _ in range(crc_rounds):
        crc32(BODY)
    yield Result(
        "baseline:zlib.crc32_100B", ns_per_op=(time.perf_counter_ns() - began) / crc_rounds
    )


def run(quick: bool) -> Iterator[Result | Target]:
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-store-"))
    try:
        yield from _baselines(root, 200 if quick else 2000)
        total = 60_000 if quick else 400_000
        async_best = 0.0
        for batch in (1, 32, 256):
            rate, mb = _append_async(root, batch, total // (4 if batch == 1 else 1), None)
            yield Result(f"store:append:async:batch{batch}", msgs_per_s=rate, MB_per_s=mb)
            if batch > 1:
                async_best = max(async_best, rate)
        rate, mb = _append_async(root, 256, total, "TagA")
        yield Result("store:append:async:batch256:with-tags", msgs_per_s=rate, MB_per_s=mb)

        seconds = 0.5 if quick else 2.0
        sync_rates: dict[tuple[int, int], float] = {}
        for writers, batch in ((1, 1), (1, 32), (1, 256), (8, 1), (8, 32)):
            rate, mb, samples, flushes = _append_sync(root, writers, batch, seconds)
            sync_rates[(writers, batch)] = rate
            yield Result(
                f"store:append:sync:batch{batch}:{writers}-writer{'s' if writers > 1 else ''}",
                msgs_per_s=rate,
                MB_per_s=mb,
                **latency_summary(samples),
                extra={
                    "flushes": flushes,
                    "puts_per_flush": round(len(samples) / max(1, flushes), 2),
                },
            )
        for window in (8, 64):
            rate, flushes = _append_sync_pipelined(root, window, 5_000 if quick else 40_000)
            yield Result(
                f"store:append:sync:batch1:1-writer-async-acks-window{window}",
                msgs_per_s=rate,
                extra={"flushes": flushes},
            )

        yield from _read(root, 50_000 if quick else 200_000)

        yield Target("append ASYNC in batches (100 B)", async_best, 500_000, "msgs/s")
        ratio = sync_rates[(8, 1)] / sync_rates[(1, 1)]
        yield Target("SYNC 8 writers / SYNC 1 writer (single puts)", ratio, 20, "x")
    finally:
        shutil.rmtree(root, ignore_errors=True)
