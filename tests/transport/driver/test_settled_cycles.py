"""The driver's network thread parks right after a duty cycle that worked when that cycle
settled (``MediaDriver``'s module; ``BackoffIdleStrategy.settled_after_work``): only when no
agent left work that ends no park, and none owes a timer soon; a wake or a datagram that came
during the cycle ends that park at once."""

from __future__ import annotations

import dataclasses
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy, IdleStrategy
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from aeromq.transport.driver.command_adapter import COMMAND_DRAIN_LIMIT
from aeromq.transport.driver.media_driver import _parked_in, _settling
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.test_network_wake import _context, _stream

LONG_PARK_NS = 30_000_000_000
"""The settled park in these tests: a lost wake would hold the thread for it."""
JOIN_S = 20.0


@pytest.fixture
def invoked(driver_context: MediaDriverContext) -> Iterator[MediaDriver]:
    """A driver whose agents run only when the test runs them (``INVOKER``)."""
    context = dataclasses.replace(driver_context, threading_mode=ThreadingMode.INVOKER)
    with MediaDriver.launch(context) as driver:
        yield driver


def test_should_say_the_conductor_left_commands_past_its_drain_limit(
    invoked: MediaDriver,
) -> None:
    conductor = invoked.conductor
    conductor.do_work()
    assert not conductor.left_work()
    with DriverClient(invoked.aeron_dir) as client:
        for _ in range(COMMAND_DRAIN_LIMIT + 2):
            client.keepalive()
        conductor.do_work()  # ten of them: the rest's wakes may be drained already
        assert conductor.left_work()
        conductor.do_work()
        assert not conductor.left_work()


def test_should_say_the_conductor_left_an_image_request_the_receiver_queued(
    invoked: MediaDriver,
) -> None:
    conductor = invoked.conductor
    ran: list[int] = []
    conductor.do_work()
    conductor.udp.subscriptions.conductor_proxy.queue.append((ran.append, (1,)))
    assert conductor.left_work()  # queued after the conductor's turn in a shared cycle
    conductor.do_work()
    assert ran == [1]
    assert not conductor.left_work()


def test_should_settle_after_work_only_when_no_agent_left_work_nor_owes_a_timer(
    invoked: MediaDriver, monkeypatch: pytest.MonkeyPatch
) -> None:
    conductor = invoked.conductor
    sender, receiver = conductor.udp.sender, conductor.udp.receiver
    conductor.do_work()
    owed = {"sender": False, "receiver": False}
    monkeypatch.setattr(sender, "owes_soon", lambda: owed["sender"])
    monkeypatch.setattr(receiver, "owes_soon", lambda: owed["receiver"])
    settled, settled_after_work = _settling(True, sender, receiver, conductor=conductor)
    assert settled is not None and settled_after_work is not None
    assert settled_after_work()
    sender.commands.append((lambda: None, ()))  # a command for the next cycle
    assert not settled_after_work()
    sender.commands.clear()
    receiver.commands.append((lambda: None, ()))
    assert not settled_after_work()
    receiver.commands.clear()
    owed["receiver"] = True  # a status message or a NAK due soon: its timer bounds the park
    assert not settled_after_work()
    owed["receiver"], owed["sender"] = False, True  # a resend due
    assert not settled_after_work()
    owed["sender"] = False
    assert settled_after_work()
    assert _settling(False, sender, receiver, conductor=conductor) == (None, None)


def _parked_after_work(waiter: SocketWaiter) -> tuple[BackoffIdleStrategy, IdleStrategy]:
    backoff = BackoffIdleStrategy(0, 0, 100_000, 1_000_000, LONG_PARK_NS, 10_000_000)
    return backoff, _parked_in(backoff, waiter, lambda: True, lambda: True)


def _idle_in_a_thread(strategy: IdleStrategy, work_count: int) -> None:
    thread = threading.Thread(target=strategy.idle, args=(work_count,), daemon=True)
    thread.start()
    thread.join(JOIN_S)
    assert not thread.is_alive(), "the park after work slept through what came during the cycle"


def test_should_not_sleep_through_a_wake_that_came_during_the_cycle() -> None:
    waiter = SocketWaiter()
    backoff, strategy = _parked_after_work(waiter)
    waiter.wake()  # an in-process publisher's offer while the cycle ran
    _idle_in_a_thread(strategy, 1)
    assert (backoff.parks_after_work, waiter.wakes) == (1, 1)  # parked, and the wake ended it
    waiter.wake()
    _idle_in_a_thread(strategy, 0)  # the empty cycle's park ends the same way
    assert waiter.wakes == 2
    waiter.close()


def test_should_not_sleep_through_a_datagram_that_came_during_the_cycle() -> None:
    waiter = SocketWaiter()
    backoff, strategy = _parked_after_work(waiter)
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender,
    ):
        receiver.bind(("127.0.0.1", 0))
        waiter.register(receiver)
        sender.sendto(b"data", receiver.getsockname())
        _idle_in_a_thread(strategy, 1)
        assert backoff.parks_after_work == 1
        assert waiter.ready == {receiver.fileno()}  # the next cycle reads it
        assert receiver.recv(16) == b"data"
        waiter.unregister(receiver)
    waiter.close()


def test_should_look_at_the_sockets_when_a_cycle_that_worked_did_not_settle() -> None:
    waiter = SocketWaiter()
    waiter.look_after_work = True
    backoff = BackoffIdleStrategy(0, 0, 100_000, 1_000_000, LONG_PARK_NS, 10_000_000)
    strategy = _parked_in(backoff, waiter, lambda: True, lambda: False)
    strategy.idle(1)  # left work: no park, one look instead
    assert backoff.parks_after_work == 0
    assert waiter.ready == set()  # looked: nothing readable
    waiter.close()


def test_should_carry_every_message_when_the_network_thread_parks_after_work(
    shm_dir: Path,
) -> None:
    """Two settled drivers (``SHARED``, ``park_when_settled``) over UDP, one message at a
    time and a burst past the window: every message arrives, in order, and the threads did
    park right after cycles that worked."""
    cases = {
        "paced": ([i.to_bytes(4, "little") for i in range(20)], 0.01),
        "burst": ([i.to_bytes(4, "little") * 256 for i in range(200)], 0.0),  # 1 KiB each
    }
    for name, (payloads, gap_s) in cases.items():
        with (
            MediaDriver.launch(_context(shm_dir / f"tx-{name}", True)) as tx_driver,
            MediaDriver.launch(_context(shm_dir / f"rx-{name}", True)) as rx_driver,
        ):
            assert _stream(tx_driver, rx_driver, payloads, gap_s) == payloads
            parks = [_parks_after_work(driver) for driver in (tx_driver, rx_driver)]
        assert all(count > 0 for count in parks), (name, parks)


def _parks_after_work(driver: MediaDriver) -> int:
    strategy = driver._runners[0]._idle_strategy._parking  # type: ignore[attr-defined]
    assert isinstance(strategy, BackoffIdleStrategy)
    return strategy.parks_after_work
