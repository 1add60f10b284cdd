"""Process entry points for the multi-process UDP tests and the ``udp`` bench (spawned).

A media driver runs alone in its process (SHARED threading mode, one agent thread), as a
standalone Aeron driver would; publishers and subscribers are client processes of their own.

Messages are ``(sequence, length)`` and a body cut from one fixed random block at an offset
derived from the sequence, so a subscriber checks each one cheaply: intact (the body matches)
and in order (the sequence is the next one). Sizes follow the sequence too (mostly small, one
in five up to ``max_length``, fragmented when past the MTU).
"""

from __future__ import annotations

import random
import struct
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from aeromq.transport.logbuffer import FragmentAssembler, Header
from aeromq.transport.testing.loss_generator import LossGenerator

PREFIX = struct.Struct("<qi")  # sequence, body length
BLOCK = random.Random(20240501).randbytes(1 << 16)
DEADLINE_S = 240.0


def message_length(sequence: int, max_length: int) -> int:
    """The body length of message ``sequence``: 4 in 5 under 200 bytes, the rest up to max."""
    mixed = (sequence * 2_654_435_761) & 0xFFFF_FFFF
    if mixed % 5:
        return mixed % 200
    return mixed % (max_length + 1)


def message(sequence: int, max_length: int) -> bytes:
    length = message_length(sequence, max_length)
    start = (sequence * 7919) & 0x7FFF
    return PREFIX.pack(sequence, length) + BLOCK[start : start + length]


def run_driver(
    aeron_dir: str,
    ready: Event,
    stop: Event,
    loss: dict[str, float] | None = None,
    overrides: dict[str, Any] | None = None,
) -> None:
    """Run a media driver in ``aeron_dir`` until ``stop`` is set (``loss``: generator rates)."""
    udp: dict[str, Any] = {}
    if loss:
        udp["loss_generator"] = LossGenerator(seed=17, **loss)
    values: dict[str, Any] = {
        "aeron_dir": aeron_dir,
        "term_buffer_length": 4 * 1024 * 1024,
        "threading_mode": ThreadingMode.SHARED,
        "timer_interval_ns": 100_000_000,
        "dir_delete_on_start": True,
        "dir_delete_on_shutdown": True,
        "udp": UdpSettings(**udp),
    }
    values.update(overrides or {})
    with MediaDriver.launch(MediaDriverContext(**values)):
        ready.set()
        stop.wait(DEADLINE_S * 2)


def publish(
    aeron_dir: str,
    channel: str,
    stream_id: int,
    count: int,
    max_length: int,
    results: Queue[Any],
    stop: Event | None = None,
) -> None:
    """Offer ``count`` messages (forever if ``stop`` is given, until it is set); report."""
    with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
        publication = aeron.add_exclusive_publication(channel, stream_id)
        deadline = time.monotonic() + DEADLINE_S
        while not publication.is_connected:
            if time.monotonic() > deadline:
                results.put(("publisher", "never connected"))
                return
            time.sleep(0.001)
        started = time.perf_counter()
        sequence = 0
        offer = publication.offer
        while sequence < count or (stop is not None and not stop.is_set()):
            payload = message(sequence, max_length)
            while offer(payload) < 0:
                if time.monotonic() > deadline or (stop is not None and stop.is_set()):
                    results.put(("publisher", sequence, time.perf_counter() - started))
                    return
                time.sleep(0)
            sequence += 1
            if stop is not None and sequence % 64 == 0:
                time.sleep(0.0005)  # a steady trickle, not a flood
        results.put(("publisher", sequence, time.perf_counter() - started))
        while publication.position_limit < publication.position + 1 and (
            time.monotonic() < deadline
        ):
            time.sleep(0.001)
        if stop is not None:
            stop.wait(DEADLINE_S)


class Checker:
    """Checks messages: intact and in sequence from the first one seen."""

    def __init__(self, max_length: int) -> None:
        self.max_length = max_length
        self.first: int | None = None
        self.next_sequence = -1
        self.count = 0
        self.errors: list[str] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        sequence, body_length = PREFIX.unpack_from(buffer, offset)
        if body_length != length - PREFIX.size and len(self.errors) < 5:
            self.errors.append(f"message {sequence} has the wrong length")
        if self.first is None:
            self.first = self.next_sequence = sequence
        if sequence != self.next_sequence and len(self.errors) < 5:
            self.errors.append(f"expected sequence {self.next_sequence}, got {sequence}")
        expected = message(sequence, self.max_length)
        if buffer.get_bytes(offset, length) != expected and len(self.errors) < 5:
            self.errors.append(f"message {sequence} is damaged")
        self.next_sequence = sequence + 1
        self.count += 1


def subscribe(
    aeron_dir: str,
    channel: str,
    stream_id: int,
    count: int,
    max_length: int,
    results: Queue[Any],
    ready: Event,
    until_image_goes: bool = False,
    hold: Event | None = None,
) -> None:
    """Receive ``count`` messages and check them; optionally wait for the image to go, or
    stay subscribed (reading on) until ``hold`` is set."""
    gone: list[int] = []
    context = AeronContext(
        aeron_dir=aeron_dir, unavailable_image_handler=lambda image: gone.append(image.session_id)
    )
    with Aeron.connect(context) as aeron:
        subscription = aeron.add_subscription(channel, stream_id)
        ready.set()
        checker = Checker(max_length)
        assembler = FragmentAssembler(checker)
        deadline = time.monotonic() + DEADLINE_S
        while not subscription.images:
            if time.monotonic() > deadline:
                results.put(("subscriber", "no image", 0.0, []))
                return
            time.sleep(0.001)
        started = time.perf_counter()
        poll = subscription.poll
        while checker.count < count and time.monotonic() < deadline:
            if poll(assembler, 256) == 0:
                time.sleep(0)
        elapsed = time.perf_counter() - started
        eos = False
        if until_image_goes:
            while not gone and time.monotonic() < deadline:
                for image in subscription.images:
                    eos = eos or image.is_end_of_stream
                poll(assembler, 256)
                time.sleep(0.001)
        results.put(
            ("subscriber", checker.count, elapsed, checker.errors, checker.first, bool(gone), eos)
        )
        while hold is not None and not hold.is_set() and time.monotonic() < deadline:
            poll(assembler, 256)
            time.sleep(0.001)
