"""A pyaeron subscriber for a benchmark case, the twin of the aeromq suites' subscriber workers.

``pyaeron_subscriber.py DIR CHANNEL STREAM FRAGMENT_LIMIT COUNT``: emits ``ready`` once
subscribed, waits for ``go``, then polls (raw fragments, ``FRAGMENT_LIMIT`` per call, yielding the
CPU on an empty poll) until ``COUNT`` messages arrived, checking each one's sequence number in
place, and emits ``done`` with the nanoseconds from ``go`` to the last message.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from pyaeron_common import SEQ, emit, pyaeron, wait_for  # type: ignore[import-not-found]  # a sibling script, run from bench/peers

if TYPE_CHECKING:
    from typing_extensions import Buffer

_DEADLINE_S = 240.0


def main() -> None:
    aeron_dir, channel = sys.argv[1], sys.argv[2]
    stream_id, limit, count = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    aeron = pyaeron.Aeron(dir=aeron_dir)
    subscription = aeron.add_subscription(channel, stream_id)
    emit("ready")
    expected = 0
    unpack = SEQ.unpack_from

    def on_fragment(buffer: Buffer, header: object) -> None:
        nonlocal expected
        if unpack(buffer)[0] != expected:
            raise AssertionError(f"sequence {unpack(buffer)[0]} != {expected}")
        expected += 1

    poll, yield_cpu = subscription.poll, os.sched_yield
    wait_for("go")
    start_ns = time.perf_counter_ns()
    deadline = time.monotonic() + _DEADLINE_S
    received = 0
    while received < count and time.monotonic() < deadline:
        n = poll(on_fragment, limit, assemble=False)
        if n == 0:
            yield_cpu()
        received += n
    elapsed_ns = time.perf_counter_ns() - start_ns
    if expected != count:
        emit("error", message=f"received {expected} of {count} messages")
        sys.exit(1)
    emit("done", elapsed_ns=elapsed_ns)
    aeron.close()


if __name__ == "__main__":
    main()
