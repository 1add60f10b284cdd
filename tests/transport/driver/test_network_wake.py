"""A datagram ends the park of the thread that runs the receiver at once, in every threading
mode that gives the network agents a thread (their idle strategy parks in a
:class:`~transport.driver.udp.socket_waiter.SocketWaiter`); an in-process publisher's wake ends
the sender's; a driver whose publishers all wake it (``park_when_settled``) parks its longest
at once while it owes nothing soon, and still moves every byte (status messages and NAKs do not
wait for its long parks)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.transport.client import Aeron, AeronContext, ConcurrentPublication
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer import Header
from aeromq.transport.testing.loss_generator import LossGenerator
from tests.transport.driver.support import free_udp_port

FAST = "sleep-ns:100000"
PARK_1_S = "backoff:0,0,1000000000,1000000000"
SAMPLES = 7
# Parked blind for 1 s, a message would wait 0.5 s on average: six of seven under this bound by
# chance has a probability of 7 * 0.3 ** 6 * 0.7 + 0.3 ** 7, 0.4%. Woken by the datagram, each
# takes milliseconds; one sample may meet a stall of a loaded machine (a thread not scheduled
# for 0.3 s), so the bound holds for all but the slowest.
MAX_LATENCY_S = 0.3


def _all_but_the_slowest(latencies: list[float]) -> float:
    return sorted(latencies)[-2]


def _until(predicate: Callable[[], object], step: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 30
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


@pytest.mark.parametrize(
    "mode", [ThreadingMode.DEDICATED, ThreadingMode.SHARED_NETWORK, ThreadingMode.SHARED]
)
def test_should_wake_a_parked_receiver_when_a_datagram_arrives(
    shm_dir: Path, mode: ThreadingMode
) -> None:
    sender_context = MediaDriverContext(
        aeron_dir=str(shm_dir / "tx"),
        term_buffer_length=64 * 1024,
        conductor_idle_strategy=FAST,
        shared_idle_strategy=FAST,
        udp=UdpSettings(
            sender_idle_strategy=FAST,
            receiver_idle_strategy=FAST,
            shared_network_idle_strategy=FAST,
        ),
    )
    receiver_context = MediaDriverContext(
        aeron_dir=str(shm_dir / "rx"),
        term_buffer_length=64 * 1024,
        threading_mode=mode,
        conductor_idle_strategy=FAST if mode is not ThreadingMode.SHARED else PARK_1_S,
        shared_idle_strategy=PARK_1_S,
        udp=UdpSettings(
            sender_idle_strategy=PARK_1_S,
            receiver_idle_strategy=PARK_1_S,
            shared_network_idle_strategy=PARK_1_S,
        ),
    )
    with (
        MediaDriver.launch(sender_context) as tx_driver,
        MediaDriver.launch(receiver_context) as rx_driver,
    ):
        latencies = _sample_latencies(tx_driver, rx_driver, lambda: None)
    assert _all_but_the_slowest(latencies) < MAX_LATENCY_S, f"latencies {latencies}"


@contextlib.contextmanager
def _connected(
    tx_driver: MediaDriver, rx_driver: MediaDriver
) -> Iterator[tuple[ConcurrentPublication, list[bytes], Callable[[], None]]]:
    """A UDP stream from ``tx_driver``'s client to ``rx_driver``'s, connected: its publication,
    the payloads received so far, and the poll that receives them. The publication is a
    concurrent one, whose offers neither send nor wake the driver's network thread (an exclusive
    one's send their frames themselves while it parks, ``transport/driver/network_turn.py``):
    what these tests time is the network thread's own sending and waking."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with (
        Aeron.connect(AeronContext(aeron_dir=tx_driver.aeron_dir)) as tx,
        Aeron.connect(AeronContext(aeron_dir=rx_driver.aeron_dir)) as rx,
    ):
        subscription = rx.add_subscription(channel, 9)
        publication = tx.add_publication(channel, 9)
        received: list[bytes] = []

        def on_fragment(buffer: AtomicBuffer, offset: int, length: int, _: Header) -> None:
            received.append(buffer.get_bytes(offset, length))

        def poll() -> None:
            if not subscription.poll(on_fragment, 64):
                time.sleep(0.0002)

        _until(lambda: publication.is_connected and subscription.images, poll, "the connection")
        yield publication, received, poll


