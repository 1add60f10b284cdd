"""Compressed bodies: a batch's bodies as one LZ4, Zstandard or zlib block, made by the producer
(:func:`compress_batch`) and inflated by readers (:func:`inflate_batch`, :func:`inflate_answer`).

The layout is in ``descriptor.py`` ("Compressed bodies"): :data:`COMPRESSED_FLAG` and the codec
in the Attributes, the bodies replaced by one block, everything else as it was. The broker
stores and serves such a batch as it came (its checks, tag filters, key index and SQL92
filters read the columns, tags and properties, which stay plain); a reader inflates it back to
the plain layout, after checking the stored CRC, before it reads records.

Compression is per batch, as Kafka's, so a batch of many small JSON-like bodies compresses
well; a batch whose bodies are under ``min_body_bytes`` in all (RocketMQ's
``compressMsgBodyOverHowmuch``, 4 KiB by default) or that would not get smaller is left as it
is. Inflation is bounded: a block must inflate to exactly the body lengths' sum, which the
broker bounded by its maximum message size, or the batch is corrupt.

The codecs, for speed (the ``lz4`` and ``zstandard`` packages wrap the reference C libraries):

=====  ======================  =====================================================
type   name                    the block
=====  ======================  =====================================================
1      ``lz4``                 an LZ4 block, no size header (the lengths say it)
2      ``zstd``                a Zstandard frame (level 3 unless told)
3      ``zlib``                a zlib stream (level 6 unless told; the standard library)
=====  ======================  =====================================================

Caller: the producer (a request's batch, after its sends were merged), the pull-answer reader
(``reader.py``), :class:`~common.record_batch.RecordBatch` (the broker's reads of records). No
I/O.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Final

import numpy as np

from aeromq.common._errors import CorruptMessageError, IllegalArgumentError, NotSupportedError
from aeromq.common.record_batch.chunk import _corrupt
from aeromq.common.record_batch.descriptor import (
    ATTRIBUTES_OFFSET,
    BASE_QUEUE_OFFSET_OFFSET,
    BATCH_MAGIC,
    COMPRESSED_FLAG,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_TYPE_SHIFT,
    CRC_OFFSET,
    CRC_START,
    FIXED_HEADER_LENGTH,
    MAGIC_OFFSET,
    RECORD_COUNT_OFFSET,
    RECORD_OVERHEAD,
    TOPIC_LENGTH_OFFSET,
    TOTAL_LENGTH_OFFSET,
    batch_header_length,
    compression_type,
)

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from aeromq.common.record_batch.chunk import PulledQueue

__all__ = [
    "DEFAULT_COMPRESS_OVER_BYTES",
    "CompressionType",
    "compress_batch",
    "inflate_answer",
    "inflate_batch",
]

DEFAULT_COMPRESS_OVER_BYTES: Final = 4096
"""A batch is compressed when its bodies are this many bytes or more in all (RocketMQ's
``compressMsgBodyOverHowmuch``)."""

_I32: Final = struct.Struct("<i")
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_I64: Final = struct.Struct("<q")


class CompressionType(enum.IntEnum):
    """A batch's codec, RocketMQ's numbering (``CompressionType``: LZ4 1, ZSTD 2, ZLIB 3)."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @classmethod
    def parse(cls, name: str | CompressionType) -> CompressionType:
        """The codec of ``name`` (``"zstd"``, ``"LZ4"``, ...); :class:`~common.IllegalArgumentError`
        (a ValueError) naming the choices."""
        if isinstance(name, CompressionType):
            return name
        try:
            return cls[name.strip().upper()]
        except KeyError:
            choices = ", ".join(member.name.lower() for member in cls)
            raise IllegalArgumentError(
                "no such compression", compression=name, choices=choices
            ) from None


_local = threading.local()


def _zstd_compressor(level: int) -> Callable[[Buffer], bytes]:
    compressors: dict[int, Callable[[Buffer], bytes]] | None = getattr(_local, "zstd", None)
    if compressors is None:
        compressors = _local.zstd = {}
    compress = compressors.get(level)
    if compress is None:
        zstandard = _import("zstandard")
        compress = compressors[level] = zstandard.ZstdCompressor(level=level).compress
    return compress


