"""``MessageBatch``: pulled messages as columns over the record batches they came in.

A pull answers with stored record batches (:mod:`common.record_batch`), back to back. The
answer is read once (:func:`read_pulled_batches`, over the record batch's reader
:func:`~common.record_batch.read_pulled_chunk`) into a
:class:`~common.record_batch.PulledChunk`: the batch headers as one numpy structured array,
and for each record the consumer keeps (those in the pulled range matching its subscription)
where its body, tags and properties are in the answer's bytes, all in one C pass (a fixed
number of numpy calls without it) whatever the number of records. A ``MessageBatch`` is a
sequence of chunks (one per pull it took from), read two ways:

- as columns, for data pipelines: :attr:`MessageBatch.queue_offsets`,
  :attr:`~MessageBatch.queue_ids`, :attr:`~MessageBatch.store_timestamps_ms`, ... are numpy
  arrays; :meth:`~MessageBatch.bodies` gives Arrow's binary layout (``int32`` offsets and one
  data buffer), and :meth:`~MessageBatch.to_arrow` a ``pyarrow.RecordBatch``, all without a
  Python object per message (the bodies, tags and a property's values gathered into Arrow's
  layout by one C pass each, :mod:`common.record_batch.spans`; the arrays by
  ``consumer/_arrow.py``);
- as a sequence of :class:`~client.MessageExt` (``batch[i]``, ``for message in batch``): each a
  :class:`~consumer.BatchMessageExt` (``consumer/_batch_message.py``) whose fields are read from
  the chunk when asked.

:func:`as_message_batch` makes one of messages made elsewhere (``consumer/_message_chunks.py``),
or of a small pull's :class:`PulledMessages` (read straight into ``MessageExt`` objects,
``consumer/_pulled_messages.py``) by reading its answer again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

import numpy as np
import numpy.typing as npt

from aeromq.client import MessageExt, MessageQueue, SubscriptionData
from aeromq.common.record_batch import (
    PulledChunk,
    body_spans,
    find_property,
    find_property_py,
    gather_spans,
    property_layout,
    read_pulled_chunk,
    span_layout,
    tag_spans,
)
from aeromq.consumer._arrow import arrow_array, dictionary_runs
from aeromq.consumer._batch_message import BatchMessageExt
from aeromq.consumer._message_chunks import encoded_chunks

if TYPE_CHECKING:
    import pyarrow

__all__ = [
    "MessageBatch",
    "PulledAnswer",
    "PulledMessages",
    "as_message_batch",
    "read_pulled_batches",
]

_S = TypeVar("_S", bound=np.generic)
Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


class MessageBatch(Sequence[MessageExt]):
    """Pulled messages over their record batches (see the module doc)."""

    __slots__ = ("_chunks", "_starts")

    def __init__(self, chunks: Sequence[PulledChunk] = ()) -> None:
        """The messages of ``chunks``, in order (empty chunks are dropped)."""
        self._chunks = [chunk for chunk in chunks if len(chunk)]
        starts = [0]
        for chunk in self._chunks:
            starts.append(starts[-1] + len(chunk))
        self._starts = starts

    @property
    def chunks(self) -> list[PulledChunk]:
        """The column chunks the messages are in (none empty), in order."""
        return self._chunks

    @classmethod
    def concat(cls, batches: Sequence[MessageBatch]) -> MessageBatch:
        """One batch of ``batches``' messages, in order (no copy of the data)."""
        return cls([chunk for batch in batches for chunk in batch._chunks])

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
        number = int(np.searchsorted(starts, index, side="right")) - 1
        return BatchMessageExt.wrap(self._chunks[number], index - starts[number])

    def select(self, mask: npt.NDArray[np.bool_]) -> MessageBatch:
        """The messages where ``mask`` (one entry per message) is true, in order."""
        if len(mask) != len(self):
            raise ValueError(f"mask length {len(mask)} is not the batch's {len(self)}")
        return MessageBatch(
            [
                chunk.taken(mask[first : first + len(chunk)])
                for chunk, first in zip(self._chunks, self._starts, strict=False)
            ]
        )

    def _slice(self, start: int, stop: int) -> MessageBatch:
        out: list[PulledChunk] = []
        for chunk, first in zip(self._chunks, self._starts, strict=False):
            end = first + len(chunk)
            if end <= start or first >= stop:
                continue
            if start <= first and end <= stop:
                out.append(chunk)
            else:
                out.append(chunk.sliced(max(start - first, 0), min(stop, end) - first))
        return MessageBatch(out)

    def __iter__(self) -> Iterator[MessageExt]:
        wrap = BatchMessageExt.wrap
        for chunk in self._chunks:
            for i in range(len(chunk)):
                yield wrap(chunk, i)

    def __repr__(self) -> str:
        queues = sorted({str(chunk.queue) for chunk in self._chunks})
        return f"MessageBatch(count={len(self)}, queues={queues})"

    # -- as columns ------------------------------------------------------------------------

    def _column(
        self, read: Callable[[PulledChunk], npt.NDArray[np.generic]], dtype: type[_S]
    ) -> npt.NDArray[_S]:
        chunks = self._chunks
        if len(chunks) == 1:
            return read(chunks[0]).astype(dtype, copy=False)
        if not chunks:
            return np.empty(0, dtype=dtype)
        return np.concatenate([read(chunk) for chunk in chunks]).astype(dtype, copy=False)

    @property
    def queue_offsets(self) -> Int64Array:
        """Each message's queue offset."""
        return self._column(lambda c: c.queue_offsets, np.int64)

    @property
    def commit_log_offsets(self) -> Int64Array:
        """Each message's commit log offset."""
        return self._column(lambda c: c.commit_log_offsets, np.int64)

    @property
    def queue_ids(self) -> Int32Array:
        """Each message's queue id."""
        # every batch of a chunk is of its queue (the reader checks it)
        return self._column(lambda c: np.full(len(c), c.queue.queue_id, dtype=np.int32), np.int32)

    @property
    def store_timestamps_ms(self) -> Int64Array:
        """Each message's store timestamp (ms)."""
        return self._column(lambda c: c.store_timestamps_ms, np.int64)

    @property
    def born_timestamps_ms(self) -> Int64Array:
        """Each message's born timestamp (ms)."""
        return self._column(lambda c: c.born_timestamps_ms, np.int64)

    @property
    def body_lengths(self) -> Int32Array:
        """Each message's body length."""
        return self._column(lambda c: c.body_length, np.int32)

    @property
    def tag_hashes(self) -> Int64Array:
        """Each message's tag hash (Java's ``hashCode`` of its tag; 0 without one)."""
        return self._column(lambda c: c.tag_hash, np.int64)

    @property
    def flags(self) -> Int32Array:
        """Each message's flag."""
        return self._column(lambda c: c.flag, np.int32)

    @property
    def topics(self) -> list[str]:
        """The topic of each message (one string object per distinct topic)."""
        out: list[str] = []
        for chunk in self._chunks:
            out.extend([chunk.queue.topic] * len(chunk))
        return out

    def bodies(self) -> tuple[Int32Array, npt.NDArray[np.uint8]]:
        """``(offsets, data)``: Arrow's binary layout of the bodies (``offsets`` has one more
        entry than messages; body ``i`` is ``data[offsets[i]:offsets[i + 1]]``)."""
        return gather_spans(self._chunks, len(self), body_spans)

    def tag_column(self) -> tuple[Int32Array, npt.NDArray[np.uint8]]:
        """``(offsets, data)`` of the tags (UTF-8; an empty one is no tag)."""
        return gather_spans(self._chunks, len(self), tag_spans)

    def property_column(self, name: str) -> tuple[Int32Array, npt.NDArray[np.uint8], BoolArray]:
        """``(offsets, data, present)``: property ``name`` of each message in Arrow's string
        layout (``present`` false where a message lacks it), found by one native pass over
        the property bytes (or one regular expression over each chunk's, the reference),
        not by parsing each message's properties."""
        return find_property(self._chunks, len(self), name)

    def property_column_py(self, name: str) -> tuple[Int32Array, npt.NDArray[np.uint8], BoolArray]:
        """:meth:`property_column` with a regular expression: the reference, and fallback."""
        return find_property_py(self._chunks, len(self), name)

    def body_array(self) -> pyarrow.Array:
        """The bodies as an Arrow ``binary`` array over the pulled bytes' layout."""
        import pyarrow as pa

        return arrow_array(
            pa.binary(), len(self), span_layout(self._chunks, len(self), body_spans, False)
        )

    def tag_array(self) -> pyarrow.Array:
        """The tags as an Arrow ``string`` array (null where a message has none)."""
        import pyarrow as pa

        return arrow_array(
            pa.string(), len(self), span_layout(self._chunks, len(self), tag_spans, True)
        )

    def property_array(self, name: str) -> pyarrow.Array:
        """Property ``name`` as an Arrow ``string`` array (null where a message lacks it)."""
        import pyarrow as pa

        return arrow_array(pa.string(), len(self), property_layout(self._chunks, len(self), name))

    def to_arrow(self, *, properties: bool = False) -> pyarrow.RecordBatch:
        """The messages as a ``pyarrow.RecordBatch``: columns ``topic`` and ``broker_name``
        (dictionary-encoded), ``queue_id``, ``queue_offset``, ``tags``, ``body``,
        ``born_timestamp``, ``store_timestamp``; with ``properties``, a ``properties`` map
        (which costs a Python parse per message). Needs ``pyarrow`` (the ``spark`` extra)."""
        import pyarrow as pa

        body = self.body_array()
        tags = self.tag_array()
        arrays = [
            dictionary_runs([(chunk.queue.topic, len(chunk)) for chunk in self._chunks]),
            dictionary_runs([(chunk.broker_name, len(chunk)) for chunk in self._chunks]),
            pa.array(self.queue_ids),
            pa.array(self.queue_offsets),
            tags,
            body,
            pa.array(self.born_timestamps_ms.view("datetime64[ms]")),
            pa.array(self.store_timestamps_ms.view("datetime64[ms]")),
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
            maps = [list(message.properties.items()) for message in self]
            arrays.append(pa.array(maps, type=pa.map_(pa.string(), pa.string())))
            names.append("properties")
        return pa.RecordBatch.from_arrays(arrays, names=names)


def read_pulled_batches(
    data: bytes,
    queue: MessageQueue,
    broker_name: str,
    offset: int,
    next_offset: int,
    subscription: SubscriptionData | None,
    ranges: bytes | None = None,
) -> MessageBatch:
    """The messages of ``data`` (a pull's ``batches``) that the consumer asked for: those in
    ``[offset, next_offset)`` of ``queue`` that ``subscription`` selects, read by
    :func:`~common.record_batch.read_pulled_chunk` (which see, also for ``ranges``, a local
    read's); raises :class:`~client.CorruptMessageError`."""
    chunk = read_pulled_chunk(data, queue, broker_name, offset, next_offset, subscription, ranges)
    return MessageBatch() if chunk is None else MessageBatch([chunk])


PulledAnswer = tuple[bytes, MessageQueue, str, int, int, SubscriptionData | None]
"""What :func:`read_pulled_batches` reads: data, queue, broker name, offset, next offset,
subscription."""


class PulledMessages(list[MessageExt]):
    """The messages of a small pull, with the answer they were read from (:attr:`answer`), to
    be read again as columns when asked for (``poll_batch``)."""

    __slots__ = ("answer",)

    answer: PulledAnswer

    def as_batch(self) -> MessageBatch:
        """The same messages as a :class:`~consumer.MessageBatch` (the answer read again)."""
        return read_pulled_batches(*self.answer)


def as_message_batch(messages: Sequence[MessageExt]) -> MessageBatch:
    """``messages`` as a :class:`MessageBatch`: itself when it is one; else (messages made
    elsewhere, e.g. by a test broker) encoded into record batches, one per run of consecutive
    offsets of one queue, and read back as a pull answer is; a small pull's
    :class:`PulledMessages` read again from its answer."""
    if isinstance(messages, MessageBatch):
        return messages
    if isinstance(messages, PulledMessages):
        return messages.as_batch()
    return MessageBatch(encoded_chunks(messages))
