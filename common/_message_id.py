"""RocketMQ's two message ids: the producer's unique id and the broker's offset id.

Both are bytes written big-endian and shown as upper-case hex. An IPv4 host gives 16 bytes
(32 hex characters); an IPv6 host gives 28 (56), the address growing from 4 to 16 bytes and
every later field moving 12 bytes on. Decoders accept either case of hex.

Unique id (RocketMQ's ``MessageClientIDSetter``; the ``UNIQ_KEY`` property), made by the
producer before sending:

::

    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |                     Producer IPv4 address                     |
   +-------------------------------+-------------------------------+
   |   Process id (low 16 bits)    |     Client hash (high 16)     |
   +-------------------------------+-------------------------------+
   |     Client hash (low 16)      | Time since month start (high) |
   +-------------------------------+-------------------------------+
   |  Time since month start (low) |            Counter            |
   +-------------------------------+-------------------------------+

The client hash tells apart clients of one process (RocketMQ: the class loader's hash; here a
random number per generator). The time is milliseconds since the first day of the current
month, 00:00 local time, as an unsigned 32-bit number; the counter wraps at 16 bits.

Offset id (RocketMQ's ``MessageDecoder.createMessageId``), made by the broker from where it
stored the message; it locates the message without an index:

::

    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
   |                    Store host IPv4 address                    |
   +---------------------------------------------------------------+
   |                          Store port                           |
   +---------------------------------------------------------------+
   |                                                               |
   +                  Commit log offset (signed)                   +
   |                                                               |
   +---------------------------------------------------------------+
"""

from __future__ import annotations

import ipaddress
import os
import random
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Final

from aeromq.common._errors import IllegalArgumentError

__all__ = [
    "IPV6_EXTRA_LENGTH",
    "OFFSET_COMMIT_LOG_OFFSET_OFFSET",
    "OFFSET_HOST_OFFSET",
    "OFFSET_MESSAGE_ID_LENGTH",
    "OFFSET_PORT_OFFSET",
    "UNIQUE_CLIENT_HASH_OFFSET",
    "UNIQUE_COUNTER_OFFSET",
    "UNIQUE_IP_OFFSET",
    "UNIQUE_MESSAGE_ID_LENGTH",
    "UNIQUE_PID_OFFSET",
    "UNIQUE_TIME_OFFSET",
    "OffsetMessageId",
    "UniqueMessageId",
    "UniqueMessageIdGenerator",
    "create_unique_message_id",
    "decode_offset_message_id",
    "decode_unique_message_id",
    "encode_offset_message_id",
    "encode_unique_message_id",
    "unique_message_id_time_ms",
]

IPV4_LENGTH = 4
IPV6_LENGTH = 16
IPV6_EXTRA_LENGTH = IPV6_LENGTH - IPV4_LENGTH

UNIQUE_IP_OFFSET = 0
UNIQUE_PID_OFFSET = UNIQUE_IP_OFFSET + IPV4_LENGTH
UNIQUE_CLIENT_HASH_OFFSET = UNIQUE_PID_OFFSET + 2
UNIQUE_TIME_OFFSET = UNIQUE_CLIENT_HASH_OFFSET + 4
UNIQUE_COUNTER_OFFSET = UNIQUE_TIME_OFFSET + 4
UNIQUE_MESSAGE_ID_LENGTH = UNIQUE_COUNTER_OFFSET + 2

OFFSET_HOST_OFFSET = 0
OFFSET_PORT_OFFSET = OFFSET_HOST_OFFSET + IPV4_LENGTH
OFFSET_COMMIT_LOG_OFFSET_OFFSET = OFFSET_PORT_OFFSET + 4
OFFSET_MESSAGE_ID_LENGTH = OFFSET_COMMIT_LOG_OFFSET_OFFSET + 8

_UNIQUE_SUFFIX = struct.Struct(">HiIH")  # pid, client hash, time, counter
_OFFSET_SUFFIX = struct.Struct(">iq")  # port, commit log offset
_HEX = re.compile(r"[0-9A-Fa-f]+")
_INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class UniqueMessageId:
    """The fields of a producer's unique message id."""

    ip: str
    pid: int
    client_hash: int
    time_since_month_start_ms: int
    counter: int


