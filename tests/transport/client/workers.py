"""Process entry points for the multi-process client tests (spawned: importable by name).

Messages are ``(sender id, sequence, length)`` plus a deterministic body, so the receiver can
check each one is intact and each sender's are in order.
"""

from __future__ import annotations

import random
import struct
import time
import zlib
from multiprocessing.queues import Queue
from typing import Any

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import FragmentAssembler, Header

PREFIX = struct.Struct("<iiI")  # sender, sequence, crc32 of the body
DEADLINE_S = 60.0


def message(sender: int, sequence: int, length: int) -> bytes:
    """A message of ``length`` bytes (>= 12) that names its sender and sequence."""
    body = random.Random(sender * 1_000_003 + sequence).randbytes(length - PREFIX.size)
    return PREFIX.pack(sender, sequence, zlib.crc32(body)) + body


def sizes(seed: int, count: int, max_length: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(PREFIX.size, max_length) for _ in range(count)]


def publish(
    aeron_dir: str,
    channel: str,
    stream_id: int,
    sender: int,
    count: int,
    max_length: int,
    exclusive: bool,
    results: Queue[Any],
) -> None:
    """Offer ``count`` messages of random sizes, retrying on back pressure; report the end."""
    ctx = AeronContext(aeron_dir=aeron_dir, driver_timeout_ms=10_000)
    with Aeron.connect(ctx) as aeron:
        if exclusive:
            publication: Any = aeron.add_exclusive_publication(channel, stream_id)
        else:
            publication = aeron.add_publication(channel, stream_id)
        deadline = time.monotonic() + DEADLINE_S
        while not publication.is_connected:
            if time.monotonic() > deadline:
                results.put(("publisher", sender, "never connected"))
                return
            time.sleep(0.001)
        for sequence, length in enumerate(sizes(sender, count, max_length)):
            payload = message(sender, sequence, length)
            while publication.offer(payload) < 0:
                if time.monotonic() > deadline:
                    results.put(("publisher", sender, f"stuck at {sequence}"))
                    return
                time.sleep(0)
        results.put(("publisher", sender, publication.position))
        while publication.position_limit < publication.position and time.monotonic() < deadline:
            time.sleep(0.001)  # let the subscriber read before closing


class Checker:
    """Checks received messages: intact, and in order per sender."""

    def __init__(self) -> None:
        self.next_sequence: dict[int, int] = {}
        self.errors: list[str] = []
        self.count = 0

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        sender, sequence, crc = PREFIX.unpack_from(buffer, offset)
        body = buffer.get_bytes(offset + PREFIX.size, length - PREFIX.size)
        expected = self.next_sequence.get(sender, 0)
        if sequence != expected:
            self.errors.append(f"sender {sender}: got {sequence}, expected {expected}")
        elif zlib.crc32(body) != crc or body != message(sender, sequence, length)[PREFIX.size :]:
            self.errors.append(f"sender {sender}: message {sequence} corrupt")
        self.next_sequence[sender] = sequence + 1
        self.count += 1


def subscribe(
    aeron_dir: str, channel: str, stream_id: int, expected: int, results: Queue[Any]
) -> None:
    """Receive ``expected`` whole messages and report (count, errors, per-sender counts)."""
    with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
        subscription = aeron.add_subscription(channel, stream_id)
        results.put(("subscriber", "ready", subscription.registration_id))
        checker = Checker()
        assembler = FragmentAssembler(checker)
        deadline = time.monotonic() + DEADLINE_S
        while checker.count < expected and time.monotonic() < deadline:
            if subscription.poll(assembler, 256) == 0:
                time.sleep(0)
        results.put(("subscriber", checker.count, checker.errors[:5], checker.next_sequence))
