"""The media driver runs the UDP agents in every threading mode, and clients use UDP channels."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aeromq.transport._errors import RegistrationError
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.command import ErrorCode
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from aeromq.transport.driver.udp.network_counters import CHANNEL_STATUS_ACTIVE
from aeromq.transport.logbuffer import Header
from tests.transport.udp.harness import TERM_LENGTH

ROLES = {
    ThreadingMode.DEDICATED: {"sender", "receiver", "driver-conductor"},
    ThreadingMode.SHARED_NETWORK: {"[receiver,hosted,sender]", "driver-conductor"},
    ThreadingMode.SHARED: {"[driver-conductor,receiver,hosted,sender]"},
    ThreadingMode.INVOKER: set(),
}


def _context(aeron_dir: Path, mode: ThreadingMode) -> MediaDriverContext:
    return MediaDriverContext(
        aeron_dir=str(aeron_dir),
        term_buffer_length=TERM_LENGTH,
        threading_mode=mode,
        timer_interval_ns=20_000_000,
        publication_linger_timeout_ns=50_000_000,
        shared_idle_strategy="sleep-ns:100000",
        conductor_idle_strategy="sleep-ns:100000",
    )


def _until(predicate: Callable[[], object], step: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 20
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        step()


@pytest.mark.parametrize("mode", list(ThreadingMode))
def test_should_carry_a_stream_between_two_drivers(shm_dir: Path, mode: ThreadingMode) -> None:
    before = {thread.name for thread in threading.enumerate()}
    with (
        MediaDriver.launch(_context(shm_dir / "tx", mode)) as tx_driver,
        MediaDriver.launch(_context(shm_dir / "rx", mode)) as rx_driver,
    ):
        started = {thread.name for thread in threading.enumerate()} - before
        assert started == ROLES[mode]
        invokers = (
            [tx_driver.shared_agent_invoker, rx_driver.shared_agent_invoker]
            if mode is ThreadingMode.INVOKER
            else []
        )

        def step() -> None:
            for invoker in invokers:
                invoker.invoke()
            time.sleep(0 if invokers else 0.0005)

        use_invoker = mode is ThreadingMode.INVOKER
        with (
            Aeron.connect(
                AeronContext(aeron_dir=tx_driver.aeron_dir, use_conductor_agent_invoker=use_invoker)
            ) as tx,
            Aeron.connect(
                AeronContext(aeron_dir=rx_driver.aeron_dir, use_conductor_agent_invoker=use_invoker)
            ) as rx,
        ):
            clients = [tx, rx] if use_invoker else []

            def pump() -> None:
                step()
                for client in clients:
                    client.conductor_agent_invoker.invoke()

            channel = "aeron:udp?endpoint=127.0.0.1:0"
            subscription_id = rx.async_add_subscription(channel, 7)
            _until(lambda: rx.get_subscription(subscription_id), pump, "the subscription")
            subscription = rx.get_subscription(subscription_id)
            assert subscription is not None
            port = _bound_port(rx, subscription.channel_status_id)
            publication_id = tx.async_add_exclusive_publication(
                f"aeron:udp?endpoint=127.0.0.1:{port}", 7
            )
            _until(lambda: tx.get_exclusive_publication(publication_id), pump, "the publication")
            publication = tx.get_exclusive_publication(publication_id)
            assert publication is not None
            _until(lambda: publication.is_connected, pump, "the connection")
            received: list[bytes] = []

            def on_fragment(buffer: AtomicBuffer, offset: int, length: int, _: Header) -> None:
                received.append(buffer.get_bytes(offset, length))

            sent = [i.to_bytes(4, "little") * (i % 50) for i in range(2000)]
            next_message = 0

            def move() -> None:
                nonlocal next_message
                while next_message < len(sent) and publication.offer(sent[next_message]) > 0:
                    next_message += 1
                subscription.poll(on_fragment, 100)
                pump()

            _until(lambda: len(received) == len(sent), move, "every message")
            assert received == sent
            status = tx.counters_reader.get_counter_value(publication.channel_status_id)
            assert status == CHANNEL_STATUS_ACTIVE
            publication.close()
            _until(
                lambda: not subscription.images,
                lambda: (subscription.poll(on_fragment, 10), pump()),
                "the image to go",
            )


def _bound_port(aeron: Aeron, channel_status_id: int) -> int:
    """The port from the rcv-local-sockaddr counter that belongs to the subscription's status."""
    counters = aeron.counters_reader
    for counter_id in range(
        counters.max_counter_id if hasattr(counters, "max_counter_id") else 1024
    ):
        if (
            counters.get_counter_state(counter_id) != 1
            or counters.get_counter_type_id(counter_id) != 14
        ):
            continue
        key = counters.get_counter_key(counter_id)
        if int.from_bytes(key[0:4], "little", signed=True) == channel_status_id:
            length = int.from_bytes(key[4:8], "little")
            return int(key[8 : 8 + length].decode().rsplit(":", 1)[1])
    raise AssertionError("no rcv-local-sockaddr counter for the subscription")


def test_should_refuse_a_udp_channel_it_cannot_bind(shm_dir: Path) -> None:
    with (
        MediaDriver.launch(_context(shm_dir / "d", ThreadingMode.SHARED)) as driver,
        Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
    ):
        first = aeron.add_subscription("aeron:udp?endpoint=127.0.0.1:0", 1)
        port = _bound_port(aeron, first.channel_status_id)
        with pytest.raises(RegistrationError) as error:
            aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", 1)
        assert error.value.code == ErrorCode.GENERIC_ERROR
        assert str(port) in str(error.value) and "Address already in use" in str(error.value)
