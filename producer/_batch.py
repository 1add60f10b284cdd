"""A send's record batch and its results: the producer's side of the record batch format.

:func:`encode_messages` turns the messages of one send into one record batch
(:mod:`common.record_batch`), once: a retry sends the same bytes (the broker patches the queue
id it stores them under). :class:`SendResults` is the answer of a batch, whose broker said only
where the batch starts; each :class:`SendResult` is made when it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Final, overload

from aeromq.client import Message, MessageQueue, UniqueMessageIdGenerator
from aeromq.common import (
    PROPERTY_UNIQ_KEY,
    PROPERTY_WAIT_STORE_MSG_OK,
    encode_batch,
    encode_offset_message_id,
    pack_host_field,
    split_tag,
)
from aeromq.common.record_batch import TIMER_FLAG, TRANSACTION_PREPARED_FLAG
from aeromq.producer._send_result import SendResult, SendStatus

__all__ = ["SendResults", "encode_messages", "encode_one", "pack_born_host"]


@lru_cache(maxsize=64)
def pack_born_host(host: str) -> bytes:
    """``"a.b.c.d:port"`` as a batch's 8-byte host field (IPv4 address, i32 port); a host that
    is not IPv4 packs as zeros (the field is informational)."""
    address, _, port = host.rpartition(":")
    try:
        return pack_host_field(address, int(port or 0))
    except ValueError:
        return bytes(8)


_WAIT_ONLY: Final = {PROPERTY_WAIT_STORE_MSG_OK: "true"}
"""The properties of a message made with no tag, key or user property: the common case."""
_WAIT_ONLY_HEAD: Final = f"{PROPERTY_WAIT_STORE_MSG_OK}\x01true\x02{PROPERTY_UNIQ_KEY}\x01"
_WAIT_ONLY_JOIN: Final = f"\x02{_WAIT_ONLY_HEAD}"
_TIMER_PROPERTIES: Final = frozenset(("TIMER_DELIVER_MS", "DELAY", "TIMER_DELAY_SEC"))
"""A message with one of these is a timer message: its batch gets ``TIMER_FLAG``."""


def encode_messages(
    messages: Sequence[Message],
    ids: UniqueMessageIdGenerator,
    born_timestamp_ms: int,
    born_host: bytes,
    bodies: Sequence[bytes] | None = None,
) -> tuple[bytes, list[str]]:
    """The record batch of ``messages`` (one topic) and their unique ids, in order.

    A message without a unique id (``UNIQ_KEY``) gets one here, set on the message too, as
    RocketMQ's producer does (a message listed twice keeps the first). Tags go to the batch's
    tag column, every other property to the stored property string. ``bodies``: the
    messages' bodies when the caller has them already.

    A batch whose messages carry only ``WAIT=true`` (no tag, key, user property or id yet) is
    encoded without a loop over each message's properties: the property strings are one
    template joined with the ids, of one length each.
    """
    if bodies is None:
        bodies = [message.body for message in messages]
    if len(messages) == 1 and messages[0]._properties == _WAIT_ONLY:
        return encode_one(messages, ids, born_timestamp_ms, born_host)
    # the dicts behind Message.properties: the producer sets UNIQ_KEY in them, as
    # put_system_property does, without a read-only proxy per message
    views = [message._properties for message in messages]
    count = len(views)
    flags = [message.flag for message in messages]
    if views.count(_WAIT_ONLY) == count:
        fresh = ids.next_ids(count, born_timestamp_ms)
        pairs = zip(views, fresh, strict=True)
        unique_ids = [view.setdefault(PROPERTY_UNIQ_KEY, unique) for view, unique in pairs]
        properties = (_WAIT_ONLY_HEAD + _WAIT_ONLY_JOIN.join(unique_ids) + "\x02").encode()
        width = len(_WAIT_ONLY_HEAD) + len(fresh[0]) + 1  # one generator's ids: one length
        batch = encode_batch(
            messages[0].topic.encode(),
            bodies,
            None,
            properties,
            property_lengths=[width] * count,
            flags=flags if any(flags) else None,
            born_timestamp_ms=born_timestamp_ms,
            born_host=born_host,
        )
        return bytes(batch), unique_ids
    missing = [view for view in views if PROPERTY_UNIQ_KEY not in view]
    if missing:
        fresh = ids.next_ids(len(missing), born_timestamp_ms)
        for view, unique in zip(missing, fresh, strict=True):
            view.setdefault(PROPERTY_UNIQ_KEY, unique)
    unique_ids = [view[PROPERTY_UNIQ_KEY] for view in views]
    tags, property_list = zip(*[split_tag(view) for view in views], strict=True)
    timer = not all(map(_TIMER_PROPERTIES.isdisjoint, views))  # ~110 ns a message (timeit)
    half = "TRAN_MSG" in views[0]  # a half message (producer._transaction): ~18 ns a batch
    batch = encode_batch(
        messages[0].topic.encode(),
        bodies,
        tags,
        property_list,
        flags=flags if any(flags) else None,
        born_timestamp_ms=born_timestamp_ms,
        born_host=born_host,
        attributes=(TIMER_FLAG if timer else 0) | (TRANSACTION_PREPARED_FLAG if half else 0),
    )
    return bytes(batch), unique_ids


def encode_one(
    messages: Sequence[Message],
    ids: UniqueMessageIdGenerator,
    born_timestamp_ms: int,
    born_host: bytes,
) -> tuple[bytes, list[str]]:
    """:func:`encode_messages` of one message (``messages``, of one): of one with only
    ``WAIT=true`` (the common send) in a third of the calls of the general path, which any
    other takes. Caller: ``encode_messages``, ``SendPath.send_one``."""
    message = messages[0]
    if message._properties != _WAIT_ONLY:
        return encode_messages(messages, ids, born_timestamp_ms, born_host)
    unique = ids.next_id(born_timestamp_ms)
    message._properties[PROPERTY_UNIQ_KEY] = unique
    properties = (_WAIT_ONLY_HEAD + unique + "\x02").encode()
    flag = message.flag
    batch = encode_batch(
        message.topic.encode(),
        [message.body],
        None,
        properties,
        property_lengths=[len(properties)],
        flags=[flag] if flag else None,
        born_timestamp_ms=born_timestamp_ms,
        born_host=born_host,
    )
    return bytes(batch), [unique]


class SendResults(Sequence[SendResult]):
    """The results of one stored batch, in message order, each made when first read.

    The broker answers a batch with its queue, first queue offset and first commit log offset;
    message ``i`` is at ``queue_offset + i`` and ``commit_log_offset + i``. Equal to a list of
    the same results.
    """

    __slots__ = (
        "_made",
        "commit_log_offset",
        "message_queue",
        "queue_offset",
        "send_status",
        "store_host",
        "unique_ids",
    )

    def __init__(
        self,
        send_status: SendStatus,
        message_queue: MessageQueue,
        queue_offset: int,
        commit_log_offset: int,
        store_host: tuple[str, int],
        unique_ids: Sequence[str],
    ) -> None:
        self.send_status = send_status
        self.message_queue = message_queue
        self.queue_offset = queue_offset
        self.commit_log_offset = commit_log_offset
        self.store_host = store_host
        self.unique_ids = unique_ids
        self._made: dict[int, SendResult] = {}

    def __len__(self) -> int:
        return len(self.unique_ids)

    def _result(self, index: int) -> SendResult:
        made = self._made.get(index)
        if made is None:
            host, port = self.store_host
            made = self._made[index] = SendResult(
                self.send_status,
                self.unique_ids[index],
                encode_offset_message_id(host, port, self.commit_log_offset + index),
                self.message_queue,
                self.queue_offset + index,
            )
        return made

    @overload
    def __getitem__(self, index: int) -> SendResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[SendResult]: ...

    def __getitem__(self, index: int | slice) -> SendResult | list[SendResult]:
        if isinstance(index, slice):
            return [self._result(i) for i in range(*index.indices(len(self)))]
        count = len(self.unique_ids)  # not len(self): a Python call of __len__ a send
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(f"result index out of range: index={index} count={count}")
        return self._result(index)

    def __iter__(self) -> Iterator[SendResult]:
        return (self._result(i) for i in range(len(self)))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SendResults | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list of its results: unhashable, as a list

    def __repr__(self) -> str:
        return (
            f"SendResults(send_status={self.send_status.name}, queue={self.message_queue}, "
            f"queue_offset={self.queue_offset}, count={len(self)})"
        )
