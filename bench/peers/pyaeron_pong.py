"""The echoing side of a pyaeron ping-pong: ``pyaeron_pong.py DIR PING_CHANNEL PONG_CHANNEL
STREAM IDLE``. Subscribes to pings on ``STREAM``, answers each on ``STREAM + 1`` (exclusive
publication), spinning when idle (``IDLE`` ``yield``: with ``sched_yield``; ``spin``: bare), until the stop ping (the twin of the aeromq
suites' ponger)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from pyaeron_common import SEQ, STOP, await_connected, emit, pyaeron, wait_for  # type: ignore[import-not-found]  # a sibling script, run from bench/peers

if TYPE_CHECKING:
    from typing_extensions import Buffer


def main() -> None:
    aeron_dir, ping_channel, pong_channel = sys.argv[1], sys.argv[2], sys.argv[3]
    stream_id, spin = int(sys.argv[4]), sys.argv[5] == "spin"
    aeron = pyaeron.Aeron(dir=aeron_dir)
    ping = aeron.add_subscription(ping_channel, stream_id)
    pong = aeron.add_exclusive_publication(pong_channel, stream_id + 1)
    await_connected(pong)
    emit("ready")
    offer, unpack = pong.offer, SEQ.unpack_from
    yield_cpu = _pass if spin else os.sched_yield
    running = True

    def echo(buffer: Buffer, header: object) -> None:
        nonlocal running
        if unpack(buffer)[0] == STOP:
            running = False
        while not offer(buffer):
            yield_cpu()

    poll = ping.poll
    wait_for("go")
    while running:
        if poll(echo, 1, assemble=False) == 0:
            yield_cpu()
    emit("done")
    aeron.close()


def _pass() -> None:
    pass


if __name__ == "__main__":
    main()