def _zstd_decompressor() -> Callable[..., bytes]:
    decompress: Callable[..., bytes] | None = getattr(_local, "unzstd", None)
    if decompress is None:
        zstandard = _import("zstandard")
        decompress = _local.unzstd = zstandard.ZstdDecompressor().decompress
    return decompress


def _import(name: str) -> ModuleType:
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise NotSupportedError(
            "the package of this compression is not installed", package=name.split(".")[0]
        ) from exc


def _compress(codec: CompressionType, data: memoryview, level: int | None) -> bytes:
    if codec is CompressionType.LZ4:
        compress: Callable[..., bytes] = _import("lz4.block").compress
        return compress(data, store_size=False)
    if codec is CompressionType.ZSTD:
        return _zstd_compressor(3 if level is None else level)(data)
    return zlib.compress(data, 6 if level is None else level)


def _inflate(codec: int, block: memoryview, size: int) -> bytes:
    """``block`` inflated by ``codec``; ValueError unless it makes exactly ``size`` bytes."""
    try:
        if codec == CompressionType.LZ4:
            decompress: Callable[..., bytes] = _import("lz4.block").decompress
            data = decompress(block, uncompressed_size=size)
        elif codec == CompressionType.ZSTD:
            data = _zstd_decompressor()(block, max_output_size=size)
        elif codec == CompressionType.ZLIB:
            inflater = zlib.decompressobj()
            data = inflater.decompress(block, size)
            if not inflater.eof or inflater.unconsumed_tail:
                raise ValueError("the zlib stream does not end where the block does")
        else:
            raise ValueError(f"unknown codec {codec}")
    except NotSupportedError:
        raise
    except Exception as exc:  # each library raises its own kind
        raise ValueError(str(exc) or type(exc).__name__) from exc
    if len(data) != size:
        raise ValueError(f"inflated to {len(data)} bytes, the body lengths say {size}")
    return data


class _Layout:
    """Where a batch's parts are: header, columns, the bodies (plain or a block), the rest."""

    __slots__ = ("attributes", "bodies_length", "body_total", "count", "data_start", "length")

    def __init__(self, batch: memoryview) -> None:
        self.length = _I32.unpack_from(batch, TOTAL_LENGTH_OFFSET)[0]
        self.count = count = _I32.unpack_from(batch, RECORD_COUNT_OFFSET)[0]
        self.attributes = attributes = _U16.unpack_from(batch, ATTRIBUTES_OFFSET)[0]
        topic_length = _U16.unpack_from(batch, TOPIC_LENGTH_OFFSET)[0]
        header_length = batch_header_length(topic_length, attributes)
        self.data_start = header_length + count * RECORD_OVERHEAD
        lengths = np.frombuffer(batch, "<i4", 3 * count, header_length + 8 * count)
        totals = lengths.reshape(3, count).sum(axis=1, dtype=np.int64).tolist()
        self.body_total = int(totals[0])
        rest = int(totals[1]) + int(totals[2])
        self.bodies_length = (
            self.length - self.data_start - rest
            if attributes & COMPRESSED_FLAG
            else self.body_total
        )


def compress_batch(
    batch: bytes,
    codec: CompressionType,
    *,
    level: int | None = None,
    min_body_bytes: int = DEFAULT_COMPRESS_OVER_BYTES,
) -> bytes:
    """``batch`` (a well-formed plain batch, a producer's) with its bodies compressed by
    ``codec``, the flag and codec set, the total length and the CRC made again; ``batch`` itself
    when its bodies are under ``min_body_bytes`` in all, it is compressed already, or the block
    would not be smaller than the bodies."""
    if _U16.unpack_from(batch, ATTRIBUTES_OFFSET)[0] & COMPRESSED_FLAG:
        return batch  # (a retry's, compressed when first sent)
    view = memoryview(batch)
    layout = _Layout(view)
    if layout.body_total < min_body_bytes:
        return batch
    start = layout.data_start
    end = start + layout.body_total
    block = _compress(codec, view[start:end], level)
    if len(block) >= layout.body_total:
        return batch
    head = bytearray(view[:start])
    attributes = (layout.attributes & ~COMPRESSION_TYPE_MASK) | COMPRESSED_FLAG
    _U16.pack_into(head, ATTRIBUTES_OFFSET, attributes | (int(codec) << COMPRESSION_TYPE_SHIFT))
    _I32.pack_into(head, TOTAL_LENGTH_OFFSET, len(head) + len(block) + len(view) - end)
    tail = view[end:]
    crc = zlib.crc32(tail, zlib.crc32(block, zlib.crc32(memoryview(head)[CRC_START:])))
    _U32.pack_into(head, CRC_OFFSET, crc)
    return b"".join((head, block, tail))


