"""The broker store on record batches: append throughput (``put_batch`` of batches the producer
encoded, of 1, 32 and 256 records; ASYNC and SYNC flush; 1 and 8 writer threads; SYNC with
asynchronous acknowledgements, as the broker's ingress uses it) and read throughput by queue
(``get_batches``, the pull path: stored bytes, no decode; ``get_messages`` decoded, for
comparison), for 100 B message bodies.

Batches are encoded once before the clock starts (the producer's work); ``put_messages``
(encoding included) is shown once for comparison. Rates are messages (records) per second of
wall time, and ``us_per_batch`` the wall time per call; MB/s counts the bytes appended to the
commit log (batches, not just bodies). The store runs on a temporary directory on the default temp
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
from aeromq.common.record_batch import encode_batch
from bench._harness import Result, Target, case_rows, figure, isolated, latency_summary, ratio_of

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


def _batch(count: int, tags: str | None = None) -> bytes:
    """One batch of ``count`` 100 B records, as a producer encodes it."""
    return bytes(encode_batch(TOPIC.encode(), [BODY] * count, [tags] * count if tags else None))


def _append_async(
    root: Path, batch: int, total: int, tags: str | None, encode: bool = False
) -> tuple[float, float, float]:
    """Best of three runs: (msgs/s, MB/s, us per put). ``encode``: ``put_messages`` (the
    store encodes) instead of ``put_batch``."""
    best = (0.0, 0.0, 0.0)
    for run in range(3):
        name = f"async-{batch}-{tags}-{encode}-{run}"
        store = _store(root, name, FlushMode.ASYNC)
        try:
            data = _batch(batch, tags)
            messages = _messages(batch, tags=tags)
            put_batch = store.put_batch
            put_messages = store.put_messages
            sent = puts = 0
            began = time.perf_counter()
            if encode:
                while sent < total:
                    result = put_messages(messages)
                    sent += batch
                    puts += 1
            else:
                while sent < total:
                    result = put_batch(data, TOPIC, 0)
                    sent += batch
                    puts += 1
            elapsed = time.perf_counter() - began
            assert result.ok, result
            rate = sent / elapsed
            if rate > best[0]:
                best = (rate, store.max_physical_offset / elapsed / 1e6, elapsed / puts * 1e6)
        finally:
            store.shutdown()
            shutil.rmtree(root / name, ignore_errors=True)
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
    data = _batch(batch)

    def writer(index: int) -> None:
        put = store.put_batch
        clock = time.perf_counter_ns
        samples = latencies[index]
        start.wait()
        stop = deadline[0]
        sent = 0
        while time.monotonic() < stop:
            began = clock()
            result = put(data, TOPIC, index)
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
    """SYNC flush, one thread putting one-record batches with up to ``window``
    unacknowledged (``put_batch_async``): the broker ingress pattern. Returns (msgs/s,
    flushes)."""
    store = _store(root, f"sync-pipelined-{window}", FlushMode.SYNC)
    slots = threading.Semaphore(window)
    failures: list[PutMessageResult] = []

    def acknowledged(result: PutMessageResult) -> None:
        if not result.ok:
            failures.append(result)
        slots.release()

    try:
        data = _batch(1)
        put = store.put_batch_async
        began = time.perf_counter()
        for _ in range(total):
            slots.acquire()
            put(data, TOPIC, 0, acknowledged)
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
    """Reads of 32 records a call from a queue of batches of 32 (alternately tagged TagA
    and TagB): all, half by tag filter, and decoded."""
    store = _store(root, "read", FlushMode.ASYNC)
    try:
        a = _batch(32, "TagA")
        b = _batch(32, "TagB")
        for i in range(total // 32):
            store.put_batch(a if i % 2 == 0 else b, TOPIC, 0)
        count = store.get_max_offset(TOPIC, 0)
        cases = (
            ("get_batches:all", store.get_batches, None),
            ("get_batches:tag-filter-half", store.get_batches, {tag_hash_code("TagA")}),
            ("get_messages:all", store.get_messages, None),
        )
        for name, get, filter_hashes in cases:
            offset = read = calls = 0
            began = time.perf_counter()
            while offset < count:
                result = get(TOPIC, 0, offset, 32, tag_hashes=filter_hashes)
                read += result.message_count
                offset = result.next_begin_offset
                calls += 1
            elapsed = time.perf_counter() - began
            yield Result(
                f"store:read:by-queue:batch32:{name}",
                msgs_per_s=read / elapsed,
                extra={
                    "messages_returned": read,
                    "entries_scanned": count,
                    "us_per_call": round(elapsed / calls * 1e6, 2),
                },
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


def _async_row(
    root: Path, name: str, batch: int, total: int, tags: str | None, encode: bool = False
) -> Result:
    rate, mb, us = _append_async(root, batch, total, tags, encode)
    return Result(name, msgs_per_s=rate, MB_per_s=mb, extra={"us_per_batch": round(us, 2)})


def _sync_row(root: Path, name: str, writers: int, batch: int, seconds: float) -> Result:
    rate, mb, samples, flushes = _append_sync(root, writers, batch, seconds)
    return Result(
        name,
        msgs_per_s=rate,
        MB_per_s=mb,
        **latency_summary(samples),
        extra={"flushes": flushes, "puts_per_flush": round(len(samples) / max(1, flushes), 2)},
    )


def _pipelined_row(root: Path, name: str, window: int, total: int) -> Result:
    rate, flushes = _append_sync_pipelined(root, window, total)
    return Result(name, msgs_per_s=rate, extra={"flushes": flushes})


def run(quick: bool) -> Iterator[Result | Target]:
    """Each case in a process of its own (:func:`bench._harness.isolated`), bounded in time."""
    root = Path(tempfile.mkdtemp(prefix="aeromq-bench-store-"))
    limit_s = 60.0 if quick else 300.0
    rows: dict[str, Result] = {}

    def case(
        names: str | tuple[str, ...],
        measure: Callable[..., Result | Iterator[Result]],
        *args: object,
    ) -> Iterator[Result]:
        for row in case_rows(names, isolated, measure, root, *args, timeout_s=limit_s):
            rows[row.name] = row
            yield row

    try:
        yield from case(
            ("baseline:fdatasync_after_100B_write", "baseline:zlib.crc32_100B"),
            _baselines,
            200 if quick else 2000,
        )
        total = 60_000 if quick else 400_000
        for batch in (1, 32, 256):
            name = f"store:append:async:batch{batch}"
            yield from case(name, _async_row, name, batch, total // (4 if batch == 1 else 1), None)
        name = "store:append:async:batch256:with-tags"
        yield from case(name, _async_row, name, 256, total, "TagA")
        name = "store:append:async:batch32:put_messages-encoding"
        yield from case(name, _async_row, name, 32, total // 4, "TagA", True)

        seconds = 0.5 if quick else 2.0
        for writers, batch in ((1, 1), (1, 32), (1, 256), (8, 1), (8, 32)):
            name = f"store:append:sync:batch{batch}:{writers}-writer{'s' if writers > 1 else ''}"
            yield from case(name, _sync_row, name, writers, batch, seconds)
        for window in (8, 64):
            name = f"store:append:sync:batch1:1-writer-async-acks-window{window}"
            yield from case(name, _pipelined_row, name, window, 5_000 if quick else 40_000)

        reads = ("get_batches:all", "get_batches:tag-filter-half", "get_messages:all")
        yield from case(
            tuple(f"store:read:by-queue:batch32:{read}" for read in reads),
            _read,
            50_000 if quick else 200_000,
        )

        batched = [figure(rows, f"store:append:async:batch{batch}") for batch in (32, 256)]
        measured = [rate for rate in batched if rate is not None]
        yield Target(
            "append ASYNC in batches (100 B)", max(measured, default=None), 500_000, "msgs/s"
        )
        ratio = ratio_of(
            figure(rows, "store:append:sync:batch1:8-writers"),
            figure(rows, "store:append:sync:batch1:1-writer"),
        )
        yield Target("SYNC 8 writers / SYNC 1 writer (single puts)", ratio, 20, "x")
    finally:
        shutil.rmtree(root, ignore_errors=True)
