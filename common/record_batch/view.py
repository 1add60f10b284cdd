"""A read-only view of one stored batch: :class:`RecordBatch`, its header fields as attributes
and its columns as numpy arrays, records read on demand. A compressed batch
(``COMPRESSED_FLAG``) is read as it is stored but for its bodies, which are inflated on the
first read of one (``compression.py``): tags, properties and columns need no inflating.

Caller: the broker (a pull's filters and lookups read batches of its commit log; recovery and
its store codec decode them) and tests. A pulled answer is read by :mod:`.reader` instead, all
its batches at once. No I/O.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from aeromq.common.record_batch.compression import inflate_batch
from aeromq.common.record_batch.descriptor import (
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    CRC_OFFSET,
    CRC_START,
    HEADER_STRUCT,
    PRODUCER_STATE_FLAG,
    RECORD_OVERHEAD,
    TOPIC_OFFSET,
    ProducerState,
    batch_header_length,
    read_producer_state,
)
from aeromq.common.record_batch.encoder import encode_batch

__all__ = ["RecordBatch"]

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]

_U32: Final = struct.Struct("<I")


class RecordBatch:
    """A read-only view of one batch (header fields as attributes, columns as numpy arrays),
    over a buffer that :func:`check_batch` passed. Per-record values are read on demand.
    ``producer_state`` is the idempotent producer's state, None for a batch without one."""

    __slots__ = (
        "_bodies",
        "_ends",
        "attributes",
        "base_born_timestamp_ms",
        "base_physical_offset",
        "base_queue_offset",
        "born_host",
        "buffer",
        "count",
        "data_start",
        "header_length",
        "length",
        "producer_state",
        "queue_id",
        "reconsume_times",
        "store_host",
        "store_timestamp_ms",
        "tags_start",
        "topic",
    )

    def __init__(self, buffer: bytes | memoryview, position: int = 0) -> None:
        (
            total,
            _magic,
            self.base_queue_offset,
            self.base_physical_offset,
            self.store_timestamp_ms,
            self.store_host,
            self.queue_id,
            _crc,
            count,
            self.reconsume_times,
            self.base_born_timestamp_ms,
            self.born_host,
            self.attributes,
            topic_length,
        ) = HEADER_STRUCT.unpack_from(buffer, position)
        if position or len(buffer) != total:
            buffer = memoryview(buffer)[position : position + total]
        self.buffer = buffer
        self.length = total
        self.count = count
        self.topic = bytes(buffer[TOPIC_OFFSET : TOPIC_OFFSET + topic_length]).decode()
        self.header_length = batch_header_length(topic_length, self.attributes)
        self.producer_state: ProducerState | None = (
            read_producer_state(buffer) if self.attributes & PRODUCER_STATE_FLAG else None
        )
        self.data_start = self.header_length + count * RECORD_OVERHEAD
        self._ends: list[list[int]] | None = None
        self._bodies: bytes | None = None  # a compressed batch's bodies, once inflated
        self.tags_start = -1  # where the tags start: known once ends() ran

    def _column(self, index: int) -> Int32Array:
        count = self.count
        return np.frombuffer(
            self.buffer,
            dtype="<i4",
            count=count,
            offset=self.header_length + (2 + index) * count * 4,
        )

    @property
    def tag_hashes(self) -> Int64Array:
        """The tag hash column (Java's ``hashCode`` of each tag; 0 without one)."""
        return np.frombuffer(self.buffer, dtype="<i8", count=self.count, offset=self.header_length)

    @property
    def body_lengths(self) -> Int32Array:
        """The body length column."""
        return self._column(0)

    @property
    def born_deltas_ms(self) -> Int32Array:
        """The born timestamp column, from ``base_born_timestamp_ms`` (ms)."""
        return self._column(3)

    @property
    def flags(self) -> Int32Array:
        """The flag column."""
        return self._column(4)

    @property
    def compressed(self) -> bool:
        """Whether the bodies are one compressed block (``COMPRESSED_FLAG``)."""
        return bool(self.attributes & COMPRESSED_FLAG)

    @property
    def body_data(self) -> memoryview:
        """All bodies, back to back (Arrow's binary data buffer); inflated when compressed."""
        if self.attributes & COMPRESSED_FLAG:
            return memoryview(self._inflated())
        start = self.data_start
        return memoryview(self.buffer)[start : start + int(self.body_lengths.sum())]

    def _inflated(self) -> bytes:
        """A compressed batch's bodies, back to back (inflated once); ValueError when its
        block does not inflate to the body lengths' sum."""
        bodies = self._bodies
        if bodies is None:
            plain = inflate_batch(self.buffer)
            bodies = self._bodies = plain[
                self.data_start : self.data_start + int(self.body_lengths.sum())
            ]
        return bodies

    def crc_ok(self) -> bool:
        """Whether the stored CRC matches the bytes (C speed, one call)."""
        with memoryview(self.buffer) as view:
            return bool(
                zlib.crc32(view[CRC_START:]) == _U32.unpack_from(self.buffer, CRC_OFFSET)[0]
            )

    def ends(self) -> list[list[int]]:
        """``[body ends, tag ends, properties ends]``: absolute end positions in the buffer
        (as Python ints, made once per batch), for per-record slicing; a compressed batch's
        body ends are where they are once inflated (from ``data_start`` all the same)."""
        ends = self._ends
        if ends is None:
            count = self.count
            lengths = np.frombuffer(
                self.buffer, dtype="<i4", count=3 * count, offset=self.header_length + 8 * count
            ).astype(np.int64)
            bodies_length = body_total = int(lengths[:count].sum())
            if self.attributes & COMPRESSED_FLAG:  # the tags follow the block, not the bodies
                bodies_length = self.length - self.data_start - int(lengths[count:].sum())
                lengths[count] += bodies_length - body_total
            lengths[0] += self.data_start
            flat = np.cumsum(lengths)
            self.tags_start = self.data_start + bodies_length
            ends = self._ends = [
                flat[:count].tolist(),
                flat[count : 2 * count].tolist(),
                flat[2 * count :].tolist(),
            ]
        return ends

    def body(self, index: int) -> bytes:
        """Record ``index``'s body (of a compressed batch: inflated, once for all)."""
        body_ends = self.ends()[0]
        start = body_ends[index - 1] if index else self.data_start
        if self.attributes & COMPRESSED_FLAG:  # ends in the inflated bodies, from data_start
            data_start = self.data_start
            return self._inflated()[start - data_start : body_ends[index] - data_start]
        return bytes(self.buffer[start : body_ends[index]])

    def tag(self, index: int) -> str | None:
        """Record ``index``'s tag (None without one)."""
        tag_ends = self.ends()[1]
        start = tag_ends[index - 1] if index else self.tags_start
        end = tag_ends[index]
        return bytes(self.buffer[start:end]).decode() if end > start else None

    def properties_bytes(self, index: int) -> bytes:
        """Record ``index``'s property string (RocketMQ's, without ``TAGS``)."""
        ends = self.ends()
        property_ends = ends[2]
        start = property_ends[index - 1] if index else ends[1][-1]
        return bytes(self.buffer[start : property_ends[index]])

    def record_parts(self) -> tuple[list[bytes], list[str | None], list[bytes]]:
        """Each record's body, tag (None without one) and property string, in record order (a
        compressed batch's bodies inflated): what :meth:`reencoded` takes back, changed."""
        body_ends, tag_ends, property_ends = self.ends()
        data = bytes(self.buffer)
        bodies_data, shift = data, 0
        if self.attributes & COMPRESSED_FLAG:  # body ends count in the inflated bodies
            bodies_data, shift = self._inflated(), self.data_start
        bodies: list[bytes] = []
        tags: list[str | None] = []
        properties: list[bytes] = []
        body_start, tag_start, property_start = self.data_start, self.tags_start, tag_ends[-1]
        for body_end, tag_end, property_end in zip(body_ends, tag_ends, property_ends, strict=True):
            bodies.append(bodies_data[body_start - shift : body_end - shift])
            tags.append(data[tag_start:tag_end].decode() if tag_end > tag_start else None)
            properties.append(data[property_start:property_end])
            body_start, tag_start, property_start = body_end, tag_end, property_end
        return bodies, tags, properties

    def reencoded(
        self,
        topic: bytes,
        bodies: Sequence[bytes],
        tags: Sequence[str | None],
        properties: Sequence[bytes],
        *,
        drop_attributes: int = 0,
    ) -> bytearray:
        """A plain batch of ``topic`` with these records' parts and this batch's per-record
        flags, born times and host, reconsume times and attributes (less ``drop_attributes``
        and the compression bits): a batch moved to another topic (the broker's timer and
        transaction holds). Raises ``ValueError``/``OverflowError`` as ``encode_batch``."""
        return encode_batch(
            topic,
            bodies,
            tags,
            properties,
            flags=self.flags.tolist(),
            born_timestamp_ms=self.base_born_timestamp_ms,
            born_deltas_ms=self.born_deltas_ms.tolist(),
            born_host=bytes(self.born_host),
            reconsume_times=self.reconsume_times,
            attributes=self.attributes
            & ~(drop_attributes | COMPRESSED_FLAG | COMPRESSION_TYPE_MASK),
        )

    def record_size(self, index: int) -> int:
        """The bytes record ``index`` takes: its column values and variable parts."""
        body_ends, tag_ends, property_ends = self.ends()
        body_start = body_ends[index - 1] if index else self.data_start
        tag_start = tag_ends[index - 1] if index else self.tags_start
        property_start = property_ends[index - 1] if index else tag_ends[-1]
        return (
            RECORD_OVERHEAD
            + body_ends[index]
            - body_start
            + tag_ends[index]
            - tag_start
            + property_ends[index]
            - property_start
        )

    def __repr__(self) -> str:
        return (
            f"RecordBatch(topic={self.topic!r}, queue_id={self.queue_id}, count={self.count}, "
            f"base_queue_offset={self.base_queue_offset}, "
            f"base_physical_offset={self.base_physical_offset}, length={self.length})"
        )
