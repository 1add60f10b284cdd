"""Where does an unpinned wakee run: its idle previous CPU or the waker's?

Usage: python wake4.py ROUNDS SPIN_US PREPIN
The waker (pinned to CPU 0) writes a byte to a pipe every 2 ms, then spins SPIN_US. The wakee
blocks in read(); with PREPIN=1 it first runs 50 rounds pinned to CPU 1, then is unpinned. It
reports on which CPU it woke and how late (monotonic ns in the byte stream).
"""

import ctypes
import os
import struct
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
rounds, spin_us, prepin = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    if prepin:
        os.sched_setaffinity(0, {1})
    cpus, lat = [], []
    for i in range(rounds + 50):
        if prepin and i == 50:
            os.sched_setaffinity(0, {0, 1})
        data = os.read(r, 8)
        now = time.monotonic_ns()
        if i >= 50:
            cpus.append(libc.sched_getcpu())
            lat.append((now - struct.unpack("q", data)[0]) / 1000)
    lat.sort()
    on0 = sum(1 for c in cpus if c == 0)
    print(
        f"prepin={int(prepin)} spin={spin_us}us: on waker's CPU0 {on0}/{len(cpus)}, "
        f"wake latency p50 {lat[len(lat) // 2]:.0f} us p90 {lat[int(len(lat) * 0.9)]:.0f} us"
    )
    os._exit(0)
os.close(r)
os.sched_setaffinity(0, {0})
time.sleep(0.2)
for _ in range(rounds + 50):
    t = time.monotonic_ns()
    os.write(w, struct.pack("q", t))
    end = t + spin_us * 1000
    while time.monotonic_ns() < end:
        pass
    time.sleep(0.002)
os.waitpid(pid, 0)
