"""Encoding a put's messages into records, in one pass, into a reused scratch buffer.

Caller: the ``MessageStore``, under its put lock (queue offsets, physical offsets and the
store time are known). Validation, property encoding, tag hashes and record packing happen
in the same loop, and the commit log then copies the whole batch into its segment at once.
If the batch has to start a new segment, ``rebase`` moves it (physical offset fields and
record CRCs are rewritten). No I/O here.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence

from aeromq.broker.store._message import InboundMessage
from aeromq.broker.store._record import (
    CRC_LENGTH,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC,
    PHYSICAL_OFFSET_OFFSET,
    record_length,
    record_struct,
)
from aeromq.broker.store._results import PutMessageStatus
from aeromq.common import (
    NAME_VALUE_SEPARATOR,
    PROPERTY_KEYS,
    PROPERTY_SEPARATOR,
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    tag_hash_code,
)

__all__ = ["EncodedBatch"]

_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_TAG_HASHES: dict[str, int] = {}
_TAG_CACHE_LIMIT = 65536


class EncodedBatch:
    """The records of the last encoded batch: ``view[:total]``, with each record's size,
    tag hash, and the indexes of the messages that carry keys."""

    def __init__(self, capacity: int = 64 * 1024) -> None:
        self.scratch = bytearray(capacity)
        self.view = memoryview(self.scratch)
        self.total = 0
        self.base_offset = 0
        self.sizes: list[int] = []
        self.tags: list[int] = []
        self.keyed: list[int] = []

    def encode(
        self,
        messages: Sequence[InboundMessage],
        topic: str,
        topic_bytes: bytes,
        queue_id: int,
        first_queue_offset: int,
        base_offset: int,
        store_timestamp_ms: int,
        store_host: bytes,
        max_record_bytes: int,
        max_batch_bytes: int,
        index_keys: bool,
    ) -> PutMessageStatus:
        """Encode ``messages`` as if the batch starts at physical ``base_offset``.

        Returns ``PUT_OK``, or the status that rejects the whole batch (nothing is kept).
        """
        sizes: list[int] = []
        tags: list[int] = []
        keyed: list[int] = []
        self.sizes, self.tags, self.keyed = sizes, tags, keyed
        self.total = 0
        self.base_offset = base_offset
        topic_length = len(topic_bytes)
        fixed = record_length(0, topic_length, 0)
        crc32 = zlib.crc32
        pack_crc = _U32.pack_into
        add_size = sizes.append
        add_tag = tags.append
        hashes = _TAG_HASHES
        scratch = self.scratch
        view = self.view
        capacity = len(scratch)
        last_body = last_properties = -1
        packer = record_struct(0, topic_length, 0)
        position = 0
        queue_offset = first_queue_offset
        try:
            for message in messages:
                if message.topic != topic or message.queue_id != queue_id:
                    return PutMessageStatus.MESSAGE_ILLEGAL
                props = message.properties
                if props:
                    text = ""  # common.encode_properties, inlined in the per-message loop
                    for name, value in props.items():
                        text += name + NAME_VALUE_SEPARATOR + value + PROPERTY_SEPARATOR
                    encoded = text.encode()
                    properties_length = len(encoded)
                    if properties_length > MAX_PROPERTIES_LENGTH:
                        return PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
                    tag = props.get(PROPERTY_TAGS)
                    if tag:
                        code = hashes.get(tag)
                        if code is None:
                            code = tag_hash_code(tag)
                            if len(hashes) < _TAG_CACHE_LIMIT:
                                hashes[tag] = code
                        add_tag(code)
                    else:
                        add_tag(0)
                    if index_keys and (PROPERTY_KEYS in props or PROPERTY_UNIQ_KEY in props):
                        keyed.append(queue_offset - first_queue_offset)
                else:
                    encoded = b""
                    properties_length = 0
                    add_tag(0)
                body = message.body
                body_length = len(body)
                size = fixed + body_length + properties_length
                if size > max_record_bytes:
                    return PutMessageStatus.MESSAGE_ILLEGAL
                end = position + size
                if end > capacity:
                    if end > max_batch_bytes:
                        return PutMessageStatus.MESSAGE_ILLEGAL
                    view.release()
                    scratch.extend(bytes(max(end, 2 * capacity) - capacity))
                    view = self.view = memoryview(scratch)
                    capacity = len(scratch)
                if body_length != last_body or properties_length != last_properties:
                    last_body = body_length
                    last_properties = properties_length
                    packer = record_struct(body_length, topic_length, properties_length)
                packer.pack_into(
                    scratch,
                    position,
                    size,
                    MESSAGE_MAGIC,
                    crc32(body),
                    queue_id,
                    message.flag,
                    queue_offset,
                    base_offset + position,
                    message.sys_flag,
                    message.born_timestamp_ms,
                    message.born_host,
                    store_timestamp_ms,
                    store_host,
                    message.reconsume_times,
                    message.prepared_transaction_offset,
                    body_length,
                    body,
                    topic_length,
                    topic_bytes,
                    properties_length,
                    encoded,
                )
                end -= 4  # the record CRC
                pack_crc(scratch, end, crc32(view[position:end]))
                add_size(size)
                position = end + 4
                queue_offset += 1
        except (struct.error, TypeError, ValueError, AttributeError, UnicodeError):
            return PutMessageStatus.MESSAGE_ILLEGAL
        if position > max_batch_bytes or not sizes:
            return PutMessageStatus.MESSAGE_ILLEGAL
        self.total = position
        return PutMessageStatus.PUT_OK

    def rebase(self, base_offset: int) -> None:
        """Move the encoded batch to start at physical ``base_offset`` (a new segment)."""
        scratch = self.scratch
        view = self.view
        position = 0
        for size in self.sizes:
            _I64.pack_into(scratch, position + PHYSICAL_OFFSET_OFFSET, base_offset + position)
            end = position + size - CRC_LENGTH
            _U32.pack_into(scratch, end, zlib.crc32(view[position:end]))
            position += size
        self.base_offset = base_offset
