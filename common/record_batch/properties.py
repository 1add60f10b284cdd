"""A message's properties as a batch stores them: its tag in the tag column, every other
property in RocketMQ's string (``name\x01value\x02`` pairs), and back.

Caller: the producer and the store codec (:func:`split_tag`, before encoding), the consumer's
messages and the broker's lookups (:func:`join_tag`, :func:`stored_properties`). No I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from aeromq.common._properties import PROPERTY_TAGS, decode_properties
from aeromq.common.record_batch.view import RecordBatch

__all__ = ["join_tag", "split_tag", "stored_properties"]


def split_tag(properties: Mapping[str, str]) -> tuple[str | None, bytes]:
    """A message's properties as a batch stores them: its tag (``TAGS``; None without one) for
    the tag column, and every other property as RocketMQ's string (the inverse of
    :func:`stored_properties`)."""
    tag = None
    parts = []
    for name, value in properties.items():
        if name == PROPERTY_TAGS:
            tag = value or None
        else:
            parts.append(f"{name}\x01{value}\x02")
    return tag, "".join(parts).encode()


def join_tag(properties: bytes, tag: str | None) -> dict[str, str]:
    """A record's properties as RocketMQ keeps them: its property string decoded, with ``TAGS``
    put back from the tag column (the inverse of :func:`split_tag`)."""
    decoded = decode_properties(properties)
    if tag:
        decoded[PROPERTY_TAGS] = tag
    return decoded


def stored_properties(batch: RecordBatch, index: int) -> dict[str, str]:
    """Record ``index``'s properties as RocketMQ keeps them (:func:`join_tag`)."""
    return join_tag(batch.properties_bytes(index), batch.tag(index))
