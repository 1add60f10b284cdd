"""The timing side of a pyaeron ping-pong: ``pyaeron_ping.py DIR PING_CHANNEL PONG_CHANNEL STREAM
SAMPLES IDLE``. Sends a 64-byte ping on ``STREAM`` and waits for its echo on ``STREAM + 1``, one at a
time, a tenth more than ``SAMPLES`` (the first tenth warms up), and emits ``done`` with every round
trip in nanoseconds; ``IDLE`` as for the pong side (the twin of the aeromq suites' pinger)."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from pyaeron_common import SEQ, STOP, await_connected, emit, pyaeron, wait_for  # type: ignore[import-not-found]  # a sibling script, run from bench/peers

if TYPE_CHECKING:
    from typing_extensions import Buffer


def main() -> None:
    aeron_dir, ping_channel, pong_channel = sys.argv[1], sys.argv[2], sys.argv[3]
    stream_id, samples, spin = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "spin"
    aeron = pyaeron.Aeron(dir=aeron_dir)
    pong = aeron.add_subscription(pong_channel, stream_id + 1)
    ping = aeron.add_exclusive_publication(ping_channel, stream_id)
    await_connected(ping)
    deadline = time.monotonic() + 30
    while pong.image_count == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    emit("ready")
    payload = bytearray(64)
    offer, poll, clock, pack = ping.offer, pong.poll, time.perf_counter_ns, SEQ.pack_into
    yield_cpu = _pass if spin else os.sched_yield

    def on_pong(buffer: Buffer, header: object) -> None:
        pass

    rtts = [0] * samples
    wait_for("go")
    for i in range(-samples // 10, samples):
        pack(payload, 0, i)
        start_ns = clock()
        while not offer(payload):
            yield_cpu()
        while poll(on_pong, 1, assemble=False) == 0:
            yield_cpu()
        if i >= 0:
            rtts[i] = clock() - start_ns
    pack(payload, 0, STOP)
    while not offer(payload):
        yield_cpu()
    emit("done", rtts_ns=rtts)
    aeron.close()


def _pass() -> None:
    pass


if __name__ == "__main__":
    main()
