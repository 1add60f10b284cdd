"""``SocketWaiter``: a park that a datagram on a registered socket ends at once."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from aeromq.transport.concurrent.idle_strategy import SleepingIdleStrategy
from aeromq.transport.driver.udp import socket_waiter
from aeromq.transport.driver.udp.socket_waiter import MIN_POLL_PARK_S, SocketWaiter


@pytest.fixture
def receiver() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    yield sock
    sock.close()


def _send_later(address: tuple[str, int], delay_s: float) -> threading.Thread:
    def send() -> None:
        time.sleep(delay_s)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"wake", address)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_should_end_the_wait_when_a_datagram_arrives(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    sender = _send_later(receiver.getsockname(), 0.05)
    start = time.monotonic()
    waiter.wait(5.0)
    waited_s = time.monotonic() - start
    sender.join(5)
    assert 0.04 <= waited_s < 2.0, f"waited {waited_s:.3f} s for a datagram sent at 0.05 s"
    assert receiver.recv(16) == b"wake"


def test_should_wait_the_whole_timeout_when_nothing_arrives(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    start = time.monotonic()
    waiter.wait(0.03)
    assert time.monotonic() - start >= 0.029


def test_should_return_at_once_while_a_socket_holds_unread_data(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"unread", receiver.getsockname())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # until the kernel has queued it
        start = time.monotonic()
        waiter.wait(1.0)
        if time.monotonic() - start < 0.5:
            break
    else:
        pytest.fail("the datagram never made the socket readable")


def test_should_forget_a_socket_once_unregistered_as_often_as_registered(
    receiver: socket.socket,
) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    waiter.register(receiver)
    waiter.unregister(receiver)
    assert waiter.socket_count == 1
    waiter.unregister(receiver)
    assert waiter.socket_count == 0
    waiter.unregister(receiver)  # more often than registered: nothing to undo
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"ignored", receiver.getsockname())
    start = time.monotonic()
    waiter.wait(0.03)  # no socket left: a plain sleep, the datagram does not end it
    assert time.monotonic() - start >= 0.029


def test_should_end_a_park_shorter_than_a_poll_can_time_on_a_readable_socket(
    receiver: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)
    waiter.wait(MIN_POLL_PARK_S / 4)  # nothing readable: a select that times out
    assert waiter.quiet
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"data", receiver.getsockname())
    deadline = time.monotonic() + 5
    waiter.wait(MIN_POLL_PARK_S / 4)
    while waiter.quiet and time.monotonic() < deadline:  # until the kernel queued it
        waiter.wait(MIN_POLL_PARK_S / 4)
    assert not waiter.quiet
    assert slept == []  # never a sleep that no datagram ends
    assert receiver.recv(16) == b"data"


def test_should_end_the_wait_when_woken_from_another_thread(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)

    def wake_later() -> None:
        time.sleep(0.05)
        waiter.wake()

    thread = threading.Thread(target=wake_later, daemon=True)
    thread.start()
    start = time.monotonic()
    waiter.wait(5.0)
    waited_s = time.monotonic() - start
    thread.join(5)
    assert 0.04 <= waited_s < 2.0, f"waited {waited_s:.3f} s for a wake at 0.05 s"
    assert waiter.wakes == 1
    assert waiter.quiet  # woken, no socket readable: the next cycle skips the reads
    waiter.close()


def test_should_return_at_once_from_the_next_park_after_a_wake_that_found_it_busy(
    receiver: socket.socket,
) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    waiter.wake()
    waiter.wake()  # two wakes before the park: one park ends, the counter is drained
    for timeout_s in (5.0, MIN_POLL_PARK_S / 4):
        start = time.monotonic()
        waiter.wait(timeout_s)
        assert time.monotonic() - start < 1.0
        waiter.wake()
    start = time.monotonic()
    waiter.wait(5.0)
    waiter.wait(0.03)  # drained: this one runs to its timeout
    assert time.monotonic() - start >= 0.029
    waiter.close()
    waiter.close()
    waiter.wake()  # closed: a no-op


def test_should_write_one_wake_until_a_park_drains_it(
    receiver: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Wakes coalesce: a publisher that wakes after every offer writes the eventfd once per
    park of the thread, not once per offer; a wake after the park drained it writes again."""
    waiter = SocketWaiter()
    waiter.register(receiver)
    writes: list[int] = []
    write = os.eventfd_write

    def counted(fd: int, value: int) -> None:
        writes.append(value)
        write(fd, value)

    monkeypatch.setattr(socket_waiter.os, "eventfd_write", counted)
    for _ in range(100):
        waiter.wake()
    assert len(writes) == 1
    start = time.monotonic()
    waiter.wait(5.0)  # ended by the wake, which it drains
    waiter.wake()
    waiter.wait(5.0)  # the wake after the drain ends this one too
    assert time.monotonic() - start < 1.0
    assert (len(writes), waiter.wakes) == (2, 2)
    waiter.close()


