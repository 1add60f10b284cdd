"""The waits of a UDP exchange end on their events: a client's offer to an exclusive network
publication of a driver in its process ends that driver's sender's park
(``transport.client.waking_publications``), and a subscription whose channel names a
``doorbell`` counter has it rung by the receiver as its data lands; a driver of
``event_driven_context`` parks until woken and still moves every message."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aeromq.transport import RegistrationError
from aeromq.transport.client import Aeron, AeronContext, ExclusivePublication
from aeromq.transport.client.waking_publications import WakingExclusivePublication
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.doorbell import (
    DOORBELL_TYPE_ID,
    FUTEX_TIMED_OUT,
    HAS_FUTEX,
    Doorbell,
)
from aeromq.transport.concurrent.network_wakes import network_wake
from aeromq.transport.driver import (
    MediaDriver,
    MediaDriverContext,
    ThreadingMode,
    event_driven_context,
    with_doorbell,
)
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer import Header
from tests.transport.driver.support import free_udp_port, small_context, wait_until

PARK_1_S = "backoff:0,0,1000000000,1000000000"
FAST = "sleep-ns:100000"
SAMPLES = 5
# Parked blind for 1 s, a message would wait 0.5 s on average: five all under this bound by
# chance has a probability of 0.3 ** 5, 0.2%. Woken by the offer, each takes milliseconds.
MAX_LATENCY_S = 0.3


def _context(aeron_dir: Path, idle: str) -> MediaDriverContext:
    return small_context(
        aeron_dir,
        threading_mode=ThreadingMode.SHARED,
        conductor_idle_strategy=idle,
        shared_idle_strategy=idle,
        udp=UdpSettings(status_message_timeout_ns=5_000_000_000),  # no SM ends a park
    )


@pytest.mark.skipif(not HAS_FUTEX, reason="doorbells need futexes")
def test_should_send_at_once_and_ring_the_subscribers_doorbell_as_the_data_lands(
    shm_dir: Path,
) -> None:
    """Both drivers park a whole second between their duty cycles: the offer ends the
    sender's park, the datagram the receiver's, and the receiver rings the subscription's
    doorbell, on which the subscriber sleeps."""
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with (
        MediaDriver.launch(_context(shm_dir / "tx", PARK_1_S)) as tx_driver,
        MediaDriver.launch(_context(shm_dir / "rx", PARK_1_S)) as rx_driver,
        Aeron.connect(AeronContext(aeron_dir=tx_driver.aeron_dir)) as tx,
        Aeron.connect(AeronContext(aeron_dir=rx_driver.aeron_dir)) as rx,
    ):
        assert network_wake(tx_driver.aeron_dir) is not None
        counter = rx.add_counter(DOORBELL_TYPE_ID, label="doorbell: test")
        bell = Doorbell.for_counter(rx.counters_reader, counter.id)
        subscription = rx.add_subscription(with_doorbell(channel, counter.id), 9)
        publication = tx.add_exclusive_publication(channel, 9)
        ipc = tx.add_exclusive_publication("aeron:ipc", 10)
        assert isinstance(publication, WakingExclusivePublication)
        assert type(ipc) is ExclusivePublication  # IPC offers pay nothing
        received: list[bytes] = []

        def on_fragment(buffer: AtomicBuffer, offset: int, length: int, _: Header) -> None:
            received.append(buffer.get_bytes(offset, length))

        wait_until(lambda: publication.is_connected and subscription.images, 30, "the connection")
        latencies = []
        for sample in range(SAMPLES):
            time.sleep(0.15)  # both drivers back in their 1 s parks
            payload = sample.to_bytes(4, "little")
            observed = bell.prepare()
            start = time.monotonic()
            wait_until(lambda: publication.offer(payload) > 0, 30, "the offer")  # noqa: B023
            while payload not in received:
                assert bell.await_ring(observed, 5_000_000_000) != FUTEX_TIMED_OUT
                observed = bell.prepare()
                subscription.poll(on_fragment, 64)
            latencies.append(time.monotonic() - start)
    assert max(latencies) < MAX_LATENCY_S, f"latencies {latencies}"


def test_should_refuse_a_doorbell_that_is_no_doorbell_counter(shm_dir: Path) -> None:
    channel = f"aeron:udp?endpoint=127.0.0.1:{free_udp_port()}"
    with (
        MediaDriver.launch(_context(shm_dir / "rx", FAST)) as driver,
        Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
    ):
        other = aeron.add_counter(DOORBELL_TYPE_ID + 1, label="not a doorbell")
        for counter_id in (other.id, 4_000):
            with pytest.raises(RegistrationError, match="not a doorbell counter") as raised:
                aeron.add_subscription(with_doorbell(channel, counter_id), 9)
            assert raised.value.code == ErrorCode.INVALID_CHANNEL
        with pytest.raises(RegistrationError, match="not negative"):
            aeron.add_subscription(f"{channel}|doorbell=-1", 9)


def test_should_run_an_event_driven_driver_on_one_thread_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for variable in ("AERON_THREADING_MODE", "AERON_SHARED_IDLE_STRATEGY"):
        monkeypatch.delenv(variable, raising=False)
    context = event_driven_context(MediaDriverContext.from_env())
    assert context.threading_mode is ThreadingMode.SHARED
    assert context.park_when_settled and context.park_until_due
    assert context.shared_idle_strategy.startswith("backoff:0,0,")  # no spins, no yields
    monkeypatch.setenv("AERON_THREADING_MODE", "DEDICATED")
    monkeypatch.setenv("AERON_SHARED_IDLE_STRATEGY", "sleep-ms:1")
    context = event_driven_context(MediaDriverContext.from_env())
    assert context.threading_mode is ThreadingMode.DEDICATED
    assert context.shared_idle_strategy == "sleep-ms:1"
