"""An idle thread sleeps until its next due time or a ring: a backoff parks until the time its
owner gives (``idle_for``) once it parks its longest; a doorbell strategy whose work all rings
parks until ``rung_park_ns``, but for a while after ``wake_for_unrung``; a driver parked until
its conductor's timer (``park_until_due``) takes a client's command at once (the client's
datagram to its wake socket) and rings its in-process clients' notice bells; a runner stopping
ends such a park; the broker's service threads get their names in the kernel."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell import FUTEX_TIMED_OUT, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.concurrent.wake_socket import WakeSender, bind_wake_socket
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter
from aeromq.transport.util import name_os_threads

MS = 1_000_000
DEEP = f"backoff:0,0,100000,{MS},{25 * MS},{10 * MS}"
TIMER_S = 10
# A command waiting for a blind park until the 10 s timer would take 5 s on average; woken by
# the client's datagram it takes milliseconds. Five under this bound by chance: 0.2 ** 5.
MAX_COMMAND_S = 2.0
COMMANDS = 5


class _RecordingDoorbell(Doorbell):
    """A doorbell whose waits return at once, recording how long each would have slept."""

    def __init__(self) -> None:
        super().__init__(AtomicBuffer.allocate(64), 0)
        self.waits_ns: list[int] = []

    def await_ring(self, observed: int, timeout_ns: int) -> int:
        self.waits_ns.append(timeout_ns)
        return FUTEX_TIMED_OUT


def test_should_park_until_the_time_its_owner_gives_once_the_backoff_parks_its_longest() -> None:
    parks: list[float] = []
    idle = BackoffIdleStrategy(0, 0, MS, 4 * MS)
    idle.park_with(parks.append)
    idle.idle_for = lambda: 700 * MS
    for _ in range(7):
        idle.idle(0)
    # three steps into the parks, then 1 ms, 2 ms, and at the longest (4 ms) the owner's time
    assert parks == [0.001, 0.002, 0.7, 0.7]
    assert idle.parks_until_due == 2
    idle.idle_for = lambda: 0  # nothing due: the backoff's own park
    idle.idle(0)
    assert parks[-1] == 0.004


def test_should_park_until_its_next_due_time_while_all_rung_but_not_after_a_new_client() -> None:
    bell = _RecordingDoorbell()
    idle = DoorbellIdleStrategy(bell, min_park_period_ns=MS, max_park_period_ns=25 * MS)
    idle.rung_park_ns = 100 * MS
    idle.all_rung = lambda: True
    idle.idle(0)  # arms
    idle.idle(0)
    assert bell.waits_ns == [100 * MS]
    idle.wake_for_unrung(10_000 * MS)  # a client connects: its CONNECT rings nothing
    idle.idle(0)
    assert bell.waits_ns[-1] == 25 * MS
    idle.wake_for_unrung(0)
    idle.idle(0)
    assert bell.waits_ns[-1] == 100 * MS


def test_should_end_a_socket_park_with_a_datagram_to_the_wake_socket(tmp_path: Path) -> None:
    sock = bind_wake_socket(str(tmp_path))
    assert sock is not None
    waiter = SocketWaiter()
    try:
        waiter.add_wake_socket(sock)
        threading.Timer(0.05, WakeSender(str(tmp_path)).wake).start()
        started = time.monotonic()
        waiter.wait(10.0)
        assert time.monotonic() - started < 5.0
        assert waiter.wakes == 1
        assert waiter.quiet  # the wake is no datagram for the agents
    finally:
        waiter.close()
        sock.close()


def test_should_take_commands_at_once_from_a_driver_parked_until_its_timer(shm_dir: Path) -> None:
    context = MediaDriverContext(
        aeron_dir=str(shm_dir / "driver"),
        threading_mode=ThreadingMode.SHARED,
        shared_idle_strategy=DEEP,
        conductor_idle_strategy=DEEP,
        park_until_due=True,
        timer_interval_ns=TIMER_S * 1_000 * MS,
        client_liveness_timeout_ns=3 * TIMER_S * 1_000 * MS,
        publication_unblock_timeout_ns=4 * TIMER_S * 1_000 * MS,
    )
    with MediaDriver.launch(context) as driver:
        bell = Doorbell.allocate()
        driver.add_notice_bell(bell)
        with Aeron.connect(AeronContext(aeron_dir=context.aeron_dir)) as aeron:
            for _ in range(COMMANDS):
                time.sleep(0.3)  # the driver parks until its timer
                before = bell.prepare()
                started = time.monotonic()
                aeron.add_counter(1_002, label="wake me")
                assert time.monotonic() - started < MAX_COMMAND_S
                assert bell.prepare() != before  # its answer rang the notice bell


def test_should_end_a_long_doorbell_park_when_its_runner_stops() -> None:
    class Idle:
        role_name = "idle-agent"

        def on_start(self) -> None:
            return None

        def do_work(self) -> int:
            return 0

        def on_close(self) -> None:
            return None

    idle = DoorbellIdleStrategy(
        Doorbell.allocate(), min_park_period_ns=60_000 * MS, max_park_period_ns=60_000 * MS
    )
    runner = AgentRunner(idle, lambda error: None, None, Idle())
    runner.start()
    time.sleep(0.1)  # asleep for a minute
    runner.close(timeout_s=5.0)  # raises if the park did not end
    assert runner.is_closed


def test_should_name_each_unnamed_thread_after_its_threading_name() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="store-services-x", daemon=True)
    thread.start()
    try:
        assert name_os_threads() >= 1
        with open(f"/proc/self/task/{thread.native_id}/comm", encoding="utf-8") as comm:
            assert comm.read().strip() == "store-services-"  # cut to 15 bytes
    finally:
        stop.set()
        thread.join(5)