def test_should_not_lose_the_wakes_after_one_that_raced_the_drain(
    receiver: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wake while the park drains the eventfd (another thread's, between the park's return
    and its read) leaves no flag set behind it: the next wake still ends the next park."""
    waiter = SocketWaiter()
    waiter.register(receiver)
    read = os.eventfd_read

    def racing_read(fd: int) -> int:
        waiter.wake()  # another thread, as the park drains
        return read(fd)

    monkeypatch.setattr(socket_waiter.os, "eventfd_read", racing_read)
    waiter.wake()
    waiter.wait(5.0)
    monkeypatch.setattr(socket_waiter.os, "eventfd_read", read)
    waiter.wait(0.01)  # whatever the race left, drained
    waiter.wake()
    start = time.monotonic()
    waiter.wait(5.0)
    assert time.monotonic() - start < 1.0
    waiter.close()


def test_should_be_quiet_only_after_a_park_that_timed_out_with_nothing_readable(
    receiver: socket.socket,
) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    parking = SleepingIdleStrategy(5_000_000)
    parking.park_with(waiter.wait)
    strategy = waiter.idle_strategy(parking)
    assert strategy.alias == "sleep-ns"
    strategy.idle(0)  # a 5 ms poll, nothing arrives
    assert waiter.quiet
    strategy.idle(1)  # work: no park, and the flag from the last park is gone
    assert not waiter.quiet
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"data", receiver.getsockname())
    deadline = time.monotonic() + 5
    strategy.idle(0)
    while waiter.quiet and time.monotonic() < deadline:  # until the kernel queued it
        strategy.idle(0)
    assert not waiter.quiet  # readable: the next cycle reads
    assert receiver.recv(16) == b"data"


def test_should_name_only_the_sockets_a_park_found_readable(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.bind(("127.0.0.1", 0))
        other.setblocking(False)
        waiter.register(other)
        assert waiter.ready is None  # no park yet: a cycle reads every socket
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"data", other.getsockname())
        waiter.wait(5.0)  # ends as the datagram lands
        assert waiter.ready == {other.fileno()}
        assert not waiter.quiet
        assert other.recv(16) == b"data"
        waiter.wait(0.001)  # nothing readable, nothing woke it
        assert waiter.ready == set()
        assert waiter.quiet
        waiter.unregister(other)
    waiter.close()


def test_should_look_at_the_sockets_after_a_cycle_that_worked(receiver: socket.socket) -> None:
    waiter = SocketWaiter()
    waiter.register(receiver)
    waiter.look_after_work = True
    parking = SleepingIdleStrategy(5_000_000)
    parking.park_with(waiter.wait)
    strategy = waiter.idle_strategy(parking)
    waiter.wake()  # pending: not a socket to read
    strategy.idle(1)  # work: no park, one poll that does not wait
    assert waiter.ready == set()
    assert waiter.quiet
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        sender.sendto(b"data", receiver.getsockname())
    deadline = time.monotonic() + 5
    strategy.idle(1)
    while waiter.quiet and time.monotonic() < deadline:  # until the kernel queued it
        strategy.idle(1)
    assert waiter.ready == {receiver.fileno()}
    strategy.idle(0)  # a park: returns at once, the socket is still readable
    assert waiter.ready == {receiver.fileno()}
    assert waiter.wakes == 1  # the pending wake was drained by the park
    assert receiver.recv(16) == b"data"
    waiter.look_after_work = False
    strategy.idle(1)  # work without a look: not known, read them all
    assert waiter.ready is None
    waiter.close()
