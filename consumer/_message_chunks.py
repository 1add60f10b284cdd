"""Messages made elsewhere (a test broker, an application's own ``MessageExt``) as column
chunks: encoded into record batches, one per run of consecutive offsets of one queue, and read
back as a pull answer is, so that every consumer path takes one kind of batch.

Caller: :func:`~consumer.message_batch.as_message_batch` (the consumer's ``poll`` of messages
that did not come from a pull). No I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from aeromq.client import MessageExt, MessageQueue
from aeromq.client.message import HostAddress
from aeromq.common.record_batch import (
    PulledChunk,
    encode_batch,
    pack_host_field,
    patch_batch,
    read_pulled_chunk,
    split_tag,
)

__all__ = ["encoded_chunks"]


def encoded_chunks(messages: Sequence[MessageExt]) -> list[PulledChunk]:
    """The chunks of ``messages``, in order: one per run of consecutive offsets of one queue
    (of one topic, broker and queue id)."""
    chunks: list[PulledChunk] = []
    run: list[MessageExt] = []

    def flush() -> None:
        first = run[0]
        queue = MessageQueue(first.topic, first.broker_name, first.queue_id)
        end = first.queue_offset + len(run)
        chunk = read_pulled_chunk(
            _encoded(run), queue, first.broker_name, first.queue_offset, end, None
        )
        if chunk is not None:
            chunks.append(chunk)

    for message in messages:
        if run and (
            message.queue_offset != run[-1].queue_offset + 1
            or message.queue_id != run[-1].queue_id
            or message.topic != run[-1].topic
            or message.broker_name != run[-1].broker_name
        ):
            flush()
            run = []
        run.append(message)
    if run:
        flush()
    return chunks


def _encoded(run: list[MessageExt]) -> bytes:
    first = run[0]
    tags, properties = zip(*[split_tag(message.properties) for message in run], strict=True)
    data = encode_batch(
        first.topic.encode(),
        [message.body for message in run],
        tags,
        properties,
        flags=[message.flag for message in run],
        born_timestamp_ms=first.born_timestamp_ms,
        born_deltas_ms=[message.born_timestamp_ms - first.born_timestamp_ms for message in run],
        born_host=_pack_host(first.born_host),
        reconsume_times=first.reconsume_times,
        attributes=first.sys_flag,
    )
    patch_batch(
        data,
        0,
        first.queue_offset,
        first.commit_log_offset,
        first.store_timestamp_ms,
        _pack_host(first.store_host),
        first.queue_id,
    )
    return bytes(data)


def _pack_host(host: HostAddress) -> bytes:
    try:
        return pack_host_field(*host)
    except ValueError:
        return bytes(8)
