"""One-to-one ring buffer across processes, beside ``multiprocessing.Queue`` and pyzmq over ipc.

Every case runs a producer process and a consumer process (``spawn``), started together at a
barrier; the rate is records received / time from the barrier to the last record at the
consumer. Every producer stamps a sequence number into each 64 B or 1 KiB record (a reused
``bytearray``) and every consumer checks it, so all transports do the same work per record.

- ``ringbuffer:one-to-one``: ``OneToOneRingBuffer`` over a 4 MiB file in /dev/shm; ``write``
  per record, or ``write_batch`` of 64 records; the consumer's ``read`` handler checks the
  sequence number in place (zero copy, as Aeron's handlers do).
- ``baseline:mp.Queue``: ``put`` per record, or ``put`` of a list of 64 records.
- ``baseline:pyzmq-ipc``: PUSH/PULL over ``ipc://`` in a temp dir; ``send`` per record, or
  ``send_multipart`` of 64 frames (one frame per record).
- ping-pong: round trip of one 64 B record over two one-to-one rings (and the same over two
  queues and two PUSH/PULL pairs); p50 / p99 / p99.9 in microseconds.

The full run repeats each throughput case three times, interleaving the transports, and reports
the best run (all runs are in the JSON as ``runs_msgs_per_s``): the machine is shared, and a
passing load should not decide a comparison. ``--quick`` runs each case once, with fewer records.

Ring producers and consumers spin, yielding the CPU (``sched_yield``) when the ring is full or
empty, like Aeron's yielding idle strategy; the ping-pong spins without yielding. On a 2-core
machine each process gets a core, and other load on the machine shows up in the numbers.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import shutil
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from multiprocessing.synchronize import Barrier, Event
from typing import TYPE_CHECKING, TypeAlias, TypeVar, TypeVarTuple

import zmq

from aeromq.transport.concurrent import AtomicBuffer, MappedFile, OneToOneRingBuffer
from aeromq.transport.concurrent.ring_buffer_descriptor import TRAILER_LENGTH
from bench._harness import (
    Result,
    Target,
    attempt,
    best_rate,
    latency_result,
    latency_summary,
    record_run,
)

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

_R = TypeVar("_R")
_Ps = TypeVarTuple("_Ps")
_Cs = TypeVarTuple("_Cs")
_Records: TypeAlias = "Queue[bytes | list[bytes]]"
"""The mp.Queue baseline's queue: a record, or a list of ``batch`` records, per ``put``."""
_Pings: TypeAlias = "Queue[bytes | None]"
"""A ping or pong queue of the mp.Queue baseline: a 64-byte record, None to stop."""
_Summaries: TypeAlias = "Queue[dict[str, float]]"
"""Where a pinger puts its :func:`~bench._harness.latency_summary`."""

BATCH = 64
RING_CAPACITY = 4 << 20
_MSG_TYPE_ID = 1
_STOP_TYPE_ID = 2
_SEQ = struct.Struct("<q")
_ctx = mp.get_context("spawn")
WORKER_DEADLINE_S = 120.0
"""A pair of workers still running this long after their barrier has hung (a quick case takes
seconds, a full one well under a minute): they are killed and the case fails."""
_ZMQ_STALL_MS = 30_000
"""A pyzmq consumer with no record for this long has lost one (the producer is done)."""


# ---------------------------------------------------------------------------------------------
# workers (top level: spawn pickles them by name)


def _ring_producer(path: str, size: int, batch: int, count: int, barrier: Barrier) -> None:
    mapped = MappedFile.open(path)
    ring = OneToOneRingBuffer(mapped.buffer)
    pack, yield_cpu = _SEQ.pack_into, os.sched_yield
    barrier.wait()
    if batch == 1:
        payload = bytearray(size)
        write = ring.write
        for seq in range(count):
            pack(payload, 0, seq)
            while not write(_MSG_TYPE_ID, payload):
                yield_cpu()
    else:
        records = [bytearray(size) for _ in range(batch)]
        write_batch = ring.write_batch
        for base in range(0, count, batch):
            for j in range(batch):
                pack(records[j], 0, base + j)
            done = write_batch(_MSG_TYPE_ID, records)
            while done < batch:
                yield_cpu()
                done += write_batch(_MSG_TYPE_ID, records[done:])
    mapped.close()