def _sample_latencies(
    tx_driver: MediaDriver, rx_driver: MediaDriver, after_offer: Callable[[], object]
) -> list[float]:
    """From ``tx_driver``'s client to ``rx_driver``'s over UDP: the time from each of
    :data:`SAMPLES` offers (0.15 s apart, each followed by ``after_offer()``) to its
    arrival."""
    with _connected(tx_driver, rx_driver) as (publication, received, poll):
        latencies = []
        for sample in range(SAMPLES):
            time.sleep(0.15)  # the parked thread is back in its 1 s park
            payload = sample.to_bytes(4, "little")
            _until(lambda: publication.offer(payload) > 0, poll, "the offer")  # noqa: B023
            start = time.monotonic()
            after_offer()
            _until(lambda: payload in received, poll, "the message")  # noqa: B023
            latencies.append(time.monotonic() - start)
        return latencies


DEEP = "backoff:0,0,1000,1000000,25000000,10000000"  # a deep backoff, walked after all work
SHARED_ROLE = "[driver-conductor,receiver,hosted,sender]"


def _wake_ups(native_id: int) -> int:
    """How often the thread has been scheduled in (schedstat's third field)."""
    with open(f"/proc/self/task/{native_id}/schedstat", encoding="ascii") as stat:
        return int(stat.read().split()[2])


def test_should_park_deep_beside_connected_idle_streams(shm_dir: Path) -> None:
    """Heartbeats (every 100 ms) and status messages (every 200 ms) of idle streams both ways
    are keepalives, not work: the shared thread stays in its 25 ms park between them."""
    deep_context = MediaDriverContext(
        aeron_dir=str(shm_dir / "deep"),
        term_buffer_length=64 * 1024,
        threading_mode=ThreadingMode.SHARED,
        shared_idle_strategy=DEEP,
    )
    peer_context = MediaDriverContext(aeron_dir=str(shm_dir / "peer"), term_buffer_length=64 * 1024)
    to_deep = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    to_peer = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with (
        MediaDriver.launch(deep_context) as deep_driver,
        MediaDriver.launch(peer_context) as peer_driver,
        Aeron.connect(AeronContext(aeron_dir=deep_driver.aeron_dir)) as deep,
        Aeron.connect(AeronContext(aeron_dir=peer_driver.aeron_dir)) as peer,
    ):
        deep_subscription = deep.add_subscription(to_deep, 3)
        peer_subscription = peer.add_subscription(to_peer, 4)
        peer_publication = peer.add_exclusive_publication(to_deep, 3)
        deep_publication = deep.add_exclusive_publication(to_peer, 4)
        _until(
            lambda: (
                peer_publication.is_connected
                and deep_publication.is_connected
                and deep_subscription.images
                and peer_subscription.images
            ),
            lambda: time.sleep(0.01),
            "both streams",
        )
        (thread,) = [t for t in threading.enumerate() if t.name == SHARED_ROLE]
        assert thread.native_id is not None
        time.sleep(1.0)  # past the connection's traffic
        before, start = _wake_ups(thread.native_id), time.monotonic()
        time.sleep(2.0)
        rate = (_wake_ups(thread.native_id) - before) / (time.monotonic() - start)
    # a 25 ms park is 40 a second, each heartbeat and status message that arrives one more
    # (15 a second); counted as work, each sent the thread back to spinning: 300-500 a second
    assert rate < 150, f"{rate:.0f} wake-ups a second"


def test_should_send_an_offer_at_once_when_its_driver_is_woken(shm_dir: Path) -> None:
    """A publisher in the driver's process ends the sender's park after its offer
    (``MediaDriver.wake_network``), and the receiving driver rings its data doorbell once the
    data is in: neither waits for a park (1 s here) to end."""
    quiet = UdpSettings(  # no status message wakes the sender
        receiver_idle_strategy=FAST, status_message_timeout_ns=5_000_000_000
    )
    with (
        MediaDriver.launch(_small(shm_dir / "tx", PARK_1_S)) as tx_driver,
        MediaDriver.launch(_small(shm_dir / "rx", FAST, quiet)) as rx_driver,
    ):
        assert MediaDriver.in_process(tx_driver.aeron_dir) is tx_driver
        doorbell = rx_driver.data_doorbell
        assert doorbell is not None
        rung = doorbell.prepare()
        latencies = _sample_latencies(tx_driver, rx_driver, tx_driver.wake_network)
        assert (doorbell.prepare() >> 1) - (rung >> 1) >= SAMPLES  # rung for each message
    # unwoken, each offer waits for the rest of a 1 s park: six of seven under the bound by
    # chance has a probability of 0.4%
    assert _all_but_the_slowest(latencies) < MAX_LATENCY_S, f"latencies {latencies}"
    assert MediaDriver.in_process(tx_driver.aeron_dir) is None


