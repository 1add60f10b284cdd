"""``MessageBatch``: pulled messages as columns over the record batches they came in.

A pull answers with stored record batches (:mod:`common._record_batch`); a ``MessageBatch``
keeps them as they came and says which of their records are the consumer's (the ones in the
pulled range that match its subscription). Read it two ways:

- as columns, for data pipelines: :attr:`MessageBatch.queue_offsets`,
  :attr:`~MessageBatch.queue_ids`, :attr:`~MessageBatch.store_timestamps_ms`, ... are numpy
  arrays; :meth:`~MessageBatch.bodies` gives Arrow's binary layout (``int32`` offsets and one
  data buffer), and :meth:`~MessageBatch.to_arrow` a ``pyarrow.RecordBatch``, all without a
  Python object per message;
- as a sequence of :class:`~client.MessageExt` (``batch[i]``, ``for message in batch``): each a
  :class:`BatchMessageExt` whose fields are read from the record batch when asked.

A batch may hold messages of several queues (``poll_batch`` gathers them); its parts are kept
in order, each of one queue.
"""

from __future__ import annotations

import socket
import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import numpy.typing as npt

from aeromq.client import MessageExt, MessageQueue
from aeromq.client.message import HostAddress
from aeromq.common import (
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    RecordBatch,
    decode_properties,
    encode_batch,
    encode_offset_message_id,
    encode_properties,
    patch_batch,
)

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "BatchMessageExt",
    "MessageBatch",
    "MessageBatchPart",
    "as_message_batch",
    "unpack_host",
]

Int64Array = npt.NDArray[np.int64]


@lru_cache(maxsize=1024)
def unpack_host(packed: bytes) -> HostAddress:
    """A batch's 8-byte host field (IPv4 address, i32 port) as ``(ip, port)``."""
    return (
        f"{packed[0]}.{packed[1]}.{packed[2]}.{packed[3]}",
        int.from_bytes(packed[4:8], "little", signed=True),
    )


class MessageBatchPart:
    """The records ``indexes`` (ascending) of one stored ``batch``, of one queue of
    ``broker_name``."""

    __slots__ = ("batch", "broker_name", "indexes", "queue")

    def __init__(
        self, batch: RecordBatch, indexes: Int64Array, broker_name: str, queue: MessageQueue
    ) -> None:
        self.batch = batch
        self.indexes = indexes
        self.broker_name = broker_name
        self.queue = queue

    def __len__(self) -> int:
        return len(self.indexes)

    def sliced(self, start: int, stop: int) -> MessageBatchPart:
        return MessageBatchPart(self.batch, self.indexes[start:stop], self.broker_name, self.queue)


def _field(name: str, read: Callable[[BatchMessageExt], Any]) -> Any:
    """A field read from the batch, unless set on the message."""

    def get(self: BatchMessageExt) -> Any:
        overrides = self._overrides
        if overrides is not None and name in overrides:
            return overrides[name]
        return read(self)

    def set_(self: BatchMessageExt, value: Any) -> None:
        if self._overrides is None:
            self._overrides = {}
        self._overrides[name] = value

    return property(get, set_)


