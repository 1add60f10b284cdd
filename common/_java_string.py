"""Java ``String`` semantics that RocketMQ's data depends on.

- :func:`hash_code` is ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over the
  UTF-16 code units, wrapped to a signed 32-bit int. RocketMQ stores it as the tag hash of every
  consume-queue entry and filters on it, so it must be bit-exact.
- :func:`compare_key` orders strings as ``String.compareTo`` does (by UTF-16 code unit,
  then by length), which RocketMQ uses to sort queues and consumer ids before allocating them.
  Python's own order is by code point and differs for characters above U+FFFF.
"""

from __future__ import annotations

import struct

__all__ = ["compare_key", "hash_code"]

_MASK_32 = 0xFFFFFFFF
_SIGN_32 = 0x80000000


def hash_code(value: str) -> int:
    """Java's ``value.hashCode()`` as a signed 32-bit int."""
    if value.isascii():
        units: bytes | tuple[int, ...] = value.encode("ascii")
    else:
        data = value.encode("utf-16-be", "surrogatepass")
        units = struct.unpack(f">{len(data) // 2}H", data)
    h = 0
    for unit in units:
        h = (31 * h + unit) & _MASK_32
    return h - (1 << 32) if h & _SIGN_32 else h


def compare_key(value: str) -> bytes:
    """A key whose order is Java's ``String.compareTo`` order (big-endian UTF-16 bytes)."""
    return value.encode("utf-16-be", "surrogatepass")