def inflate_batch(batch: Buffer) -> bytes:
    """The plain batch of a compressed one (its bodies inflated, the flag and codec cleared,
    the total length and the CRC made again); ValueError when the block does not inflate to
    the body lengths' sum. The caller checked the stored CRC (:func:`inflate_answer` does)."""
    view = memoryview(batch).cast("B")
    layout = _Layout(view)
    start = layout.data_start
    end = start + layout.bodies_length
    bodies = _inflate(compression_type(layout.attributes), view[start:end], layout.body_total)
    head = bytearray(view[:start])
    attributes = layout.attributes & ~(COMPRESSED_FLAG | COMPRESSION_TYPE_MASK)
    _U16.pack_into(head, ATTRIBUTES_OFFSET, attributes)
    _I32.pack_into(head, TOTAL_LENGTH_OFFSET, len(head) + len(bodies) + len(view) - end)
    tail = view[end:]
    crc = zlib.crc32(tail, zlib.crc32(bodies, zlib.crc32(memoryview(head)[CRC_START:])))
    _U32.pack_into(head, CRC_OFFSET, crc)
    return b"".join((head, bodies, tail))


def inflate_answer(
    data: Buffer, ranges: bytes | None, queue: PulledQueue, pull_offset: int
) -> bytes | None:
    """The batches of a pull answer (back to back, or at ``ranges`` of a mapped commit log
    file: little-endian i64 (position, length) pairs) with every compressed one inflated, back
    to back; None when none is compressed (or the framing is not batches, a range without the
    batch magic among them: the reader says why). A compressed batch whose stored CRC is bad
    raises the reader's own refusal (:class:`~common.CorruptMessageError`, "CRC mismatch", the
    queue, the pull's offset, the answer's length and the batch's position in it); one whose
    block does not inflate raises one naming the queue, the pull's offset and the batch's."""
    view = memoryview(data).cast("B")
    if ranges is not None:
        pairs = np.frombuffer(ranges, "<i8").reshape(-1, 2).tolist()
    else:
        pairs = []
        position = 0
        while position + FIXED_HEADER_LENGTH <= len(view):
            length = _I32.unpack_from(view, position)[0]
            if length < FIXED_HEADER_LENGTH or position + length > len(view):
                return None
            pairs.append([position, length])
            position += length
    parts: list[Buffer] = []
    compressed = False
    # the answer the reader reads: the ranges' batches joined back to back (its refusals name
    # a batch's position there and the answer's length)
    answer_length = len(view) if ranges is None else sum(length for _, length in pairs)
    answer_position = 0
    for position, length in pairs:
        at = answer_position
        answer_position += length
        if position < 0 or length < FIXED_HEADER_LENGTH or position + length > len(view):
            return None
        batch = view[position : position + length]
        if _U32.unpack_from(batch, MAGIC_OFFSET)[0] != BATCH_MAGIC:
            return None  # not a batch (a damaged length before it): the reader names it
        if not _U16.unpack_from(batch, ATTRIBUTES_OFFSET)[0] & COMPRESSED_FLAG:
            parts.append(batch)
            continue
        compressed = True
        offset = _I64.unpack_from(batch, BASE_QUEUE_OFFSET_OFFSET)[0]
        stored = _U32.unpack_from(batch, CRC_OFFSET)[0]
        actual = zlib.crc32(batch[CRC_START:])
        if actual != stored:  # (refused as the reader refuses any batch's CRC, word for word)
            raise _corrupt(
                f"CRC mismatch: stored={stored:#010x} computed={actual:#010x}",
                queue,
                pull_offset,
                answer_length,
                at,
            )
        try:
            parts.append(inflate_batch(batch))
        except ValueError as exc:
            raise CorruptMessageError(
                f"a compressed batch does not inflate: {exc}",
                topic=queue.topic,
                broker=queue.broker_name,
                queue_id=queue.queue_id,
                pull_offset=pull_offset,
                base_offset=offset,
                compression_type=compression_type(_U16.unpack_from(batch, ATTRIBUTES_OFFSET)[0]),
            ) from exc
    return b"".join(parts) if compressed else None