class BatchMessageExt(MessageExt):
    """One message of a pulled record batch: a :class:`~client.MessageExt` whose fields are
    read from the batch when asked (and kept, when set)."""

    __slots__ = ("_batch", "_broker", "_index", "_overrides", "_props")

    _batch: RecordBatch
    _index: int
    _broker: str
    _props: dict[str, str] | None
    _overrides: dict[str, Any] | None

    @classmethod
    def wrap(cls, batch: RecordBatch, index: int, broker_name: str) -> BatchMessageExt:
        message = object.__new__(cls)
        message._batch = batch
        message._index = index
        message._broker = broker_name
        message._props = None
        message._overrides = None
        return message

    topic = _field("topic", lambda m: m._batch.topic)
    body = _field("body", lambda m: m._batch.body(m._index))
    flag = _field("flag", lambda m: int(m._batch.flags[m._index]))
    queue_id = _field("queue_id", lambda m: m._batch.queue_id)
    queue_offset = _field("queue_offset", lambda m: m._batch.base_queue_offset + m._index)
    commit_log_offset = _field(
        "commit_log_offset", lambda m: m._batch.base_physical_offset + m._index
    )
    store_size = _field("store_size", lambda m: m._batch.record_size(m._index))
    sys_flag = _field("sys_flag", lambda m: m._batch.attributes)
    born_timestamp_ms = _field(
        "born_timestamp_ms",
        lambda m: m._batch.base_born_timestamp_ms + int(m._batch.born_deltas_ms[m._index]),
    )
    born_host = _field("born_host", lambda m: unpack_host(m._batch.born_host))
    store_timestamp_ms = _field("store_timestamp_ms", lambda m: m._batch.store_timestamp_ms)
    store_host = _field("store_host", lambda m: unpack_host(m._batch.store_host))
    reconsume_times = _field("reconsume_times", lambda m: m._batch.reconsume_times)

    @property
    def broker_name(self) -> str:
        return self._broker

    @broker_name.setter
    def broker_name(self, value: str) -> None:
        self._broker = value

    @property
    def tags(self) -> str | None:
        if self._props is None:
            return self._batch.tag(self._index)
        return self._props.get(PROPERTY_TAGS)

    @property
    def _properties(self) -> dict[str, str]:
        props = self._props
        if props is None:
            batch = self._batch
            props = decode_properties(batch.properties_bytes(self._index))
            tag = batch.tag(self._index)
            if tag is not None:
                props[PROPERTY_TAGS] = tag
            self._props = props
        return props

    @_properties.setter
    def _properties(self, value: dict[str, str]) -> None:
        self._props = value

    @property
    def body_crc(self) -> int:
        """CRC-32 of the body (RocketMQ's ``bodyCRC``)."""
        return zlib.crc32(self.body)

    @property
    def offset_msg_id(self) -> str:
        host, port = self.store_host
        return encode_offset_message_id(host, port, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        return self._properties.get(PROPERTY_UNIQ_KEY) or self.offset_msg_id

    def __eq__(self, other: object) -> bool:
        """Equal to any ``MessageExt`` (from a batch or not) with the same fields."""
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self._eq_key() == other._eq_key()

    __hash__ = None  # type: ignore[assignment]


class MessageBatch(Sequence[MessageExt]):
    """Pulled messages over their record batches (see the module doc)."""

    __slots__ = ("_parts", "_starts")

    def __init__(self, parts: Sequence[MessageBatchPart] = ()) -> None:
        self._parts = [part for part in parts if len(part)]
        starts = [0]
        for part in self._parts:
            starts.append(starts[-1] + len(part))
        self._starts = starts

    @property
    def parts(self) -> list[MessageBatchPart]:
        return self._parts

    @classmethod
    def concat(cls, batches: Sequence[MessageBatch]) -> MessageBatch:
        """One batch of ``batches``' messages, in order (no copy of the data)."""
        return cls([part for batch in batches for part in batch._parts])

    # -- as a sequence of messages -------------------------------------------------------

    def __len__(self) -> int:
        return self._starts[-1]

    @overload
    def __getitem__(self, index: int) -> MessageExt: ...

    @overload
    def __getitem__(self, index: slice) -> MessageBatch: ...

    def __getitem__(self, index: int | slice) -> MessageExt | MessageBatch:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a MessageBatch slice takes no step")
            return self._slice(start, stop)
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(f"message index out of range: index={index} count={count}")
        starts = self._starts
        part_number = int(np.searchsorted(starts, index, side="right")) - 1
        part = self._parts[part_number]
        return BatchMessageExt.wrap(
            part.batch, int(part.indexes[index - starts[part_number]]), part.broker_name
        )

    def _slice(self, start: int, stop: int) -> MessageBatch:
        out: list[MessageBatchPart] = []
        for part, first in zip(self._parts, self._starts, strict=False):
            end = first + len(part)
            if end <= start or first >= stop:
                continue
            out.append(part.sliced(max(start - first, 0), min(stop, end) - first))
        return MessageBatch(out)

    def __iter__(self) -> Iterator[MessageExt]:
        wrap = BatchMessageExt.wrap
        for part in self._parts:
            batch = part.batch
            broker = part.broker_name
            for index in part.indexes.tolist():
                yield wrap(batch, index, broker)

    def messages(self) -> list[MessageExt]:
        """Every message as a :class:`BatchMessageExt`, in order."""
        return list(self)

    def __repr__(self) -> str:
        queues = sorted({str(part.queue) for part in self._parts})
        return f"MessageBatch(count={len(self)}, queues={queues})"

    # -- as columns ------------------------------------------------------------------------

    def _gather(self, values: Sequence[Any], dtype: Any) -> npt.NDArray[Any]:
        if not self._parts:
            return np.empty(0, dtype=dtype)
        return np.concatenate([np.asarray(v, dtype=dtype) for v in values])

    @property
    def queue_offsets(self) -> Int64Array:
        return self._gather(
            [part.indexes + part.batch.base_queue_offset for part in self._parts], np.int64
        )

    @property
    def commit_log_offsets(self) -> Int64Array:
        return self._gather(
            [part.indexes + part.batch.base_physical_offset for part in self._parts], np.int64
        )

    @property
    def queue_ids(self) -> npt.NDArray[np.int32]:
        return self._gather(
            [np.full(len(part), part.batch.queue_id, dtype=np.int32) for part in self._parts],
            np.int32,
        )

    @property
    def store_timestamps_ms(self) -> Int64Array:
        return self._gather(
            [np.full(len(part), part.batch.store_timestamp_ms, np.int64) for part in self._parts],
            np.int64,
        )

    @property
    def born_timestamps_ms(self) -> Int64Array:
        return self._gather(
            [
                part.batch.born_deltas_ms[part.indexes].astype(np.int64)
                + part.batch.base_born_timestamp_ms
                for part in self._parts
            ],
            np.int64,
        )

    @property
    def body_lengths(self) -> npt.NDArray[np.int32]:
        return self._gather(
            [part.batch.body_lengths[part.indexes] for part in self._parts], np.int32
        )

    @property
    def tag_hashes(self) -> Int64Array:
        return self._gather([part.batch.tag_hashes[part.indexes] for part in self._parts], np.int64)

    @property
    def flags(self) -> npt.NDArray[np.int32]:
        return self._gather([part.batch.flags[part.indexes] for part in self._parts], np.int32)

    @property
    def topics(self) -> list[str]:
        """The topic of each message (one string object per distinct topic)."""
        out: list[str] = []
        for part in self._parts:
            out.extend([part.batch.topic] * len(part))
        return out

    def bodies(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
        """``(offsets, data)``: Arrow's binary layout of the bodies (``offsets`` has one more
        entry than messages; body ``i`` is ``data[offsets[i]:offsets[i + 1]]``)."""
        return self._variable(0)

    def tag_column(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
        """``(offsets, data)`` of the tags (UTF-8; an empty one is no tag)."""
        return self._variable(1)

    def _variable(self, column: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
        lengths_parts: list[npt.NDArray[np.int32]] = []
        data_parts: list[npt.NDArray[np.uint8]] = []
        for part in self._parts:
            lengths, data = _part_column(part, column)
            lengths_parts.append(lengths)
            data_parts.append(data)
        offsets = np.zeros(len(self) + 1, dtype=np.int32)
        if lengths_parts:
            np.cumsum(np.concatenate(lengths_parts), out=offsets[1:])
            data = data_parts[0] if len(data_parts) == 1 else np.concatenate(data_parts)
        else:
            data = np.empty(0, dtype=np.uint8)
        return offsets, data

    def to_arrow(self, *, properties: bool = False) -> pyarrow.RecordBatch:
        """The messages as a ``pyarrow.RecordBatch`` (columns ``topic``, ``broker_name``,
        ``queue_id``, ``queue_offset``, ``tags``, ``body``, ``born_timestamp``,
        ``store_timestamp``, and with ``properties`` a ``properties`` map, which costs a
        Python parse per message). Needs ``pyarrow`` (the ``spark`` extra)."""
        import pyarrow as pa

        count = len(self)
        offsets, data = self.bodies()
        body = pa.Array.from_buffers(
            pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        tag_offsets, tag_data = self.tag_column()
        present = np.diff(tag_offsets) > 0
        tags = pa.Array.from_buffers(
            pa.string(),
            count,
            [
                pa.py_buffer(np.packbits(present, bitorder="little")),
                pa.py_buffer(tag_offsets),
                pa.py_buffer(tag_data),
            ],
            null_count=int(count - present.sum()),
        )
        topics = self._dictionary([(part.batch.topic, len(part)) for part in self._parts])
        brokers = self._dictionary([(part.broker_name, len(part)) for part in self._parts])
        arrays = [
            topics,
            brokers,
            pa.array(self.queue_ids),
            pa.array(self.queue_offsets),
            tags,
            body,
            pa.array(self.born_timestamps_ms).cast(pa.timestamp("ms")),
            pa.array(self.store_timestamps_ms).cast(pa.timestamp("ms")),
        ]
        names = [
            "topic",
            "broker_name",
            "queue_id",
            "queue_offset",
            "tags",
            "body",
            "born_timestamp",
            "store_timestamp",
        ]
        if properties:
            maps: list[list[tuple[str, str]]] = []
            for part in self._parts:
                batch = part.batch
                maps.extend(
                    list(decode_properties(batch.properties_bytes(i)).items())
                    for i in part.indexes.tolist()
                )
            arrays.append(pa.array(maps, type=pa.map_(pa.string(), pa.string())))
            names.append("properties")
        return pa.RecordBatch.from_arrays(arrays, names=names)

    @staticmethod
    def _dictionary(runs: list[tuple[str, int]]) -> pyarrow.Array:
        import pyarrow as pa

        values = sorted({value for value, _ in runs})
        codes = np.concatenate(
            [np.full(n, values.index(value), dtype=np.int32) for value, n in runs]
            or [np.empty(0, dtype=np.int32)]
        )
        return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values, pa.string()))


def _part_column(
    part: MessageBatchPart, column: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.uint8]]:
    """The lengths and the data of the part's records in variable column ``column`` (0 bodies,
    1 tags), gathered without a Python loop over records."""
    batch = part.batch
    lengths_all = batch.body_lengths if column == 0 else batch.tag_lengths
    count = batch.count
    start = batch.data_start
    if column == 1:
        start += int(batch.body_lengths.sum())
    raw = np.frombuffer(batch.buffer, dtype=np.uint8)
    indexes = part.indexes
    if len(indexes) == count:  # the whole batch: its column as it is
        return lengths_all, raw[start : start + int(lengths_all.sum())]
    lengths = lengths_all[indexes]
    if len(indexes) and int(indexes[-1]) - int(indexes[0]) + 1 == len(indexes):  # a run
        first = int(indexes[0])
        begin = start + int(lengths_all[:first].sum())
        return lengths, raw[begin : begin + int(lengths.sum())]
    keep = np.zeros(count, dtype=bool)
    keep[indexes] = True
    column_data = raw[start : start + int(lengths_all.sum())]
    return lengths, column_data[np.repeat(keep, lengths_all)]


def as_message_batch(messages: Sequence[MessageExt]) -> MessageBatch:
    """``messages`` as a :class:`MessageBatch`: itself when it is one; else (messages made
    elsewhere, e.g. by a test broker) encoded into record batches, one per run of consecutive
    offsets of one queue."""
    if isinstance(messages, MessageBatch):
        return messages
    parts: list[MessageBatchPart] = []
    run: list[MessageExt] = []
    for message in messages:
        if run and (
            message.queue_offset != run[-1].queue_offset + 1
            or message.queue_id != run[-1].queue_id
            or message.topic != run[-1].topic
            or message.broker_name != run[-1].broker_name
        ):
            parts.append(_encoded_part(run))
            run = []
        run.append(message)
    if run:
        parts.append(_encoded_part(run))
    return MessageBatch(parts)


def _encoded_part(run: list[MessageExt]) -> MessageBatchPart:
    first = run[0]
    data = encode_batch(
        first.topic.encode(),
        [message.body for message in run],
        [message.tags for message in run],
        [
            encode_properties({k: v for k, v in message.properties.items() if k != PROPERTY_TAGS})
            for message in run
        ],
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
    queue = MessageQueue(first.topic, first.broker_name, first.queue_id)
    return MessageBatchPart(
        RecordBatch(bytes(data)), np.arange(len(run), dtype=np.int64), first.broker_name, queue
    )


def _pack_host(host: HostAddress) -> bytes:
    address, port = host
    try:
        return socket.inet_aton(address) + int(port).to_bytes(4, "little", signed=True)
    except (OSError, OverflowError):
        return bytes(8)
