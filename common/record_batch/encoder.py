"""The producer's side of the record batch: :func:`encode_batch`, one batch of a send's messages.

Caller: the producer (each send, once: a retry sends the same bytes), the broker's store codec
(``put_messages``, for tests and tools) and a consumer that wraps messages made elsewhere. One
pass in C (``_encoder.c``) when the module is built; :func:`encode_batch_py` is the same in
Python, the reference the C code is tested against and the fallback. No I/O.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Sequence
from typing import Final

from aeromq.common._java_string import hash_code
from aeromq.common.record_batch.descriptor import (
    ATTRIBUTES_OFFSET,
    BATCH_MAGIC,
    CRC_OFFSET,
    CRC_START,
    FIXED_HEADER_LENGTH,
    HEADER_STRUCT,
    MAX_SEQUENCE,
    MAX_TOPIC_LENGTH,
    PRODUCER_STATE_FLAG,
    PRODUCER_STATE_STRUCT,
    TOPIC_LENGTH_OFFSET,
    TOTAL_LENGTH_OFFSET,
    batch_header_length,
    columns_struct,
    producer_state_position,
)

try:
    from aeromq.common.record_batch import _native
except ImportError:  # not built (a source tree without a compiler): the Python reference
    _native = None  # type: ignore[assignment]  # the native module is optional: None when not built

__all__ = ["encode_batch", "encode_batch_py", "stamp_batch"]

_U32: Final = struct.Struct("<I")
_I32: Final = struct.Struct("<i")
_U16: Final = struct.Struct("<H")

_TAG_HASHES: dict[str, int] = {}
_TAG_CACHE_LIMIT: Final = 65536


def _tag_hash(tag: str) -> int:
    code = _TAG_HASHES.get(tag)
    if code is None:
        code = hash_code(tag)
        if len(_TAG_HASHES) < _TAG_CACHE_LIMIT:
            _TAG_HASHES[tag] = code
    return code


def encode_batch(
    topic: bytes,
    bodies: Sequence[bytes],
    tags: Sequence[str | None] | None = None,
    properties: Sequence[bytes] | bytes | None = None,
    *,
    property_lengths: Sequence[int] | None = None,
    flags: Sequence[int] | None = None,
    born_timestamp_ms: int = 0,
    born_deltas_ms: Sequence[int] | None = None,
    born_host: bytes = bytes(8),
    reconsume_times: int = 0,
    attributes: int = 0,
    producer_id: int | None = None,
    base_sequence: int = 0,
    producer_epoch: int = 0,
) -> bytearray:
    """One batch of ``bodies`` (with their ``tags``, encoded ``properties`` without TAGS, and
    ``flags``), born at ``born_timestamp_ms`` (plus each ``born_deltas_ms``) on ``born_host``
    (8 bytes: IPv4 address, i32 port). The broker fields are zero; the CRC is set.

    With ``producer_id`` (an idempotent producer's id, any i64), the batch carries the producer
    state: that id, ``base_sequence`` (its first record's sequence number in the queue,
    ``0..MAX_SEQUENCE``) and ``producer_epoch`` (an i16), and its attributes have
    :data:`~common.record_batch.PRODUCER_STATE_FLAG`; without it, that bit of ``attributes`` is
    cleared (a batch re-encoded from stored messages carries no producer state).

    With ``property_lengths``, ``properties`` is every record's property string already
    joined into one ``bytes`` and these are their lengths (a producer that builds them in one
    string operation). One pass in C (``_encoder.c``) when it is built, else
    :func:`encode_batch_py`, the reference; both give the same bytes.

    Checks nothing the broker checks (it does, in one pass); raises ``ValueError`` or
    ``struct.error`` only for values that cannot be encoded at all.
    """
    if _native is None:
        return encode_batch_py(
            topic,
            bodies,
            tags,
            properties,
            property_lengths=property_lengths,
            flags=flags,
            born_timestamp_ms=born_timestamp_ms,
            born_deltas_ms=born_deltas_ms,
            born_host=born_host,
            reconsume_times=reconsume_times,
            attributes=attributes,
            producer_id=producer_id,
            base_sequence=base_sequence,
            producer_epoch=producer_epoch,
        )
    return _native.encode(
        topic,
        bodies,
        tags,
        properties,
        property_lengths,
        flags,
        born_timestamp_ms,
        born_deltas_ms,
        born_host,
        reconsume_times,
        attributes,
        producer_id,
        base_sequence,
        producer_epoch,
    )


def encode_batch_py(
    topic: bytes,
    bodies: Sequence[bytes],
    tags: Sequence[str | None] | None = None,
    properties: Sequence[bytes] | bytes | None = None,
    *,
    property_lengths: Sequence[int] | None = None,
    flags: Sequence[int] | None = None,
    born_timestamp_ms: int = 0,
    born_deltas_ms: Sequence[int] | None = None,
    born_host: bytes = bytes(8),
    reconsume_times: int = 0,
    attributes: int = 0,
    producer_id: int | None = None,
    base_sequence: int = 0,
    producer_epoch: int = 0,
) -> bytearray:
    """:func:`encode_batch` in Python: the reference of the C encoder, and its fallback."""
    count = len(bodies)
    if not count:
        raise ValueError("a batch holds at least one record")
    if len(topic) > MAX_TOPIC_LENGTH:
        raise ValueError(f"topic longer than {MAX_TOPIC_LENGTH} bytes: {len(topic)}")
    if producer_id is None:
        attributes &= ~PRODUCER_STATE_FLAG
        producer_state = b""
    else:
        if not 0 <= base_sequence <= MAX_SEQUENCE:
            raise struct.error(f"'i' format requires 0 <= number <= {MAX_SEQUENCE}")
        attributes |= PRODUCER_STATE_FLAG
        producer_state = PRODUCER_STATE_STRUCT.pack(producer_id, base_sequence, producer_epoch, 0)
    padded = producer_state_position(len(topic))
    header_length = batch_header_length(len(topic), attributes)
    body_lengths = [len(body) for body in bodies]
    zeros = _zeros(count)
    tag_lengths: Sequence[int]
    tag_hashes: Sequence[int]
    if tags is None or not any(tags):
        tag_data = b""
        tag_lengths = tag_hashes = zeros
    else:
        encoded = [tag.encode() if tag else b"" for tag in tags]
        tag_lengths = [len(tag) for tag in encoded]
        tag_hashes = [_tag_hash(tag) if tag else 0 for tag in tags]
        tag_data = b"".join(encoded)
    property_data: bytes
    if property_lengths is not None:
        if not isinstance(properties, bytes | bytearray | memoryview):
            raise ValueError("with property_lengths, properties is one bytes-like object")
        property_data = bytes(properties)
        if len(property_lengths) != count or sum(property_lengths) != len(property_data):
            raise ValueError(
                f"the property lengths do not add up: count={len(property_lengths)} "
                f"sum={sum(property_lengths)} length={len(property_data)}"
            )
    elif properties is None:
        property_data = b""
        property_lengths = zeros
    else:
        if isinstance(properties, bytes):
            raise ValueError("properties joined in one bytes need property_lengths")
        property_lengths = [len(item) for item in properties]
        property_data = b"".join(properties)
    columns = columns_struct(count).pack(
        *tag_hashes,
        *body_lengths,
        *tag_lengths,
        *property_lengths,
        *(born_deltas_ms if born_deltas_ms is not None else zeros),
        *(flags if flags is not None else zeros),
    )
    total = header_length + len(columns) + sum(body_lengths) + len(tag_data) + len(property_data)
    head = HEADER_STRUCT.pack(
        total,
        BATCH_MAGIC,
        0,
        0,
        0,
        bytes(8),
        0,
        0,
        count,
        reconsume_times,
        born_timestamp_ms,
        born_host,
        attributes,
        len(topic),
    )
    out = bytearray().join(
        (
            head,
            topic,
            bytes(padded - FIXED_HEADER_LENGTH - len(topic)),
            producer_state,
            columns,
            *bodies,
        )
    )
    out += tag_data
    out += property_data
    _U32.pack_into(out, CRC_OFFSET, zlib.crc32(memoryview(out)[CRC_START:]))
    return out


def stamp_batch(batch: bytes, producer_id: int, base_sequence: int, epoch: int) -> bytes:
    """``batch`` (without a producer state) with one: the state's 16 bytes after the topic's
    padding, the attribute flag set, the total length and the CRC made again. One copy. The
    reference of the stamp the send's envelope does in C (``_send_encode.c``)."""
    (topic_length,) = _U16.unpack_from(batch, TOPIC_LENGTH_OFFSET)
    position = producer_state_position(topic_length)
    head = bytearray(batch[:position])
    (attributes,) = _U16.unpack_from(head, ATTRIBUTES_OFFSET)
    _U16.pack_into(head, ATTRIBUTES_OFFSET, attributes | PRODUCER_STATE_FLAG)
    _I32.pack_into(head, TOTAL_LENGTH_OFFSET, len(batch) + PRODUCER_STATE_STRUCT.size)
    state = PRODUCER_STATE_STRUCT.pack(producer_id, base_sequence, epoch, 0)
    tail = memoryview(batch)[position:]
    crc = zlib.crc32(tail, zlib.crc32(state, zlib.crc32(memoryview(head)[CRC_START:])))
    _U32.pack_into(head, CRC_OFFSET, crc)
    return b"".join((head, state, tail))


@functools.lru_cache(maxsize=256)
def _zeros(count: int) -> tuple[int, ...]:
    return (0,) * count