@dataclass(frozen=True, slots=True)
class OffsetMessageId:
    """The fields of a broker's offset message id."""

    host: str
    port: int
    commit_log_offset: int


@lru_cache(maxsize=256)
def _packed_ip(ip: str) -> bytes:
    try:
        return ipaddress.ip_address(ip).packed
    except ValueError as exc:
        raise IllegalArgumentError("not an IPv4 or IPv6 address", ip=ip) from exc


def _id_bytes(msg_id: str, kind: str) -> tuple[bytes, int]:
    """The bytes of a hex id and the length of its address (4 or 16)."""
    if len(msg_id) not in (32, 56) or _HEX.fullmatch(msg_id) is None:
        raise IllegalArgumentError(
            f"not {kind}: expected 32 or 56 hex characters", msg_id=msg_id, length=len(msg_id)
        )
    return bytes.fromhex(msg_id), IPV4_LENGTH if len(msg_id) == 32 else IPV6_LENGTH


def encode_unique_message_id(
    ip: str, pid: int, client_hash: int, time_since_month_start_ms: int, counter: int
) -> str:
    """A unique id from its fields; each integer is cut to its field's width as Java casts do."""
    suffix = _UNIQUE_SUFFIX.pack(
        pid & 0xFFFF,
        ((client_hash + 0x80000000) & 0xFFFFFFFF) - 0x80000000,
        time_since_month_start_ms & 0xFFFFFFFF,
        counter & 0xFFFF,
    )
    return (_packed_ip(ip) + suffix).hex().upper()


def decode_unique_message_id(msg_id: str) -> UniqueMessageId:
    """The fields of a producer's unique id (32 hex characters for an IPv4 producer, 56 for
    IPv6, either case); raises :class:`IllegalArgumentError` for any other string."""
    data, ip_length = _id_bytes(msg_id, "a unique message id")
    pid, client_hash, time_ms, counter = _UNIQUE_SUFFIX.unpack_from(data, ip_length)
    ip = str(ipaddress.ip_address(data[:ip_length]))
    return UniqueMessageId(ip, pid, client_hash, time_ms, counter)


def encode_offset_message_id(host: str, port: int, commit_log_offset: int) -> str:
    """An offset id from the store host's address and the message's commit log offset."""
    if not 0 <= port <= 0xFFFF:
        raise IllegalArgumentError("port out of range [0, 65535]", port=port)
    if not 0 <= commit_log_offset <= _INT64_MAX:
        raise IllegalArgumentError(
            "commit log offset out of range [0, 2^63)", commit_log_offset=commit_log_offset
        )
    return (_packed_ip(host) + _OFFSET_SUFFIX.pack(port, commit_log_offset)).hex().upper()


def decode_offset_message_id(msg_id: str) -> OffsetMessageId:
    """The store host, port and commit log offset of a broker's offset id (32 or 56 hex
    characters, either case); raises :class:`IllegalArgumentError` for any other string."""
    data, ip_length = _id_bytes(msg_id, "an offset message id")
    port, offset = _OFFSET_SUFFIX.unpack_from(data, ip_length)
    return OffsetMessageId(str(ipaddress.ip_address(data[:ip_length])), port, offset)


