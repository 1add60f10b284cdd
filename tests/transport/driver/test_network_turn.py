"""A publisher of the driver's process sends its own frames while the network thread parks
(``transport/driver/network_turn.py``): the frame leaves before ``offer`` returns, the network
thread holds the turn through each duty cycle, and a taken turn, frames left, an error or a
closed driver fall back to waking the network thread (or to nothing, once closed)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import cast

import pytest

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.client.waking_publications import WakingExclusivePublication
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.network_wakes import network_wake
from aeromq.transport.driver import MediaDriver, SystemCounter, ThreadingMode
from aeromq.transport.driver.network_turn import NetworkTurn
from aeromq.transport.driver.udp.sender import Sender
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer import Header
from tests.transport.driver.support import (
    free_udp_port,
    small_context,
    voluntary_switches,
    wait_until,
)

PARK_1_S = "backoff:0,0,1000000000,1000000000"
SAMPLES = 10


def _bytes_sent(driver: MediaDriver) -> int:
    return driver.conductor.system_counters.get(SystemCounter.BYTES_SENT).get()


@pytest.mark.parametrize("mode", [ThreadingMode.SHARED, ThreadingMode.DEDICATED])
def test_should_send_an_offer_on_the_offering_thread_while_the_network_thread_parks(
    shm_dir: Path, mode: ThreadingMode
) -> None:
    """Both drivers park a whole second: the frame is counted sent when ``offer`` returns (the
    offering thread sent it; the network thread could not have run yet: this thread holds the
    interpreter), and it arrives."""

    def context(name: str) -> object:
        return small_context(
            shm_dir / name,
            threading_mode=mode,
            conductor_idle_strategy="sleep-ns:1000000",  # DEDICATED: commands at once
            shared_idle_strategy=PARK_1_S,
            udp=UdpSettings(  # no SM ends a park
                status_message_timeout_ns=5_000_000_000,
                sender_idle_strategy=PARK_1_S,
                receiver_idle_strategy=PARK_1_S,
            ),
        )

    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    received: list[bytes] = []

    def on_fragment(buffer: AtomicBuffer, offset: int, length: int, _: Header) -> None:
        received.append(buffer.get_bytes(offset, length))

    with (
        MediaDriver.launch(context("tx")) as tx_driver,  # type: ignore[arg-type]
        MediaDriver.launch(context("rx")) as rx_driver,  # type: ignore[arg-type]
        Aeron.connect(AeronContext(aeron_dir=tx_driver.aeron_dir)) as tx,
        Aeron.connect(AeronContext(aeron_dir=rx_driver.aeron_dir)) as rx,
    ):
        subscription = rx.add_subscription(channel, 9)
        publication = tx.add_exclusive_publication(channel, 9)
        assert isinstance(publication, WakingExclusivePublication)
        wait_until(lambda: publication.is_connected and subscription.images, 30, "the connection")
        network_thread = tx_driver._runners[0].thread  # the first runner runs the sender
        assert network_thread is not None and network_thread.native_id is not None
        time.sleep(0.1)
        switches_before = voluntary_switches(network_thread.native_id)
        sent_inline = 0
        for sample in range(SAMPLES):
            time.sleep(0.05)  # the network thread back in its park
            payload = sample.to_bytes(4, "little")
            before = _bytes_sent(tx_driver)
            assert publication.offer(payload) > 0
            sent_inline += _bytes_sent(tx_driver) >= before + 32 + len(payload)
            wait_until(
                lambda: subscription.poll(on_fragment, 8) >= 0 and payload in received,  # noqa: B023
                5,
                "the frame",
            )
        switches = voluntary_switches(network_thread.native_id) - switches_before
    assert received == [sample.to_bytes(4, "little") for sample in range(SAMPLES)]
    # Before the turn the network thread woke for every offer (9-16 switches over the ten,
    # measured) and sent about half of the frames before the offer returned (the wake's
    # system call let it take the interpreter). Now it sleeps through them; a timer may end
    # its 1 s park once.
    assert switches <= 2, f"the network thread woke {switches} times for {SAMPLES} offers"
    assert sent_inline >= SAMPLES - 2, f"{sent_inline} of {SAMPLES} sent by the offering thread"


class _StubSender:
    """What the turn calls of a sender: counts its sends, says it left work when told to."""

    def __init__(self, *, left: bool = False, error: Exception | None = None) -> None:
        self.sends = 0
        self.left = left
        self.error = error

    def send_now(self) -> int:
        self.sends += 1
        if self.error is not None:
            raise self.error
        return 64

    def left_work(self) -> bool:
        return self.left


class _Turn:
    """A turn over a stub sender, with its wakes and recorded errors counted."""

    def __init__(self, sender: _StubSender) -> None:
        self.sender = sender
        self.wakes = 0
        self.errors: list[BaseException] = []
        self.turn = NetworkTurn(cast(Sender, sender), self._wake, self.errors.append)

    def _wake(self) -> None:
        self.wakes += 1


class _Agent:
    """An agent whose duty cycle runs ``during`` (the network thread's cycle, as in a driver)."""

    role_name = "network"

    def __init__(self, during: object) -> None:
        self.during = during
        self.closed = False

    def on_start(self) -> None:
        return None

    def do_work(self) -> int:
        self.during()  # type: ignore[operator]
        return 1

    def on_close(self) -> None:
        self.closed = True


def test_should_send_in_place_and_not_wake_when_the_turn_is_free() -> None:
    turned = _Turn(_StubSender())
    turned.turn.send_or_wake()
    assert (turned.sender.sends, turned.wakes) == (1, 0)


def test_should_wake_the_network_thread_when_its_cycle_holds_the_turn() -> None:
    """An offer during the network thread's cycle (here: made by that cycle, as a hosted
    agent's; the lock is not re-entrant, and the attempt does not block) wakes it instead."""
    turned = _Turn(_StubSender())
    holder = turned.turn.agent(_Agent(turned.turn.send_or_wake))
    assert holder.do_work() == 1
    assert (turned.sender.sends, turned.wakes) == (0, 1)
    turned.turn.send_or_wake()  # the cycle over: the turn is free again
    assert (turned.sender.sends, turned.wakes) == (1, 1)


def test_should_hold_the_turn_through_each_duty_cycle_and_the_close() -> None:
    """Another thread's offer in the middle of the network thread's cycle, or of its close,
    finds the turn taken: it wakes, it does not send."""
    turned = _Turn(_StubSender())

    def offer_from_another_thread() -> None:
        other = threading.Thread(target=turned.turn.send_or_wake)
        other.start()
        other.join()

    agent = _Agent(offer_from_another_thread)
    holder = turned.turn.agent(agent)
    assert holder.role_name == "network"
    holder.do_work()
    assert (turned.sender.sends, turned.wakes) == (0, 1)
    agent.on_close = offer_from_another_thread  # type: ignore[method-assign]
    holder.on_close()
    assert (turned.sender.sends, turned.wakes) == (0, 2)
    offer_from_another_thread()
    assert (turned.sender.sends, turned.wakes) == (1, 2)


def test_should_wake_when_the_send_left_frames_it_may_send() -> None:
    turned = _Turn(_StubSender(left=True))
    turned.turn.send_or_wake()
    assert (turned.sender.sends, turned.wakes) == (1, 1)


def test_should_record_a_send_error_and_wake_rather_than_raise_into_the_offer() -> None:
    error = OSError(105, "No buffer space available")
    turned = _Turn(_StubSender(error=error))
    turned.turn.send_or_wake()
    assert turned.errors == [error] and turned.wakes == 1
    turned.sender.error = None
    turned.turn.send_or_wake()  # the turn was given back
    assert turned.sender.sends == 2


def test_should_send_nothing_once_the_driver_closes() -> None:
    turned = _Turn(_StubSender())
    turned.turn.close()
    turned.turn.send_or_wake()
    assert (turned.sender.sends, turned.wakes) == (0, 0)


def test_should_neither_send_nor_raise_after_the_driver_closed(shm_dir: Path) -> None:
    """The driver's close takes its turn off the registry and closes it: an offer made after
    it (through a publisher's saved way in) sends nothing on the unmapped logs and raises
    nothing."""
    driver = MediaDriver.launch(small_context(shm_dir / "tx", threading_mode=ThreadingMode.SHARED))
    send = network_wake(driver.aeron_dir)
    assert send is not None
    driver.close()
    assert network_wake(driver.aeron_dir) is None
    send()
    driver.send_network()


def test_should_deliver_every_frame_in_order_while_threads_and_the_network_thread_share_the_turn(
    shm_dir: Path,
) -> None:
    """Three threads offer to three publications of one driver at once while its network
    thread runs its own cycles (its ordinary backoff): whoever holds the turn sends, and each
    stream arrives whole and in order."""
    streams, count = (21, 22, 23), 400
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with (
        MediaDriver.launch(
            small_context(shm_dir / "tx", threading_mode=ThreadingMode.SHARED)
        ) as tx_driver,
        MediaDriver.launch(
            small_context(shm_dir / "rx", threading_mode=ThreadingMode.SHARED)
        ) as rx_driver,
        Aeron.connect(AeronContext(aeron_dir=tx_driver.aeron_dir)) as tx,
        Aeron.connect(AeronContext(aeron_dir=rx_driver.aeron_dir)) as rx,
    ):
        subscriptions = {stream: rx.add_subscription(channel, stream) for stream in streams}
        publications = {stream: tx.add_exclusive_publication(channel, stream) for stream in streams}
        wait_until(
            lambda: (
                all(p.is_connected for p in publications.values())
                and all(s.images for s in subscriptions.values())
            ),
            30,
            "the connections",
        )
        received: dict[int, list[int]] = {stream: [] for stream in streams}
        failures: list[BaseException] = []

        def offer_all(stream: int) -> None:
            try:
                publication = publications[stream]
                for sequence in range(count):
                    payload = sequence.to_bytes(4, "little")
                    wait_until(lambda: publication.offer(payload) > 0, 10, "an offer")  # noqa: B023
            except BaseException as error:  # reported below
                failures.append(error)

        threads = [threading.Thread(target=offer_all, args=(stream,)) for stream in streams]
        for thread in threads:
            thread.start()

        def read(stream: int) -> None:
            def on_fragment(buffer: AtomicBuffer, offset: int, length: int, _: Header) -> None:
                received[stream].append(int.from_bytes(buffer.get_bytes(offset, length), "little"))

            subscriptions[stream].poll(on_fragment, 64)

        deadline = time.monotonic() + 30
        while any(len(got) < count for got in received.values()) and time.monotonic() < deadline:
            for stream in streams:
                read(stream)
        for thread in threads:
            thread.join(10)
    assert failures == []
    assert received == {stream: list(range(count)) for stream in streams}
