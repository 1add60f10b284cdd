"""Aeron UDP over loopback: two media drivers, a publisher and a subscriber, each its own process.

The sending driver and the receiving driver each run in a process of their own (SHARED
threading mode: conductor, sender and receiver on one thread; 4 MiB terms; Aeron's default
socket buffers and receiver window, 128 KiB), as two hosts would; the publisher is a client of
the first, the subscriber of the second. Each case starts a publisher and a subscriber
(``spawn``) on a stream of its own; they meet at a barrier once the publication is connected,
and the rate is messages received / time from the barrier to the last message at the
subscriber, which checks every message's sequence number in place (so "everything delivered"
is checked, not assumed).

Shapes: ``offer / poll(256)`` (one offer per message) and ``offer_batch x64 / poll(256)``, at
64 B and 1 KiB; the same shapes over ``aeron:ipc`` on the sending driver run beside them (IPC
is the ceiling: no sender, no receiver, no sockets). Loss: the 64 B cases again with both
drivers dropping 1 % of DATA frames and 1 % of NAKs
(:class:`~transport.testing.loss_generator.LossGenerator`); the target asks that everything
still arrives at no less than half the lossless rate. Ping-pong: 64 B round trips, UDP (through
both drivers each way) beside IPC, and again with the drivers yielding the CPU when idle
instead of backing off to a park (the park, about 60 us to 1 ms in Python, dominates a round
trip that crosses two idle drivers four times).

``baseline:pyaeron`` rows: ``offer / poll(256)`` at both sizes and the UDP ping-pong between two
real Aeron C drivers with pyaeron clients, same layout, with ``aeromq_over_pyaeron`` in the JSON
(:mod:`bench._pyaeron`).

The full run repeats each throughput case three times, interleaved, and reports the best (all
runs are in the JSON); ``--quick`` runs each once with fewer messages.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import tempfile
import time
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier, Event
from typing import TYPE_CHECKING

from aeromq.transport.client import Aeron, AeronContext, ConcurrentPublication, ExclusivePublication
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header
from bench._harness import (
    Result,
    Target,
    attempt,
    best_rate,
    figure,
    generated_rows,
    latency_result,
    latency_summary,
    ratio_of,
    record_run,
)
from bench._pyaeron import udp_baselines
from bench.suites.ringbuffer import BATCH, _ctx, _run_pair

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

TERM_LENGTH = 4 << 20
FRAGMENT_LIMIT = 256
LOSS_RATE = 0.01
SHAPES = ("offer", "offer_batch")
_SHAPE_NAMES = {
    "offer": f"offer / poll({FRAGMENT_LIMIT})",
    "offer_batch": f"offer_batch x{BATCH} / poll({FRAGMENT_LIMIT})",
}
_SEQ = struct.Struct("<q")
_STOP = -(2**62)  # not a sequence number: warm-up pings count up from below zero
_MS = 1_000_000


# ---------------------------------------------------------------------------------------------
# workers (top level: spawn pickles them by name)


def _driver(aeron_dir: str, loss_rate: float, idle: str, ready: Event, stop: Event) -> None:
    from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
    from aeromq.transport.driver.udp.udp_settings import UdpSettings
    from aeromq.transport.testing.loss_generator import LossGenerator

    loss = (
        LossGenerator(data_loss_rate=loss_rate, nak_loss_rate=loss_rate, seed=11)
        if loss_rate
        else None
    )
    context = MediaDriverContext(
        aeron_dir=aeron_dir,
        term_buffer_length=TERM_LENGTH,
        ipc_term_buffer_length=TERM_LENGTH,
        threading_mode=ThreadingMode.SHARED,
        shared_idle_strategy=idle,
        publication_linger_timeout_ns=100 * _MS,
        dir_delete_on_start=True,
        dir_delete_on_shutdown=True,
        udp=UdpSettings(loss_generator=loss),
    )
    with MediaDriver.launch(context):
        ready.set()
        stop.wait()


def _connect(aeron_dir: str) -> Aeron:
    return Aeron.connect(
        AeronContext(aeron_dir=aeron_dir, driver_timeout_ms=10_000, idle_sleep_duration_ns=_MS)
    )


def _await_connected(publication: ConcurrentPublication | ExclusivePublication) -> None:
    deadline = time.monotonic() + 30
    while not publication.is_connected:
        if time.monotonic() > deadline:
            raise RuntimeError("publication never connected")
        time.sleep(0.001)


def _publisher(
    aeron_dir: str,
    channel: str,
    stream_id: int,
    size: int,
    shape: str,
    count: int,
    barrier: Barrier,
) -> None:
    with _connect(aeron_dir) as aeron:
        publication = aeron.add_exclusive_publication(channel, stream_id)
        _await_connected(publication)
        pack, yield_cpu = _SEQ.pack_into, os.sched_yield
        barrier.wait()
        if shape == "offer_batch":
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
        else:
            payload = bytearray(size)
            offer = publication.offer
            for seq in range(count):
                pack(payload, 0, seq)
                while offer(payload) < 0:
                    yield_cpu()
        deadline = time.monotonic() + 60
        while publication.position_limit < publication.position + 64 * 1024:
            if time.monotonic() > deadline:
                break
            time.sleep(0.001)  # the subscriber reads the rest before the stream ends


def _subscriber(
    aeron_dir: str,
    channel: str,
    stream_id: int,
    count: int,
    barrier: Barrier,
    results: Queue[int],
) -> None:
    with _connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription(channel, stream_id)
        expected = 0

        def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            nonlocal expected
            if buffer.get_int64(offset) != expected:
                raise AssertionError(f"sequence {buffer.get_int64(offset)} != {expected}")
            expected += 1

        poll, yield_cpu = subscription.poll, os.sched_yield
        barrier.wait()
        start_ns = time.perf_counter_ns()
        received = 0
        deadline = time.monotonic() + 240
        while received < count and time.monotonic() < deadline:
            n = poll(on_fragment, FRAGMENT_LIMIT)
            if n == 0:
                yield_cpu()
            received += n
        if expected != count:
            raise AssertionError(f"received {expected} of {count} messages")
        results.put(time.perf_counter_ns() - start_ns)


def _ponger(
    aeron_dir: str, ping_channel: str, pong_channel: str, stream_id: int, barrier: Barrier
) -> None:
    with _connect(aeron_dir) as aeron:
        ping = aeron.add_subscription(ping_channel, stream_id)
        pong = aeron.add_exclusive_publication(pong_channel, stream_id + 1)
        _await_connected(pong)
        offer = pong.offer
        running = True

        def echo(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
            nonlocal running
            if buffer.get_int64(offset) == _STOP:
                running = False
            while offer(buffer, offset, length) < 0:
                os.sched_yield()

        poll = ping.poll
        barrier.wait()
        while running:
            if poll(echo, 1) == 0:
                os.sched_yield()


def _pinger(
    aeron_dir: str,
    ping_channel: str,
    pong_channel: str,
    stream_id: int,
    samples: int,
    barrier: Barrier,
    results: Queue[dict[str, float]],
) -> None:
    with _connect(aeron_dir) as aeron:
        pong = aeron.add_subscription(pong_channel, stream_id + 1)
        ping = aeron.add_exclusive_publication(ping_channel, stream_id)
        _await_connected(ping)
        deadline = time.monotonic() + 30
        while not pong.images and time.monotonic() < deadline:
            time.sleep(0.001)
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
                os.sched_yield()
            while poll(on_pong, 1) == 0:
                os.sched_yield()
            if i >= 0:
                rtts[i] = clock() - start_ns
        pack(payload, 0, _STOP)
        while offer(payload) < 0:
            os.sched_yield()
        results.put(latency_summary(rtts))


# ---------------------------------------------------------------------------------------------
# the parent side


class _Drivers:
    """A sending and a receiving driver process (lossy or not) for the run."""

    def __init__(self, directory: str, loss_rate: float = 0.0, idle: str = "backoff") -> None:
        self.tx_dir = os.path.join(directory, "tx")
        self.rx_dir = os.path.join(directory, "rx")
        self._stop = _ctx.Event()
        self._processes = []
        for aeron_dir in (self.tx_dir, self.rx_dir):
            ready = _ctx.Event()
            process = _ctx.Process(
                target=_driver, args=(aeron_dir, loss_rate, idle, ready, self._stop), daemon=True
            )
            process.start()
            self._processes.append(process)
            if not ready.wait(30):
                self.close()
                raise RuntimeError("a media driver did not start")
        self._stream_id = 1000

    def next_stream_id(self) -> int:
        self._stream_id += 2
        return self._stream_id

    def close(self) -> None:
        self._stop.set()
        for process in self._processes:
            process.join(20)
            if process.is_alive():
                process.kill()
                process.join(5)


def _udp_channel() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return f"aeron:udp?endpoint=127.0.0.1:{probe.getsockname()[1]}"


def _throughput(drivers: _Drivers, media: str, size: int, shape: str, count: int) -> float:
    stream_id = drivers.next_stream_id()
    if media == "ipc":
        channel, subscriber_dir = "aeron:ipc", drivers.tx_dir
    else:
        channel, subscriber_dir = _udp_channel(), drivers.rx_dir
    elapsed_ns = _run_pair(
        _publisher,
        (drivers.tx_dir, channel, stream_id, size, shape, count),
        _subscriber,
        (subscriber_dir, channel, stream_id, count),
    )
    return float(count / (elapsed_ns / 1e9))


def _ping_pong(drivers: _Drivers, media: str, samples: int) -> dict[str, float]:
    stream_id = drivers.next_stream_id()
    if media == "ipc":
        ping = pong = "aeron:ipc"
        ponger_dir = drivers.tx_dir
    else:
        ping, pong = _udp_channel(), _udp_channel()
        ponger_dir = drivers.rx_dir
    summary = _run_pair(
        _ponger,
        (ponger_dir, ping, pong, stream_id),
        _pinger,
        (drivers.tx_dir, ping, pong, stream_id, samples),
    )
    return dict(summary)


def _rate_name(media: str, size: int, shape: str) -> str:
    name = f"udp {size}B" if media == "udp" else f"baseline:ipc {size}B"
    return f"{name} {_SHAPE_NAMES[shape]}"


def run(quick: bool) -> Iterator[Result | Target]:
    """Every run of a case bounded in time (:func:`bench._harness.record_run`): one that fails
    is reported and the suite goes on."""
    scale, repeats = (1, 1) if quick else (3, 3)
    count_64 = 200_000 * scale
    count_1k = 40_000 * scale
    samples = 2_000 * scale
    limit_s = 60.0 if quick else 300.0
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    directory = tempfile.mkdtemp(prefix="aeromq-bench-udp-", dir=root)
    rows: dict[str, Result] = {}
    failures: dict[str, list[str]] = {}  # case -> why its runs failed (the suite goes on)

    def keep(row: Result) -> Result:
        rows[row.name] = row
        return row

    def rtt(name: str, drivers: _Drivers, media: str) -> Result:
        args = (drivers, media, samples)
        summary = attempt(failures.setdefault(name, []), name, _ping_pong, *args, timeout_s=limit_s)
        return latency_result(name, summary, samples, failures)

    try:
        drivers = _Drivers(os.path.join(directory, "clean"))
        try:
            for size, count in ((64, count_64), (1024, count_1k)):
                runs: dict[tuple[str, str], list[float]] = {
                    (media, shape): [] for media in ("udp", "ipc") for shape in SHAPES
                }
                for _ in range(repeats):
                    for media, shape in runs:
                        record_run(
                            runs[(media, shape)],
                            failures,
                            _rate_name(media, size, shape),
                            _throughput,
                            drivers,
                            media,
                            size,
                            shape,
                            count - count % BATCH,
                            timeout_s=limit_s,
                        )
                for (media, shape), media_runs in runs.items():
                    yield keep(
                        best_rate(_rate_name(media, size, shape), media_runs, size, failures)
                    )
            for media in ("udp", "ipc"):
                name = "udp" if media == "udp" else "baseline:ipc"
                yield keep(rtt(f"{name} ping-pong 64B RTT", drivers, media))
        finally:
            drivers.close()
        yielding = _Drivers(os.path.join(directory, "yield"), idle="yield")
        try:
            yield keep(rtt("udp ping-pong 64B RTT, drivers yielding when idle", yielding, "udp"))
        finally:
            yielding.close()
        lossy = _Drivers(os.path.join(directory, "lossy"), LOSS_RATE)
        try:
            for shape in SHAPES:
                name = f"udp 64B {_SHAPE_NAMES[shape]} at {LOSS_RATE:.0%} loss"
                loss_runs: list[float] = []
                for _ in range(repeats):
                    record_run(
                        loss_runs,
                        failures,
                        name,
                        _throughput,
                        lossy,
                        "udp",
                        64,
                        shape,
                        count_64 - count_64 % BATCH,
                        timeout_s=limit_s,
                    )
                row = best_rate(name, loss_runs, 64, failures)
                lossless = figure(rows, _rate_name("udp", 64, shape))
                if row.msgs_per_s is not None and lossless:
                    row.extra["of_lossless"] = round(row.msgs_per_s / lossless, 3)
                yield keep(row)
        finally:
            lossy.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    udp_rates = {size: figure(rows, _rate_name("udp", size, "offer")) for size in (64, 1024)}
    yield from generated_rows(
        "baseline:pyaeron udp",
        udp_baselines(  # the real Aeron C drivers and clients, same layout (bench/_pyaeron.py)
            {size: rate for size, rate in udp_rates.items() if rate is not None},
            figure(rows, "udp ping-pong 64B RTT", "p50_us"),
            term_length=TERM_LENGTH,
            counts={64: count_64, 1024: count_1k},
            samples=samples,
            repeats=repeats,
        ),
        timeout_s=limit_s * 2,
    )

    for shape, label in (("offer", "offer / poll"), ("offer_batch", "offer_batch / poll")):
        rate = figure(rows, _rate_name("udp", 64, shape))
        yield Target(f"udp 64B {label}", rate, 300_000, "msgs/s")
    for shape in SHAPES:
        yield Target(
            f"udp 64B {shape} at 1% loss, share of lossless",
            ratio_of(
                figure(rows, f"udp 64B {_SHAPE_NAMES[shape]} at {LOSS_RATE:.0%} loss"),
                figure(rows, _rate_name("udp", 64, shape)),
            ),
            0.5,
            "ratio",
        )
