"""A pipe ping-pong between two processes: ``python pipe_rtt.py [CPU]``, the round trip's mean
over 20,000 exchanges (two wake-ups each); with CPU, both pinned there (no wake-up of another
vCPU)."""

from __future__ import annotations

import os
import sys
import time

EXCHANGES = 20_000


def main() -> None:
    if len(sys.argv) > 1:
        os.sched_setaffinity(0, {int(sys.argv[1])})
    to_child, from_parent = os.pipe()
    from_child, to_parent = os.pipe()
    pid = os.fork()
    if pid == 0:
        for _ in range(EXCHANGES):
            os.read(to_child, 1)
            os.write(to_parent, b"x")
        os._exit(0)
    start = time.perf_counter()
    for _ in range(EXCHANGES):
        os.write(from_parent, b"x")
        os.read(from_child, 1)
    elapsed_s = time.perf_counter() - start
    os.waitpid(pid, 0)
    print(f"pipe ping-pong round trip {elapsed_s / EXCHANGES * 1e6:.1f} us")


if __name__ == "__main__":
    main()
