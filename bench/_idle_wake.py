"""What one wake of a broker group member's driver thread costs when it finds nothing: a park
ended by a wake, one duty cycle of the conductor, receiver, hosted agents and sender with
nothing to do, and the park again (``python -m bench._idle_wake [leader] [--profile N]``).

A driver as a broker embeds it (``SHARED``, settled parks) with a follower's streams (a UDP
subscription on its own endpoint and an exclusive publication to it, so one image and one
publication) or, with ``leader``, a leader's (two of each); an agent hosted on its thread that
does nothing, like a replication agent not rung. The main thread wakes the driver
(``MediaDriver.wake_network``) every 0.5 ms, 2,000 times, and reads the driver thread's CPU
(``pthread_getcpuclockid``); the same run without wakes is taken off (its own parks). The
figure is the least of five, each after a run without wakes. ``--profile N`` profiles the
driver thread instead and prints the calls a wake (a count that does not depend on the load)
and its N entries of most own time. Not a suite: a probe for the duty cycle's idle Python
(``bench/results/2026-11-29e/duty.md``).
"""

from __future__ import annotations

import cProfile
import socket
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Final

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver import (
    MediaDriver,
    MediaDriverContext,
    ThreadingMode,
    deep_idle_unless_set,
)
from aeromq.transport.logbuffer import Header

WAKES: Final = 2_000
GAP_S: Final = 0.0005
REPEATS: Final = 5


class _Idle:
    """A hosted agent with nothing to do."""

    role_name = "idle"

    def on_start(self) -> None:
        return None

    def on_close(self) -> None:
        return None

    def do_work(self) -> int:
        return 0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _channel(port: int) -> str:
    return f"aeron:udp?endpoint=127.0.0.1:{port}|term-length=4m|mtu=8192"


def _streams(aeron: Aeron, streams: int) -> None:
    """``streams`` publication-subscription pairs, connected, a few messages through each."""
    subscriptions, publications = [], []
    for _ in range(streams):
        channel = _channel(_free_port())
        subscriptions.append(aeron.add_subscription(channel, 1001))
        publications.append(aeron.add_exclusive_publication(channel, 1001))
    deadline = time.monotonic() + 10
    while not all(publication.is_connected for publication in publications):
        if time.monotonic() > deadline:
            raise TimeoutError("the streams did not connect within 10 s")
        time.sleep(0.01)

    def ignore(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        return None

    for _ in range(50):
        for publication in publications:
            publication.offer(b"x" * 1000)
        time.sleep(0.002)
        for subscription in subscriptions:
            subscription.poll(ignore, 100)
    time.sleep(0.5)
    for subscription in subscriptions:
        subscription.poll(ignore, 100)


def _wakes(driver: MediaDriver, wake: bool) -> None:
    for _ in range(WAKES):
        if wake:
            driver.wake_network()
        time.sleep(GAP_S)


def main(argv: list[str]) -> None:
    """Print the cost of a wake that finds nothing (see module)."""
    profile_top = int(argv[argv.index("--profile") + 1]) if "--profile" in argv else 0
    profiles: list[tuple[str, cProfile.Profile]] = []
    if profile_top:

        def start(frame: FrameType, event: str, arg: object) -> None:
            profile = cProfile.Profile()
            profiles.append((threading.current_thread().name, profile))
            profile.enable()

        threading.setprofile(start)
    context = MediaDriverContext.from_env(
        term_buffer_sparse_file=True,
        threading_mode=ThreadingMode.SHARED,
        park_when_settled=True,
        park_until_due=True,
    )  # a group member's embedded driver (``broker/_embedded_driver.py``)
    driver = MediaDriver.launch_embedded(deep_idle_unless_set(context))
    try:
        with Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron:
            _streams(aeron, 2 if "leader" in argv else 1)
            driver.host_agent(_Idle(), lambda error: None, lambda: True)
            thread = next(t for t in threading.enumerate() if t.name.startswith("[driver-"))
            assert thread.ident is not None
            clock = time.pthread_getcpuclockid(thread.ident)
            if profile_top:
                _profiled(driver, profiles, thread.name, profile_top)
                return
            _timed(driver, lambda: time.clock_gettime_ns(clock))
    finally:
        driver.close()


def _timed(driver: MediaDriver, cpu_ns: Callable[[], int]) -> None:
    costs = []
    for _ in range(REPEATS):
        before = cpu_ns()
        _wakes(driver, False)
        idle = cpu_ns() - before
        before = cpu_ns()
        _wakes(driver, True)
        costs.append((cpu_ns() - before - idle) / WAKES / 1e3)
    costs.sort()
    print(f"a wake that finds nothing: {costs[0]:.1f} us of CPU (median {costs[2]:.1f})")


def _profiled(
    driver: MediaDriver, profiles: list[tuple[str, cProfile.Profile]], name: str, top: int
) -> None:
    profile = next(profile for thread, profile in profiles if thread == name)
    profile.snapshot_stats()
    before: dict[tuple[str, int, str], tuple[int, int, float, float, object]] = dict(profile.stats)
    _wakes(driver, True)
    profile.snapshot_stats()
    rows = []
    for func, entry in profile.stats.items():
        old = before.get(func, (0, 0, 0.0, 0.0, None))
        calls = entry[1] - old[1]
        if calls > 0:
            rows.append((entry[2] - old[2], calls, func))
    python = sum(calls for _, calls, func in rows if func[0] != "~")
    print(
        f"calls a wake: {sum(calls for _, calls, _ in rows) / WAKES:.1f} "
        f"({python / WAKES:.1f} of Python functions)"
    )
    for own_s, calls, func in sorted(rows, key=lambda row: -row[0])[:top]:
        where = func[2] if func[0] == "~" else f"{func[0].rsplit('/', 2)[-2:]}:{func[1]}({func[2]})"
        print(f"  {own_s / WAKES * 1e6:6.2f} us own  {calls / WAKES:5.2f} calls  {where}")


if __name__ == "__main__":
    main(sys.argv[1:])
