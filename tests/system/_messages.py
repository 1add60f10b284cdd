"""Self-checking messages for the system tests: a sequence number and a crc32 in every payload.

Message ``seq`` of a stream is ``length`` bytes long, ``length`` drawn from a seeded generator
that the publisher and the subscriber both run, so the subscriber knows every length to expect.
A message longer than its 12-byte prefix is ``<seq: u32><sender: u32><crc32 of body: u32><body>``,
the body a slice of a fixed random pool that moves with ``seq`` and ``sender``; a shorter one is
the first ``length`` bytes of the prefix of an empty body (so a 0-byte message is checked by its
length alone). :class:`StreamChecker` is the fragment handler that checks one sender's messages
in the subscriber's process; :class:`SenderDispatch` routes by the sender in the prefix.
"""

from __future__ import annotations

import random
import struct
import zlib
from typing import Final

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header

__all__ = ["PREFIX", "MessageWriter", "SenderDispatch", "StreamChecker", "message_lengths"]

PREFIX: Final = struct.Struct("<III")
_POOL_SEED: Final = 20_261_122
_POOL_SPAN: Final = 1 << 16
_STRIDE: Final = 131


def message_lengths(seed: int, count: int, max_length: int, min_length: int = 0) -> list[int]:
    """``count`` lengths in ``[min_length, max_length]``, the same for the same arguments."""
    rng = random.Random(seed)
    return [rng.randint(min_length, max_length) for _ in range(count)]


def _pool(max_length: int) -> memoryview:
    return memoryview(random.Random(_POOL_SEED).randbytes(_POOL_SPAN + max_length))


class MessageWriter:
    """Builds message ``seq`` of a given length into one reused scratch buffer."""

    __slots__ = ("_pool", "scratch")

    def __init__(self, max_length: int) -> None:
        self._pool = _pool(max_length)
        self.scratch = bytearray(max(max_length, PREFIX.size))

    def write(self, seq: int, length: int, sender: int = 0) -> bytearray:
        """Fill the first ``length`` bytes of :attr:`scratch` with message ``seq``."""
        scratch = self.scratch
        if length > PREFIX.size:
            start = (seq * _STRIDE + sender * 7919) % _POOL_SPAN
            body = self._pool[start : start + length - PREFIX.size]
            scratch[PREFIX.size : length] = body
            PREFIX.pack_into(scratch, 0, seq, sender, zlib.crc32(body))
        else:
            PREFIX.pack_into(scratch, 0, seq, sender, 0)
        return scratch

    def message(self, seq: int, length: int, sender: int = 0) -> bytes:
        """Message ``seq`` as its own bytes."""
        return bytes(self.write(seq, length, sender)[:length])


class StreamChecker:
    """A fragment handler checking one stream: every message intact, in order, as long as
    expected, and each unfragmented one's header naming the term offset it is at. Mismatches are counted and the first few described in :attr:`errors`. A ``late``
    checker (a subscriber that joined a running stream) starts at the sequence of the first
    message it is given, which must be at least as long as the prefix."""

    __slots__ = (
        "_lengths",
        "_sender",
        "error_count",
        "errors",
        "first_seq",
        "next_seq",
        "received",
    )

    def __init__(self, lengths: list[int], sender: int = 0, late: bool = False) -> None:
        self._lengths = lengths
        self._sender = sender
        self.first_seq = -1 if late else 0
        self.next_seq = self.first_seq
        self.received = 0
        self.error_count = 0
        self.errors: list[str] = []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seq = self.next_seq
        if seq < 0:
            if length < PREFIX.size:
                self._fail(f"a late joiner's first message ({length} bytes) has no sequence")
                return
            seq = self.first_seq = PREFIX.unpack_from(buffer, offset)[0]
        self.next_seq = seq + 1
        self.received += 1
        lengths = self._lengths
        if seq >= len(lengths):
            self._fail(f"message {seq} beyond the {len(lengths)} expected")
        elif length != lengths[seq]:
            self._fail(f"message {seq}: length {length}, expected {lengths[seq]}")
        elif length > PREFIX.size:
            got_seq, sender, crc = PREFIX.unpack_from(buffer, offset)
            if sender != self._sender:
                self._fail(f"message {seq}: from sender {sender}, expected {self._sender}")
            elif got_seq != seq:
                self._fail(f"message {seq}: carries sequence {got_seq}")
                self.next_seq = got_seq + 1
            elif zlib.crc32(buffer.get_bytes(offset + PREFIX.size, length - PREFIX.size)) != crc:
                self._fail(f"message {seq}: crc32 mismatch")
        elif buffer.get_bytes(offset, length) != PREFIX.pack(seq, self._sender, 0)[:length]:
            self._fail(f"message {seq}: short message bytes differ")
        if header.fragmented_frame_length < 0 and header.term_offset != header.offset:
            self._fail(f"message {seq}: header term offset {header.term_offset} at {header.offset}")

    def _fail(self, what: str) -> None:
        self.error_count += 1
        if len(self.errors) < 5:
            self.errors.append(what)


class SenderDispatch:
    """A fragment handler giving each message to its sender's checker (messages of several
    senders must all be at least as long as the prefix); unknown senders are counted."""

    __slots__ = ("_checkers", "unknown")

    def __init__(self, checkers: dict[int, StreamChecker]) -> None:
        self._checkers = checkers
        self.unknown = 0

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        checker = (
            self._checkers.get(buffer.get_int32(offset + 4)) if length >= PREFIX.size else None
        )
        if checker is None:
            self.unknown += 1
        else:
            checker(buffer, offset, length, header)
