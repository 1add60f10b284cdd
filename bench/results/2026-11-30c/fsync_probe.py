"""What an ``fdatasync`` of 46 KiB costs in a file made by ``posix_fallocate`` (unwritten
extents, as a store segment is made) against one written through with zeros first, with one
process and with three at once (a group's three members): 200 rounds each, 1 ms apart; prints
each process's p50 and p90 in us. Run: ``python bench/results/2026-11-30c/fsync_probe.py``
(files in ``/tmp``, removed after)."""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier

FILE_BYTES = 32 << 20
WRITE_BYTES = 46 * 1024
ROUNDS = 200


def _fsyncs(written_through: bool, out: Queue[tuple[int, int]], start: Barrier) -> None:
    fd, path = tempfile.mkstemp(dir="/tmp")
    try:
        os.posix_fallocate(fd, 0, FILE_BYTES)
        if written_through:
            zeros = bytes(1 << 20)
            for at in range(0, FILE_BYTES, len(zeros)):
                os.pwrite(fd, zeros, at)
        os.fsync(fd)
        data = b"x" * WRITE_BYTES
        took_s: list[float] = []
        start.wait()
        for i in range(ROUNDS):
            os.pwrite(fd, data, i * WRITE_BYTES)
            began = time.perf_counter()
            os.fdatasync(fd)
            took_s.append(time.perf_counter() - began)
            time.sleep(0.001)
    finally:
        os.close(fd)
        os.unlink(path)
    took_s.sort()
    out.put((int(took_s[ROUNDS // 2] * 1e6), int(took_s[ROUNDS * 9 // 10] * 1e6)))


def main() -> None:
    for processes in (1, 3):
        for written_through in (False, True):
            out: Queue[tuple[int, int]] = mp.Queue()
            start = mp.Barrier(processes)
            workers = [
                mp.Process(target=_fsyncs, args=(written_through, out, start))
                for _ in range(processes)
            ]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            figures = [out.get() for _ in workers]
            print(f"processes {processes} written through {written_through}: {figures}")


if __name__ == "__main__":
    main()
