"""Aeron IPC across processes: a media driver, a publisher and a subscriber, each its own process.

One driver process (``python -m aeromq driver``, 8 MiB IPC terms so the 4 MiB window matches
the ring's capacity, backoff idle strategy) serves the whole run. Each case starts a publisher
and a subscriber (``spawn``) on a stream of its own; they meet at a barrier once the publication
is connected, and the rate is messages received / time from the barrier to the last message at
the subscriber. Every publisher stamps a sequence number into each 64 B or 1 KiB message and
every subscriber's handler checks it in place (the same work per message as the ring and pyzmq
workers of :mod:`bench.suites.ringbuffer`, which run here side by side, unchanged).

Shapes (exclusive publications, as the one-to-one ring has one writer):

- ``offer / poll(1)``: one ``offer`` per message; the subscriber polls one fragment per call;
- ``offer / poll(256)``: one ``offer`` per message, polls with a fragment limit of 256;
- ``try_claim / poll(256)``: claim, stamp in place, commit (zero copy);
- ``offer_batch x64 / poll(256)``: 64 messages per ``offer_batch`` (one reservation, one copy).

Ping-pong: 64 B over two streams (ping and pong), the pinger and the ponger spinning on their
subscriptions; p50 / p99 / p99.9 of the round trip, beside the ring's and pyzmq's.

``baseline:pyaeron`` rows: the same cases (but ``offer_batch``, which pyaeron lacks) and the
ping-pong on the real Aeron C driver and client, same layout, with ``aeromq_over_pyaeron`` in the
JSON (:mod:`bench._pyaeron`).

Publishers and subscribers yield the CPU (``sched_yield``) on back pressure or an empty poll.
On this 2-core machine the driver shares the cores with them; it has little to do (moving
pub-lmt), and parks when idle. The full run repeats each throughput case three times,
interleaved with the baselines, and reports the best (every run is in the JSON); ``--quick``
runs each once with fewer messages.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from typing import TYPE_CHECKING

from aeromq.transport.client import Aeron, AeronContext, ConcurrentPublication, ExclusivePublication
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import BufferClaim, Header
from bench._harness import (
    Result,
    Target,
    attempt,
    best_rate,
    latency_result,
    latency_summary,
    record_run,
)
from bench._pyaeron import ipc_baselines
from bench.suites.ringbuffer import BATCH, _ping_pong, _run_pair, _throughput

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

TERM_LENGTH = 8 << 20
FRAGMENT_LIMIT = 256
_SEQ = struct.Struct("<q")
_STOP = -(1 << 62)  # never a sequence number (the warm-up ones are negative)

SHAPES = ("offer/poll1", "offer/poll", "try_claim/poll", "offer_batch/poll")
_SHAPE_NAMES = {
    "offer/poll1": "offer / poll(1)",
    "offer/poll": f"offer / poll({FRAGMENT_LIMIT})",
    "try_claim/poll": f"try_claim / poll({FRAGMENT_LIMIT})",
    "offer_batch/poll": f"offer_batch x{BATCH} / poll({FRAGMENT_LIMIT})",
}


# ---------------------------------------------------------------------------------------------
# workers (top level: spawn pickles them by name)


def _connect(aeron_dir: str) -> Aeron:
    """A client whose conductor thread sleeps 16 ms when idle (the default): it takes the GIL
    from the spinning main thread once per wake-up."""
    return Aeron.connect(AeronContext(aeron_dir=aeron_dir, driver_timeout_ms=10_000))


def _await_connected(publication: ConcurrentPublication | ExclusivePublication) -> None:
    deadline = time.monotonic() + 30
    while not publication.is_connected:
        if time.monotonic() > deadline:
            raise RuntimeError("publication never connected")
        time.sleep(0.001)


def _ipc_publisher(
    aeron_dir: str, stream_id: int, size: int, shape: str, count: int, barrier: Barrier
) -> None:
    with _connect(aeron_dir) as aeron:
        publication = aeron.add_exclusive_publication("aeron:ipc", stream_id)
        _await_connected(publication)
        pack, yield_cpu = _SEQ.pack_into, os.sched_yield
        barrier.wait()
        if shape == "offer_batch/poll":
            records = [bytearray(size) for _ in range(BATCH)]
            offer_batch = publication.offer_batch
            for base in range(0, count, BATCH):
                for j in range(BATCH):
                    pack(records[j], 0, base + j)
                done = 0
                while done < BATCH:
                    taken = offer_batch(records, done)
                    if taken > 0:
                        done += taken
                    else:
                        yield_cpu()
        elif shape == "try_claim/poll":
            claim = BufferClaim()
            try_claim = publication.try_claim
            for seq in range(count):
                while try_claim(size, claim) < 0:
                    yield_cpu()
                claim.buffer.put_int64(claim.offset, seq)
                claim.commit()
        else:
            payload = bytearray(size)
            offer = publication.offer
            for seq in range(count):
                pack(payload, 0, seq)
                while offer(payload) < 0:
                    yield_cpu()
        # Closing is safe: the driver keeps the log until the subscriber has drained it.
        deadline = time.monotonic() + 10
        while publication.position_limit < publication.position and time.monotonic() < deadline:
            time.sleep(0.001)


def _ipc_subscriber(
    aeron_dir: str, stream_id: int, shape: str, count: int, barrier: Barrier, results: Queue[int]
) -> None:
    with _connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", stream_id)
        expected = 0

        def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            nonlocal expected
            if buffer.get_int64(offset) != expected:
                raise AssertionError(f"sequence {buffer.get_int64(offset)} != {expected}")
            expected += 1

        limit = 1 if shape == "offer/poll1" else FRAGMENT_LIMIT
        poll, yield_cpu = subscription.poll, os.sched_yield
        barrier.wait()
        start_ns = time.perf_counter_ns()
        received = 0
        while received < count:
            n = poll(on_fragment, limit)
            if n == 0:
                yield_cpu()
            received += n
        results.put(time.perf_counter_ns() - start_ns)


def _ipc_ponger(aeron_dir: str, ping_stream: int, pong_stream: int, barrier: Barrier) -> None:
    with _connect(aeron_dir) as aeron:
        ping = aeron.add_subscription("aeron:ipc", ping_stream)
        pong = aeron.add_exclusive_publication("aeron:ipc", pong_stream)
        _await_connected(pong)
        offer = pong.offer
        running = True

        def echo(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            nonlocal running
            if buffer.get_int64(offset) == _STOP:
                running = False
            while offer(buffer, offset, length) < 0:
                pass

        poll = ping.poll
        barrier.wait()
        while running:
            poll(echo, 1)


def _ipc_pinger(
    aeron_dir: str,
    ping_stream: int,
    pong_stream: int,
    samples: int,
    barrier: Barrier,
    results: Queue[dict[str, float]],
) -> None:
    with _connect(aeron_dir) as aeron:
        pong = aeron.add_subscription("aeron:ipc", pong_stream)
        ping = aeron.add_exclusive_publication("aeron:ipc", ping_stream)
        _await_connected(ping)
        payload = bytearray(64)
        offer, poll, clock, pack = ping.offer, pong.poll, time.perf_counter_ns, _SEQ.pack_into

        def on_pong(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            pass

        rtts = [0] * samples
        barrier.wait()
        for i in range(-samples // 10, samples):  # the first tenth warms up
            pack(payload, 0, i)
            start_ns = clock()
            while offer(payload) < 0:
                pass
            while poll(on_pong, 1) == 0:
                pass
            if i >= 0:
                rtts[i] = clock() - start_ns
        pack(payload, 0, _STOP)
        while offer(payload) < 0:
            pass
        while poll(on_pong, 1) == 0:
            pass
        results.put(latency_summary(rtts))


# ---------------------------------------------------------------------------------------------
# the parent side


class _Driver:
    """The media driver process of the run."""

    def __init__(self, directory: str) -> None:
        self.aeron_dir = os.path.join(directory, "aeron")
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "aeromq",
                "driver",
                "--dir",
                self.aeron_dir,
                "--ipc-term-length",
                str(TERM_LENGTH),
                "--idle-strategy",
                "backoff",
                "--publication-linger-timeout",
                "100ms",
                "--dir-delete-on-shutdown",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith("media driver ready"):
            self.close()
            raise RuntimeError(f"the media driver did not start: {line!r}")
        self._stream_id = 1000

    def next_stream_id(self) -> int:
        self._stream_id += 1
        return self._stream_id

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
        if self._process.stdout is not None:
            self._process.stdout.close()


def _ipc_throughput(driver: _Driver, size: int, shape: str, count: int) -> float:
    stream_id = driver.next_stream_id()
    elapsed_ns = _run_pair(
        _ipc_publisher,
        (driver.aeron_dir, stream_id, size, shape, count),
        _ipc_subscriber,
        (driver.aeron_dir, stream_id, shape, count),
    )
    return float(count / (elapsed_ns / 1e9))


def _ipc_ping_pong(driver: _Driver, samples: int) -> dict[str, float]:
    ping, pong = driver.next_stream_id(), driver.next_stream_id()
    summary = _run_pair(
        _ipc_ponger,
        (driver.aeron_dir, ping, pong),
        _ipc_pinger,
        (driver.aeron_dir, ping, pong, samples),
    )
    return dict(summary)


def run(quick: bool) -> Iterator[Result | Target]:
    scale, repeats = (1, 1) if quick else (5, 3)
    ipc_count = ring_count = 100_000 * scale
    zmq_count = 50_000 * scale
    samples = {"ipc": 5_000 * scale, "ring": 5_000 * scale, "zmq": 2_500 * scale}
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    directory = tempfile.mkdtemp(prefix="aeromq-bench-ipc-", dir=root)
    rates: dict[tuple[str, int], float] = {}
    failures: dict[str, list[str]] = {}  # case -> why its runs failed (the case goes on)
    ipc_rtt: dict[str, float] | None = None
    driver = _Driver(directory)
    try:
        for size in (64, 1024):
            divisor = 4 if size > 64 else 1
            runs: dict[str, list[float]] = {shape: [] for shape in SHAPES}
            baseline_runs: dict[tuple[str, int], list[float]] = {
                (kind, batch): [] for kind in ("ring", "zmq") for batch in (1, BATCH)
            }
            names = {shape: f"ipc {size}B {_SHAPE_NAMES[shape]}" for shape in SHAPES}
            for kind, batch in baseline_runs:
                name = "baseline:ringbuffer one-to-one" if kind == "ring" else "baseline:pyzmq-ipc"
                how = "per call" if batch == 1 else f"batched x{batch}"
                names[f"{kind}/{batch}"] = f"{name} {size}B {how}"
            for _ in range(repeats):  # interleaved, so passing load hits every transport
                for shape in SHAPES:
                    count = ipc_count // divisor
                    count -= count % BATCH
                    record_run(
                        runs[shape],
                        failures,
                        names[shape],
                        _ipc_throughput,
                        driver,
                        size,
                        shape,
                        count,
                    )
                for kind, batch in baseline_runs:
                    count = (ring_count if kind == "ring" else zmq_count) // divisor
                    count -= count % BATCH
                    run_dir = tempfile.mkdtemp(dir=directory)  # no ipc:// path used twice
                    record_run(
                        baseline_runs[(kind, batch)],
                        failures,
                        names[f"{kind}/{batch}"],
                        _throughput,
                        kind,
                        run_dir,
                        size,
                        batch,
                        count,
                    )
            for shape in SHAPES:
                yield best_rate(names[shape], runs[shape], size, failures)
                if runs[shape]:
                    rates[(shape, size)] = max(runs[shape])
            for (kind, batch), kind_runs in baseline_runs.items():
                yield best_rate(names[f"{kind}/{batch}"], kind_runs, size, failures)
                if kind_runs:
                    rates[(f"{kind}/{batch}", size)] = max(kind_runs)
        ipc_rtt = attempt(
            failures.setdefault("ipc ping-pong 64B RTT", []),
            "ipc ping-pong 64B RTT",
            _ipc_ping_pong,
            driver,
            samples["ipc"],
        )
        yield latency_result("ipc ping-pong 64B RTT", ipc_rtt, samples["ipc"], failures)
        for kind, name in (("ring", "baseline:ringbuffer"), ("zmq", "baseline:pyzmq-ipc")):
            case = f"{name} ping-pong 64B RTT"
            summary = attempt(
                failures.setdefault(case, []), case, _ping_pong, kind, directory, samples[kind]
            )
            yield latency_result(case, summary, samples[kind], failures)
    finally:
        driver.close()
        shutil.rmtree(directory, ignore_errors=True)
    yield from ipc_baselines(  # the real Aeron C driver and client, same layout (bench/_pyaeron.py)
        rates,
        ipc_rtt["p50_us"] if ipc_rtt else None,
        term_length=TERM_LENGTH,
        count_64=ipc_count,
        samples=samples["ipc"],
        repeats=repeats,
    )

    if ("offer_batch/poll", 64) in rates:
        yield Target(
            "ipc 64B batched (offer_batch)", rates[("offer_batch/poll", 64)], 2_000_000, "msgs/s"
        )
    if ("offer/poll1", 64) in rates:
        yield Target(
            "ipc 64B per message (offer / poll(1))", rates[("offer/poll1", 64)], 600_000, "msgs/s"
        )
    if ipc_rtt is not None:
        yield Target("ipc ping-pong 64B p50", ipc_rtt["p50_us"], 5.0, "us", lower_is_better=True)