def _ring_consumer(path: str, count: int, barrier: Barrier, results: Queue[int]) -> None:
    mapped = MappedFile.open(path)
    ring = OneToOneRingBuffer(mapped.buffer)
    get = mapped.buffer.get_int64
    expected = 0

    def on_message(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        nonlocal expected
        if get(index) != expected:
            raise AssertionError(f"sequence {get(index)} != {expected}")
        expected += 1

    read, yield_cpu = ring.read, os.sched_yield
    barrier.wait()
    start_ns = time.perf_counter_ns()
    received = 0
    while received < count:
        n = read(on_message)
        if n == 0:
            yield_cpu()
        received += n
    results.put(time.perf_counter_ns() - start_ns)
    mapped.close()


def _queue_producer(q: _Records, size: int, batch: int, count: int, barrier: Barrier) -> None:
    pack = _SEQ.pack_into
    put = q.put
    barrier.wait()
    if batch == 1:
        payload = bytearray(size)
        for seq in range(count):
            pack(payload, 0, seq)
            put(bytes(payload))  # put() pickles later, in the feeder thread: hand it a copy
    else:
        records = [bytearray(size) for _ in range(batch)]
        for base in range(0, count, batch):
            for j in range(batch):
                pack(records[j], 0, base + j)
            put([bytes(record) for record in records])
    q.close()
    q.join_thread()


def _queue_consumer(q: _Records, count: int, barrier: Barrier, results: Queue[int]) -> None:
    unpack = _SEQ.unpack_from
    get = q.get
    barrier.wait()
    start_ns = time.perf_counter_ns()
    expected = 0
    while expected < count:
        item = get()
        for record in item if isinstance(item, list) else (item,):
            if unpack(record)[0] != expected:
                raise AssertionError("out of sequence")
            expected += 1
    results.put(time.perf_counter_ns() - start_ns)


def _zmq_producer(
    address: str, size: int, batch: int, count: int, received: Event, barrier: Barrier
) -> None:
    """Send ``count`` sequence-stamped records, then stay until the consumer has them all.

    The wait is the fix of a lost tail: libzmq does not always honour ``LINGER`` when the
    receiver holds its high-water mark as the sender closes (libzmq issues 1922, 3774 and 4660,
    the last still open), so a producer that closed and exited right after its last ``send``
    could take queued messages with it, and its consumer waited in ``recv()`` for ever."""
    context = zmq.Context()
    sock = context.socket(zmq.PUSH)
    sock.connect(address)
    pack = _SEQ.pack_into
    barrier.wait()
    if batch == 1:
        payload = bytearray(size)
        send = sock.send
        for seq in range(count):
            pack(payload, 0, seq)
            send(payload)
    else:
        records = [bytearray(size) for _ in range(batch)]
        send_multipart = sock.send_multipart
        for base in range(0, count, batch):
            for j in range(batch):
                pack(records[j], 0, base + j)
            send_multipart(records)
    received.wait(WORKER_DEADLINE_S)
    sock.close(linger=-1)
    context.term()


def _zmq_consumer(
    address: str, count: int, batch: int, received: Event, barrier: Barrier, results: Queue[int]
) -> None:
    """Receive and check ``count`` records; a stall of :data:`_ZMQ_STALL_MS` is an error naming
    how many arrived (a lost message fails the case, it does not hang it)."""
    context = zmq.Context()
    sock = context.socket(zmq.PULL)
    sock.setsockopt(zmq.RCVTIMEO, _ZMQ_STALL_MS)  # no extra call per message, unlike poll()
    sock.bind(address)
    unpack = _SEQ.unpack_from
    barrier.wait()
    start_ns = time.perf_counter_ns()
    expected = 0
    try:
        if batch == 1:
            recv = sock.recv
            while expected < count:
                if unpack(recv())[0] != expected:
                    raise AssertionError("out of sequence")
                expected += 1
        else:
            recv_multipart = sock.recv_multipart
            while expected < count:
                for frame in recv_multipart():
                    if unpack(frame)[0] != expected:
                        raise AssertionError("out of sequence")
                    expected += 1
        results.put(time.perf_counter_ns() - start_ns)
        received.set()
    except zmq.Again:
        raise RuntimeError(
            f"pyzmq consumer: {expected} of {count} records, then none for {_ZMQ_STALL_MS} ms"
        ) from None
    finally:
        sock.close(linger=0)
        context.term()


def _ring_ponger(ping_path: str, pong_path: str, barrier: Barrier) -> None:
    ping_file, pong_file = MappedFile.open(ping_path), MappedFile.open(pong_path)
    ping, pong = OneToOneRingBuffer(ping_file.buffer), OneToOneRingBuffer(pong_file.buffer)
    write = pong.write
    running = True

    def echo(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        nonlocal running
        if msg_type_id == _STOP_TYPE_ID:
            running = False
        while not write(msg_type_id, buffer, index, length):
            pass

    read = ping.read
    barrier.wait()
    while running:
        read(echo)
    ping_file.close()
    pong_file.close()


def _ring_pinger(
    ping_path: str, pong_path: str, samples: int, barrier: Barrier, results: _Summaries
) -> None:
    ping_file, pong_file = MappedFile.open(ping_path), MappedFile.open(pong_path)
    ping, pong = OneToOneRingBuffer(ping_file.buffer), OneToOneRingBuffer(pong_file.buffer)
    payload = bytearray(64)
    write, read, clock = ping.write, pong.read, time.perf_counter_ns

    def on_pong(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
        pass

    rtts = [0] * samples
    barrier.wait()
    for i in range(-samples // 10, samples):  # the first tenth warms up
        _SEQ.pack_into(payload, 0, i)
        start_ns = clock()
        write(_MSG_TYPE_ID, payload)
        while read(on_pong) == 0:
            pass
        if i >= 0:
            rtts[i] = clock() - start_ns
    write(_STOP_TYPE_ID, payload)
    results.put(latency_summary(rtts))
    ping_file.close()
    pong_file.close()


def _queue_ponger(ping: _Pings, pong: _Pings, barrier: Barrier) -> None:
    barrier.wait()
    while True:
        item = ping.get()
        pong.put(item)
        if item is None:
            break
    pong.close()
    pong.join_thread()


def _queue_pinger(
    ping: _Pings, pong: _Pings, samples: int, barrier: Barrier, results: _Summaries
) -> None:
    payload = bytearray(64)
    rtts = [0] * samples
    clock = time.perf_counter_ns
    barrier.wait()
    for i in range(-samples // 10, samples):
        _SEQ.pack_into(payload, 0, i)
        start_ns = clock()
        ping.put(bytes(payload))
        pong.get()
        if i >= 0:
            rtts[i] = clock() - start_ns
    ping.put(None)
    pong.get()
    results.put(latency_summary(rtts))


def _zmq_ponger(ping_address: str, pong_address: str, barrier: Barrier) -> None:
    context = zmq.Context()
    pull, push = context.socket(zmq.PULL), context.socket(zmq.PUSH)
    pull.bind(ping_address)
    push.connect(pong_address)
    barrier.wait()
    while True:
        message = pull.recv()
        push.send(message)
        if message == b"stop":
            break
    push.close(linger=-1)
    pull.close()
    context.term()


def _zmq_pinger(
    ping_address: str, pong_address: str, samples: int, barrier: Barrier, results: _Summaries
) -> None:
    context = zmq.Context()
    push, pull = context.socket(zmq.PUSH), context.socket(zmq.PULL)
    pull.bind(pong_address)
    push.connect(ping_address)
    payload = bytearray(64)
    rtts = [0] * samples
    clock = time.perf_counter_ns
    barrier.wait()
    for i in range(-samples // 10, samples):
        _SEQ.pack_into(payload, 0, i)
        start_ns = clock()
        push.send(payload)
        pull.recv()
        if i >= 0:
            rtts[i] = clock() - start_ns
    push.send(b"stop")
    pull.recv()
    results.put(latency_summary(rtts))
    push.close(linger=-1)
    pull.close()
    context.term()


# ---------------------------------------------------------------------------------------------
# the parent side


def _run_pair(
    producer: Callable[[*_Ps, Barrier], None],
    producer_args: tuple[*_Ps],
    consumer: Callable[[*_Cs, Barrier, Queue[_R]], None],
    consumer_args: tuple[*_Cs],
) -> _R:
    """Run two workers that meet at a 3-party barrier; return what the consumer reports.
    Raises RuntimeError (the workers killed) when one fails, or both overrun
    :data:`WORKER_DEADLINE_S`."""
    barrier = _ctx.Barrier(3)
    results: Queue[_R] = _ctx.Queue()
    procs = [
        _ctx.Process(target=producer, args=(*producer_args, barrier), daemon=True),
        _ctx.Process(target=consumer, args=(*consumer_args, barrier, results), daemon=True),
    ]
    for proc in procs:
        proc.start()
    join_s = 30.0
    try:
        barrier.wait(timeout=60)
        deadline = time.monotonic() + WORKER_DEADLINE_S
        while True:
            try:
                outcome = results.get(timeout=0.5)
                break
            except queue.Empty:
                failed = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if failed or time.monotonic() > deadline:
                    join_s = 1.0
                    states = ", ".join(
                        f"{role} {'running' if p.exitcode is None else f'exit {p.exitcode}'}"
                        for role, p in zip(("producer", "consumer"), procs, strict=True)
                    )
                    why = "failed" if failed else f"still running after {WORKER_DEADLINE_S:.0f} s"
                    raise RuntimeError(f"benchmark workers {why}: {states}") from None
    except threading.BrokenBarrierError as exc:
        join_s = 1.0
        raise RuntimeError("benchmark workers did not start") from exc
    finally:
        for proc in procs:
            proc.join(timeout=join_s)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return outcome


def _ring_file(directory: str, name: str) -> str:
    path = os.path.join(directory, name)
    MappedFile.create(path, RING_CAPACITY + TRAILER_LENGTH).close()
    return path


def _throughput(kind: str, directory: str, size: int, batch: int, count: int) -> float:
    """Records per second from producer to consumer for one transport and shape."""
    if kind == "ring":
        path = _ring_file(directory, f"ring-{size}-{batch}")
        elapsed_ns = _run_pair(
            _ring_producer, (path, size, batch, count), _ring_consumer, (path, count)
        )
        os.unlink(path)
    elif kind == "queue":
        q = _ctx.Queue()
        elapsed_ns = _run_pair(
            _queue_producer, (q, size, batch, count), _queue_consumer, (q, count)
        )
    else:
        address = f"ipc://{directory}/zmq-{size}-{batch}"
        received = _ctx.Event()
        elapsed_ns = _run_pair(
            _zmq_producer,
            (address, size, batch, count, received),
            _zmq_consumer,
            (address, count, batch, received),
        )
    return float(count / (elapsed_ns / 1e9))


def _ping_pong(kind: str, directory: str, samples: int) -> dict[str, float]:
    if kind == "ring":
        ping, pong = _ring_file(directory, "ping"), _ring_file(directory, "pong")
        summary = _run_pair(_ring_ponger, (ping, pong), _ring_pinger, (ping, pong, samples))
        os.unlink(ping)
        os.unlink(pong)
    elif kind == "queue":
        qs = (_ctx.Queue(), _ctx.Queue())
        summary = _run_pair(_queue_ponger, qs, _queue_pinger, (*qs, samples))
    else:
        addresses = (f"ipc://{directory}/zmq-ping", f"ipc://{directory}/zmq-pong")
        summary = _run_pair(_zmq_ponger, addresses, _zmq_pinger, (*addresses, samples))
    return dict(summary)


_NAMES = {
    "ring": "ringbuffer:one-to-one",
    "zmq": "baseline:pyzmq-ipc",
    "queue": "baseline:mp.Queue",
}
_BATCH_HOW = {"ring": "write_batch", "zmq": "send_multipart", "queue": "list per put"}


def run(quick: bool) -> Iterator[Result | Target]:
    scale, repeats = (1, 1) if quick else (10, 3)
    counts = {"ring": 200_000 * scale, "zmq": 100_000 * scale, "queue": 20_000 * scale}
    samples = {"ring": 10_000 * scale, "zmq": 5_000 * scale, "queue": 1_000 * scale}
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    directory = tempfile.mkdtemp(prefix="aeromq-bench-", dir=root)
    rates: dict[tuple[str, int, int], float] = {}
    failures: dict[str, list[str]] = {}  # case -> why its runs failed (the suite goes on)
    try:
        for size in (64, 1024):
            for batch in (1, BATCH):
                runs: dict[str, list[float]] = {kind: [] for kind in _NAMES}
                how = {
                    kind: "per call" if batch == 1 else f"batched x{batch} ({_BATCH_HOW[kind]})"
                    for kind in _NAMES
                }
                names = {kind: f"{_NAMES[kind]} {size}B {how[kind]}" for kind in _NAMES}
                for _ in range(repeats):  # interleaved, so passing load hits every transport
                    for kind in _NAMES:
                        count = counts[kind] // (4 if size > 64 else 1)
                        count -= count % BATCH
                        run_dir = tempfile.mkdtemp(dir=directory)  # no ipc:// path used twice
                        record_run(
                            runs[kind],
                            failures,
                            names[kind],
                            _throughput,
                            kind,
                            run_dir,
                            size,
                            batch,
                            count,
                        )
                for kind in _NAMES:
                    yield best_rate(names[kind], runs[kind], size, failures)
                    if runs[kind]:
                        rates[(kind, size, batch)] = max(runs[kind])
        for kind in ("ring", "zmq", "queue"):
            case = f"{_NAMES[kind]} ping-pong 64B RTT"
            summary = attempt(
                failures.setdefault(case, []), case, _ping_pong, kind, directory, samples[kind]
            )
            yield latency_result(case, summary, samples[kind], failures)
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    if ("ring", 64, BATCH) in rates:
        yield Target(
            "ring 64B batched across processes", rates[("ring", 64, BATCH)], 2_000_000, "msgs/s"
        )
    if ("ring", 64, 1) in rates:
        yield Target("ring 64B one record per call", rates[("ring", 64, 1)], 1_000_000, "msgs/s")
    for kind, goal in (("zmq", 1.5), ("queue", 10.0)):
        for batch, mode in ((1, "per call"), (BATCH, "batched")):
            if ("ring", 64, batch) not in rates or (kind, 64, batch) not in rates:
                continue  # a failed case, reported above
            ratio = rates[("ring", 64, batch)] / rates[(kind, 64, batch)]
            label = _NAMES[kind].removeprefix("baseline:")
            yield Target(f"ring / {label} 64B {mode}", ratio, goal, "x")