def _small(aeron_dir: Path, idle: str, udp: UdpSettings | None = None) -> MediaDriverContext:
    """A driver's context in ``aeron_dir``: its agents on one thread idling as ``idle`` says,
    64 KiB terms."""
    return MediaDriverContext(
        aeron_dir=str(aeron_dir),
        term_buffer_length=64 * 1024,
        threading_mode=ThreadingMode.SHARED,
        conductor_idle_strategy=idle,
        shared_idle_strategy=idle,
        udp=udp or UdpSettings(),
    )


SETTLED_DEEP = "backoff:0,0,100000,1000000,25000000,10000000"  # with park_when_settled


def _context(aeron_dir: Path, settled: bool, udp: UdpSettings | None = None) -> MediaDriverContext:
    return dataclasses.replace(_small(aeron_dir, SETTLED_DEEP, udp), park_when_settled=settled)


def _stream(
    tx_driver: MediaDriver, rx_driver: MediaDriver, payloads: list[bytes], gap_s: float
) -> list[bytes]:
    """Offer ``payloads`` from ``tx_driver``'s client to ``rx_driver``'s over UDP, each followed
    by a wake of ``tx_driver``'s network thread, which sends it (a concurrent publication: its
    offers neither send nor wake), ``gap_s`` apart (0: as fast as they go); what arrived, in
    order."""
    with _connected(tx_driver, rx_driver) as (publication, received, poll):
        for payload in payloads:
            _until(lambda: publication.offer(payload) > 0, poll, "the offer")  # noqa: B023
            tx_driver.wake_network()
            if gap_s:
                count = len(received)
                _until(lambda: len(received) > count, poll, "the message")  # noqa: B023
                time.sleep(gap_s)
        _until(lambda: len(received) >= len(payloads), poll, "every message")
        return received


def test_should_wake_for_datagrams_and_wakes_only_when_settled(shm_dir: Path) -> None:
    """One message every 50 ms from a settled driver to another: each thread wakes for the
    datagrams and the wake, not for a backoff's parks after every piece of work (1 us, 2 us,
    ... then 1 ms parks for 10 ms: 20 and more a message)."""
    rates = {}
    for settled in (True, False):
        name = "settled" if settled else "backoff"
        with (
            MediaDriver.launch(_context(shm_dir / f"tx-{name}", settled)) as tx_driver,
            MediaDriver.launch(_context(shm_dir / f"rx-{name}", settled)) as rx_driver,
        ):
            threads = [t for t in threading.enumerate() if t.name == SHARED_ROLE]
            ids = [t.native_id for t in threads if t.native_id is not None]
            assert len(ids) == 2
            before = sum(_wake_ups(native_id) for native_id in ids)
            payloads = [i.to_bytes(4, "little") for i in range(20)]
            assert _stream(tx_driver, rx_driver, payloads, 0.05) == payloads
            rates[name] = (sum(_wake_ups(native_id) for native_id in ids) - before) / 20
    # two threads: settled, each wakes for a datagram or a wake, and its 25 ms parks (about
    # two a message); the backoff's short parks are tens a message
    assert rates["settled"] < rates["backoff"] / 2, f"wake-ups a message: {rates}"


def test_should_move_every_byte_through_flow_control_and_loss_when_settled(
    shm_dir: Path,
) -> None:
    """Far more than a receiver window (16 KiB here), with 10% of the data lost on the way:
    the receiver's status messages and NAKs go out while owed, not after 25 ms parks, and
    everything arrives in order."""
    lossy = UdpSettings(
        initial_window_length=16 * 1024,
        loss_generator=LossGenerator(data_loss_rate=0.1, seed=7),
    )
    with (
        MediaDriver.launch(_context(shm_dir / "tx", True)) as tx_driver,
        MediaDriver.launch(_context(shm_dir / "rx", True, lossy)) as rx_driver,
    ):
        payloads = [i.to_bytes(4, "little") * 256 for i in range(256)]  # 1 KiB each
        assert _stream(tx_driver, rx_driver, payloads, 0.0) == payloads