def _month_bounds_ms(now_ms: int, months_back: int = 0) -> tuple[int, int]:
    """Local-time starts of the month holding ``now_ms`` (``months_back`` earlier) and the next."""
    local = datetime.fromtimestamp(now_ms / 1000)
    month_index = local.year * 12 + local.month - 1 - months_back
    start = datetime(month_index // 12, month_index % 12 + 1, 1)
    end = datetime((month_index + 1) // 12, (month_index + 1) % 12 + 1, 1)
    return round(start.timestamp() * 1000), round(end.timestamp() * 1000)


def unique_message_id_time_ms(msg_id: str, now_ms: int) -> int:
    """About when a unique id was made (RocketMQ's ``getNearlyTimeFromID``): this month's start
    plus the id's time, or last month's when that would not be in the past."""
    span_ms = decode_unique_message_id(msg_id).time_since_month_start_ms
    start_ms, _ = _month_bounds_ms(now_ms)
    if start_ms + span_ms >= now_ms:
        start_ms, _ = _month_bounds_ms(now_ms, months_back=1)
    return start_ms + span_ms


def _local_ip() -> str:
    """This host's address by its name, else a fake one from the clock (as RocketMQ does)."""
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return str(ipaddress.IPv4Address(time.time_ns() // 1_000_000 & 0xFFFFFFFF))


_HEX2: Final = [f"{byte:02X}" for byte in range(256)]
"""Upper-case hex of every byte, for ids made a block at a time."""


class UniqueMessageIdGenerator:
    """Makes unique ids for one producer process: fixed ip, pid and client hash, then the time
    since the month's start and a 16-bit counter. Safe to share between threads. Every id of
    one generator has the same length (32 hex characters for IPv4, 56 for IPv6).

    Defaults: the host's address, ``os.getpid()`` and a random client hash.
    """

    __slots__ = ("_counter", "_lock", "_next_start_ms", "_prefix", "_start_ms")

    def __init__(
        self, ip: str | None = None, pid: int | None = None, client_hash: int | None = None
    ) -> None:
        prefix = encode_unique_message_id(
            ip if ip is not None else _local_ip(),
            pid if pid is not None else os.getpid(),
            client_hash if client_hash is not None else random.getrandbits(32),
            0,
            0,
        )
        self._prefix = prefix[:-12]
        self._counter = 0  # the next id's, under _lock
        self._lock = threading.Lock()
        self._start_ms = 0
        self._next_start_ms = 0

    def _head(self, now_ms: int | None) -> str:
        """The ids' common part at ``now_ms``: prefix and time since the month's start."""
        if now_ms is None:
            now_ms = time.time_ns() // 1_000_000
        if now_ms >= self._next_start_ms:
            self._start_ms, self._next_start_ms = _month_bounds_ms(now_ms)
        return f"{self._prefix}{(now_ms - self._start_ms) & 0xFFFFFFFF:08X}"

    def _take(self, count: int) -> int:
        """Reserve ``count`` counter values; the first (they wrap at 16 bits)."""
        with self._lock:
            first = self._counter
            self._counter = (first + count) & 0xFFFF
        return first

    def next_id(self, now_ms: int | None = None) -> str:
        """The next id; ``now_ms`` (epoch milliseconds) defaults to the wall clock.
        (:meth:`_head` and :meth:`_take` written out: a producer's every send makes one.)"""
        if now_ms is None:
            now_ms = time.time_ns() // 1_000_000
        if now_ms >= self._next_start_ms:
            self._start_ms, self._next_start_ms = _month_bounds_ms(now_ms)
        elapsed = (now_ms - self._start_ms) & 0xFFFFFFFF
        with self._lock:
            counter = self._counter
            self._counter = (counter + 1) & 0xFFFF
        return f"{self._prefix}{elapsed:08X}{counter:04X}"

    def next_ids(self, count: int, now_ms: int | None = None) -> list[str]:
        """``count`` ids at once, all of one time (a batch's: the clock is read once), with
        consecutive counters: one string concatenation per id (the counter's two hex bytes
        come from a table, a run of 256 at a time)."""
        head = self._head(now_ms)
        counter = self._take(count)
        ids: list[str] = []
        left = count
        while left > 0:
            high, low = counter >> 8, counter & 0xFF
            run = min(left, 256 - low)
            prefix = head + _HEX2[high]
            ids += [prefix + low_hex for low_hex in _HEX2[low : low + run]]
            counter = (counter + run) & 0xFFFF
            left -= run
        return ids


_default_generator: UniqueMessageIdGenerator | None = None
_default_lock = threading.Lock()


def create_unique_message_id() -> str:
    """A unique id from this process's generator (made on first use, made again after fork)."""
    global _default_generator
    generator = _default_generator
    if generator is None:
        with _default_lock:
            if _default_generator is None:
                _default_generator = UniqueMessageIdGenerator()
            generator = _default_generator
    return generator.next_id()


def _forget_default_generator() -> None:
    global _default_generator
    _default_generator = None


os.register_at_fork(after_in_child=_forget_default_generator)
