"""A timer message's record while the timer topic holds it: its property string, as bytes.

The redirect (``_redirect``) takes each record's properties as the producer encoded them, cuts
out the timer properties (``TIMER_DELIVER_MS``, ``TIMER_DELAY_SEC``, ``DELAY``) and appends a
tail of three, always last and in this order::

    <the producer's properties> TIMER_DELIVER_MS \\x01 <due ms> \\x02
                                REAL_TOPIC \\x01 <topic> \\x02 REAL_QID \\x01 <queue id> \\x02

so the service (``_service``) reads a held record's due time and real queue with one ``rfind``
and one ``split``, and puts back the producer's properties plus ``TIMER_OUT_MS`` without
decoding them into a dict. Functions on bytes, no I/O: a few microseconds a record (the dict
round trip of ``stored_properties`` and ``encode_messages`` cost about 25 us a record).

Caller: ``_redirect`` and ``_service``.
"""

from __future__ import annotations

from typing import Final, NamedTuple, cast

from aeromq.broker.timer._delays import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_PROPERTIES,
    due_time,
)
from aeromq.common import RecordBatch

__all__ = [
    "Held",
    "HeldTuple",
    "batch_records",
    "delivered_properties",
    "hold_properties",
    "queue_tail",
    "read_held",
]

_TIMER_NAMES: Final = frozenset(name.encode() for name in TIMER_PROPERTIES)
_DUE_MARK: Final = (PROPERTY_TIMER_DELIVER_MS + "\x01").encode()
_TOPIC_NAME: Final = PROPERTY_REAL_TOPIC.encode()
_QUEUE_NAME: Final = PROPERTY_REAL_QUEUE_ID.encode()
_OUT_MARK: Final = (PROPERTY_TIMER_OUT_MS + "\x01").encode()
_END: Final = 2  # PROPERTY_SEPARATOR


class Held(NamedTuple):
    """A held record, what its put-back needs: its real queue, due time and parts."""

    topic: str
    queue_id: int
    due_ms: int
    body: bytes
    tag: str | None
    properties: bytes
    """The producer's properties, without the timer's."""
    flag: int
    born_ms: int
    born_host: bytes
    reconsume_times: int
    attributes: int

    def packed(self) -> HeldTuple:
        """The same fields as a plain tuple, how the index keeps a record until it is due (see
        :data:`HeldTuple`); :meth:`unpacked` turns it back."""
        return cast(HeldTuple, tuple(self))

    @classmethod
    def unpacked(cls, fields: HeldTuple) -> Held:
        """The record :meth:`packed` gave ``fields`` of."""
        return cls._make(fields)


HeldTuple = tuple[str, int, int, bytes, "str | None", bytes, int, int, bytes, int, int]
"""A :class:`Held`'s fields as a plain tuple. Python's collector stops tracking a plain tuple of
strings, bytes and numbers, not a named one: 100,000 records held as ``Held`` made each full
collection 80-260 ms longer (every thread of the broker waits for it), as plain tuples about
nothing (measured with ``gc.collect(2)``). Packing and unpacking cost 0.4 us a record."""


def batch_records(view: RecordBatch) -> tuple[bytes, list[int], list[int], list[int], int]:
    """``(bytes, body ends, tag ends, property ends, data start)`` of a batch: each record's
    parts are slices of those bytes (record ``i`` from the end of ``i - 1``, or of the part
    before it)."""
    body_ends, tag_ends, property_ends = view.ends()
    return bytes(view.buffer), body_ends, tag_ends, property_ends, view.data_start


def queue_tail(topic: str, queue_id: int) -> bytes:
    """The tail's last two properties, for every record of one batch."""
    return (
        f"{PROPERTY_REAL_TOPIC}\x01{topic}\x02{PROPERTY_REAL_QUEUE_ID}\x01{queue_id}\x02".encode()
    )


def hold_properties(
    properties: bytes, tail: bytes, now_ms: int, max_delay_ms: int
) -> tuple[bytes, int] | str:
    """A record's properties as the timer topic holds them (see module) and its due time
    (``now_ms`` when it has no timer property); or why it is refused."""
    kept: list[bytes] = []
    found: dict[str, str] = {}
    for item in properties.split(b"\x02"):
        if item:
            name, _, value = item.partition(b"\x01")
            if name in _TIMER_NAMES:
                found[name.decode()] = value.decode()
            else:
                kept.append(item)
    due = due_time(found, now_ms, max_delay_ms)
    if due.problem is not None:
        return due.problem
    due_ms = now_ms if due.due_ms is None else due.due_ms
    kept.append(b"")
    return b"\x02".join(kept) + _DUE_MARK + b"%d\x02" % due_ms + tail, due_ms


def read_held(properties: bytes) -> tuple[bytes, int, str, int] | None:
    """``(the producer's properties, due ms, real topic, real queue id)`` of a held record;
    None when its tail is not the timer's."""
    at = properties.rfind(_DUE_MARK)
    if at < 0 or (at and properties[at - 1] != _END):
        return None
    parts = properties[at + len(_DUE_MARK) :].split(b"\x02")
    if len(parts) != 4 or parts[3]:
        return None
    topic_name, _, topic = parts[1].partition(b"\x01")
    queue_name, _, queue = parts[2].partition(b"\x01")
    if topic_name != _TOPIC_NAME or queue_name != _QUEUE_NAME or not topic:
        return None
    try:
        return properties[:at], int(parts[0]), topic.decode(), int(queue)
    except ValueError:
        return None


def delivered_properties(properties: bytes, due_ms: int) -> bytes:
    """The properties of a record put back: the producer's, then ``TIMER_OUT_MS``."""
    return properties + _OUT_MARK + b"%d\x02" % due_ms
