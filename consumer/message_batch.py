"""``MessageBatch``: pulled messages as columns over the record batches they came in.

A pull answers with stored record batches (:mod:`common._record_batch`), back to back. The
answer is read once (:func:`consumer._pulled.read_pulled_batches`) into a :class:`PulledChunk`:
the batch headers as one numpy structured array, and for each record the consumer keeps (those
in the pulled range matching its subscription) where its body, tags and properties are in the
answer's bytes, all in one C pass (``consumer/_columns_native.c``; a fixed number of numpy
calls without it) whatever the number of records. A ``MessageBatch`` is a sequence of chunks
(one per pull it took from), read two ways:

- as columns, for data pipelines: :attr:`MessageBatch.queue_offsets`,
  :attr:`~MessageBatch.queue_ids`, :attr:`~MessageBatch.store_timestamps_ms`, ... are numpy
  arrays; :meth:`~MessageBatch.bodies` gives Arrow's binary layout (``int32`` offsets and one
  data buffer), and :meth:`~MessageBatch.to_arrow` a ``pyarrow.RecordBatch``, all without a
  Python object per message (the bodies, tags and a property's values gathered into Arrow's
  layout by one C pass each, the numpy versions kept as the reference and fallback);
- as a sequence of :class:`~client.MessageExt` (``batch[i]``, ``for message in batch``): each a
  :class:`BatchMessageExt` whose fields are read from the chunk when asked.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, overload

import numpy as np
import numpy.typing as npt

from aeromq.client import MessageExt, MessageQueue
from aeromq.client.message import HostAddress
from aeromq.common import (
    PROPERTY_TAGS,
    PROPERTY_UNIQ_KEY,
    encode_batch,
    encode_offset_message_id,
    join_tag,
    pack_host_field,
    patch_batch,
    split_tag,
    unpack_host_field,
)

if TYPE_CHECKING:
    import pyarrow
    from typing_extensions import Buffer

try:
    from aeromq.consumer import _columns_native as _native
except ImportError:  # not built (a source tree without a compiler): numpy alone
    _native = None  # type: ignore[assignment]

__all__ = [
    "BatchMessageExt",
    "MessageBatch",
    "PulledChunk",
    "as_message_batch",
    "unpack_host",
]

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]


@lru_cache(maxsize=1024)
def unpack_host(packed: bytes) -> HostAddress:
    """A batch's 8-byte host field (IPv4 address, i32 port) as ``(ip, port)``."""
    return unpack_host_field(packed)


class PulledChunk:
    """The kept records of one pull answer: ``buffer`` (the answer's batches), ``headers`` (one
    per batch) and, per kept record, its batch (``batch``, an index into ``headers``), its index
    in that batch, and where its parts are in ``buffer``. Slices share everything but the
    per-record arrays."""

    __slots__ = ("_lists", "_records", "broker_name", "buffer", "headers", "queue")

    _RECORD_FIELDS = (
        "batch",
        "index",
        "body_start",
        "body_length",
        "tag_start",
        "tag_length",
        "properties_start",
        "properties_length",
        "tag_hash",
        "born_delta_ms",
        "flag",
    )

    def __init__(
        self,
        buffer: bytes,
        headers: npt.NDArray[np.void],
        queue: MessageQueue,
        broker_name: str,
        records: dict[str, npt.NDArray[Any] | list[int]],
    ) -> None:
        """``records`` has each of ``_RECORD_FIELDS``, as arrays, or as lists (a small answer
        read without numpy: they become arrays only if a column is asked for)."""
        self.buffer = buffer
        self.headers = headers
        self.queue = queue
        self.broker_name = broker_name
        self._records = records
        self._lists: dict[str, list[Any]] = {
            name: value for name, value in records.items() if isinstance(value, list)
        }

    def _array(self, name: str, dtype: Any) -> npt.NDArray[Any]:
        value = self._records[name]
        if isinstance(value, list):
            value = self._records[name] = np.array(value, dtype=dtype)
        return value

    def _made(self, name: str) -> npt.NDArray[Any] | None:
        """Column ``name`` when the reader made it (the native reader makes the header-derived
        ones: ``queue_offset``, ``commit_log_offset``, ``store_ms``, ``born_ms``)."""
        value = self._records.get(name)
        return value if isinstance(value, np.ndarray) else None

    @property
    def batch(self) -> Int64Array:
        return self._array("batch", np.int64)

    @property
    def index(self) -> Int64Array:
        return self._array("index", np.int64)

    @property
    def body_start(self) -> Int64Array:
        return self._array("body_start", np.int64)

    @property
    def body_length(self) -> Int32Array:
        return self._array("body_length", np.int32)

    @property
    def tag_start(self) -> Int64Array:
        return self._array("tag_start", np.int64)

    @property
    def tag_length(self) -> Int32Array:
        return self._array("tag_length", np.int32)

    @property
    def properties_start(self) -> Int64Array:
        return self._array("properties_start", np.int64)

    @property
    def properties_length(self) -> Int32Array:
        return self._array("properties_length", np.int32)

    @property
    def tag_hash(self) -> Int64Array:
        return self._array("tag_hash", np.int64)

    @property
    def born_delta_ms(self) -> Int32Array:
        return self._array("born_delta_ms", np.int32)

    @property
    def flag(self) -> Int32Array:
        return self._array("flag", np.int32)

    def __len__(self) -> int:
        return len(self._records["batch"])

    def sliced(self, start: int, stop: int) -> PulledChunk:
        return self.taken(slice(start, stop))

    def taken(self, which: slice | npt.NDArray[Any]) -> PulledChunk:
        """The chunk of the records ``which`` selects (a slice, indexes or a boolean mask)."""
        records: dict[str, npt.NDArray[Any] | list[int]] = {
            name: getattr(self, name)[which] for name in self._RECORD_FIELDS
        }
        for name in _MADE_FIELDS:
            made = self._made(name)
            if made is not None:
                records[name] = made[which]
        return PulledChunk(self.buffer, self.headers, self.queue, self.broker_name, records)

    def header(self, name: str) -> npt.NDArray[Any]:
        """Header field ``name`` of each kept record's batch."""
        values: npt.NDArray[Any] = self.headers[name][self.batch]
        return values

    @property
    def queue_offsets(self) -> Int64Array:
        made = self._made("queue_offset")
        if made is not None:
            return made
        return self.header("base_queue_offset") + self.index

    @property
    def commit_log_offsets(self) -> Int64Array:
        made = self._made("commit_log_offset")
        if made is not None:
            return made
        return self.header("base_physical_offset") + self.index

    @property
    def store_timestamps_ms(self) -> Int64Array:
        made = self._made("store_ms")
        if made is not None:
            return made
        return self.header("store_timestamp_ms")

    @property
    def born_timestamps_ms(self) -> Int64Array:
        made = self._made("born_ms")
        if made is not None:
            return made
        born: Int64Array = self.header("base_born_timestamp_ms") + self.born_delta_ms.astype(
            np.int64
        )
        return born

    def values(self, name: str, make: Callable[[], npt.NDArray[Any]]) -> list[Any]:
        """Column ``name`` as a Python list, made once (for per-message reads)."""
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = make().tolist()
        return found

    def body_list(self) -> list[bytes]:
        """Every record's body as ``bytes``, made once, on the first message's ``body`` (a
        consumer that reads one body reads them all: one pass instead of one per message)."""
        found = self._lists.get("bodies")
        if found is None:
            buffer = self.buffer
            starts = self.values("body_start", lambda: self.body_start)
            lengths = self.values("body_length", lambda: self.body_length)
            found = [buffer[start : start + n] for start, n in zip(starts, lengths, strict=True)]
            self._lists["bodies"] = found
        return found

    def segments(self, starts: Int64Array, lengths: Int32Array) -> bytes:
        """The bytes of ``[start, start + length)`` of every record, back to back."""
        pieces = self.pieces(starts, lengths)
        if len(pieces) == 1:
            return bytes(pieces[0])
        return b"".join(pieces)

    def pieces(self, starts: Int64Array, lengths: Int32Array) -> list[memoryview]:
        """:meth:`segments` as slices of ``buffer`` to join: one per run of adjacent records
        (a run is usually a whole stored batch)."""
        first, last = self.spans(starts, lengths)
        view = memoryview(self.buffer)
        return [view[a:b] for a, b in zip(first, last, strict=True)]

    def spans(self, starts: Int64Array, lengths: Int32Array) -> tuple[list[int], list[int]]:
        """``(firsts, ends)``: the runs of adjacent records' ``[start, start + length)`` in
        ``buffer``, one per run."""
        if not len(starts):
            return [], []
        ends = starts + lengths
        breaks = np.flatnonzero(starts[1:] != ends[:-1])
        first: list[int] = starts[np.concatenate((_ZERO, breaks + 1))].tolist()
        last: list[int] = ends[np.concatenate((breaks, _LAST))].tolist()
        return first, last

    def holds(self, needle: bytes, starts: Int64Array, lengths: Int32Array) -> bool:
        """Whether ``needle`` is in the records' ``[start, start + length)`` spans (searched in
        place, run by run: one C search of those bytes only, not the whole buffer)."""
        find = self.buffer.find
        first, last = self.spans(starts, lengths)
        return any(find(needle, a, b) >= 0 for a, b in zip(first, last, strict=True))


_MADE_FIELDS: Final = ("queue_offset", "commit_log_offset", "store_ms", "born_ms")
_ZERO: Final = np.zeros(1, dtype=np.int64)
_LAST: Final = np.full(1, -1, dtype=np.int64)


def _field(name: str, read: Callable[[BatchMessageExt], Any]) -> Any:
    """A field read from the chunk, unless set on the message."""

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


def _body(m: BatchMessageExt) -> bytes:
    return m._chunk.body_list()[m._i]


def _header_value(name: str) -> Callable[[BatchMessageExt], Any]:
    def read(m: BatchMessageExt) -> Any:
        chunk = m._chunk
        return chunk.values(name, lambda: chunk.header(name))[m._i]

    return read


def _host(name: str) -> Callable[[BatchMessageExt], HostAddress]:
    def read(m: BatchMessageExt) -> HostAddress:
        chunk = m._chunk
        batch = chunk.values("batch", lambda: chunk.batch)[m._i]
        return unpack_host(chunk.headers[name][batch].tobytes())

    return read


class BatchMessageExt(MessageExt):
    """One pulled message: a :class:`~client.MessageExt` whose fields are read from its
    :class:`PulledChunk` when asked (and kept, when set)."""

    __slots__ = ("_broker", "_chunk", "_i", "_overrides", "_props")

    _chunk: PulledChunk
    _i: int
    _broker: str
    _props: dict[str, str] | None
    _overrides: dict[str, Any] | None

    @classmethod
    def wrap(cls, chunk: PulledChunk, i: int) -> BatchMessageExt:
        message = object.__new__(cls)
        message._chunk = chunk
        message._i = i
        message._broker = chunk.broker_name
        message._props = None
        message._overrides = None
        return message

    topic = _field("topic", lambda m: m._chunk.queue.topic)
    body = _field("body", _body)
    flag = _field("flag", lambda m: m._chunk.values("flag", lambda: m._chunk.flag)[m._i])
    queue_id = _field("queue_id", lambda m: m._chunk.queue.queue_id)
    queue_offset = _field(
        "queue_offset", lambda m: m._chunk.values("qo", lambda: m._chunk.queue_offsets)[m._i]
    )
    commit_log_offset = _field(
        "commit_log_offset",
        lambda m: m._chunk.values("clo", lambda: m._chunk.commit_log_offsets)[m._i],
    )
    store_size = _field("store_size", lambda m: m._store_size())
    sys_flag = _field("sys_flag", _header_value("attributes"))
    born_timestamp_ms = _field(
        "born_timestamp_ms",
        lambda m: m._chunk.values("born", lambda: m._chunk.born_timestamps_ms)[m._i],
    )
    born_host = _field("born_host", _host("born_host"))
    store_timestamp_ms = _field("store_timestamp_ms", _header_value("store_timestamp_ms"))
    store_host = _field("store_host", _host("store_host"))
    reconsume_times = _field("reconsume_times", _header_value("reconsume_times"))

    @property
    def broker_name(self) -> str:
        return self._broker

    @broker_name.setter
    def broker_name(self, value: str) -> None:
        self._broker = value

    def _store_size(self) -> int:
        """The bytes the record takes in its batch: its column values and variable parts."""
        chunk, i = self._chunk, self._i
        return 28 + int(chunk.body_length[i] + chunk.tag_length[i] + chunk.properties_length[i])

    def _tag(self) -> str | None:
        chunk, i = self._chunk, self._i
        length = chunk.values("tag_length", lambda: chunk.tag_length)[i]
        if not length:
            return None
        start = chunk.values("tag_start", lambda: chunk.tag_start)[i]
        return chunk.buffer[start : start + length].decode()

    @property
    def tags(self) -> str | None:
        if self._props is None:
            return self._tag()
        return self._props.get(PROPERTY_TAGS)

    @property
    def _properties(self) -> dict[str, str]:
        props = self._props
        if props is None:
            chunk, i = self._chunk, self._i
            start = chunk.values("properties_start", lambda: chunk.properties_start)[i]
            length = chunk.values("properties_length", lambda: chunk.properties_length)[i]
            props = self._props = join_tag(chunk.buffer[start : start + length], self._tag())
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
        """Equal to any ``MessageExt`` (pulled or not) with the same fields."""
        if not isinstance(other, MessageExt):
            return NotImplemented
        return self._eq_key() == other._eq_key()

    __hash__ = None  # type: ignore[assignment]


class MessageBatch(Sequence[MessageExt]):
    """Pulled messages over their record batches (see the module doc)."""

    __slots__ = ("_chunks", "_starts")

    def __init__(self, chunks: Sequence[PulledChunk] = ()) -> None:
        self._chunks = [chunk for chunk in chunks if len(chunk)]
        starts = [0]
        for chunk in self._chunks:
            starts.append(starts[-1] + len(chunk))
        self._starts = starts

    @property
    def chunks(self) -> list[PulledChunk]:
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

    def _column(self, read: Callable[[PulledChunk], npt.NDArray[Any]], dtype: Any) -> Any:
        chunks = self._chunks
        if len(chunks) == 1:
            return read(chunks[0]).astype(dtype, copy=False)
        if not chunks:
            return np.empty(0, dtype=dtype)
        return np.concatenate([read(chunk) for chunk in chunks]).astype(dtype, copy=False)

    @property
    def queue_offsets(self) -> Int64Array:
        return self._column(lambda c: c.queue_offsets, np.int64)  # type: ignore[no-any-return]

    @property
    def commit_log_offsets(self) -> Int64Array:
        return self._column(lambda c: c.commit_log_offsets, np.int64)  # type: ignore[no-any-return]

    @property
    def queue_ids(self) -> Int32Array:
        # every batch of a chunk is of its queue (the reader checks it)
        return self._column(  # type: ignore[no-any-return]
            lambda c: np.full(len(c), c.queue.queue_id, dtype=np.int32), np.int32
        )

    @property
    def store_timestamps_ms(self) -> Int64Array:
        return self._column(lambda c: c.store_timestamps_ms, np.int64)  # type: ignore[no-any-return]

    @property
    def born_timestamps_ms(self) -> Int64Array:
        return self._column(lambda c: c.born_timestamps_ms, np.int64)  # type: ignore[no-any-return]

    @property
    def body_lengths(self) -> Int32Array:
        return self._column(lambda c: c.body_length, np.int32)  # type: ignore[no-any-return]

    @property
    def tag_hashes(self) -> Int64Array:
        return self._column(lambda c: c.tag_hash, np.int64)  # type: ignore[no-any-return]

    @property
    def flags(self) -> Int32Array:
        return self._column(lambda c: c.flag, np.int32)  # type: ignore[no-any-return]

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
        return self._variable(_body_spans)

    def tag_column(self) -> tuple[Int32Array, npt.NDArray[np.uint8]]:
        """``(offsets, data)`` of the tags (UTF-8; an empty one is no tag)."""
        return self._variable(_tag_spans)

    def _parts(
        self, where: Callable[[PulledChunk], tuple[Int64Array, Int32Array]]
    ) -> list[tuple[Buffer, Int64Array, Int32Array]]:
        """Each chunk's buffer and spans, for the native gathers (contiguous i64 and i32)."""
        parts: list[tuple[Buffer, Int64Array, Int32Array]] = []
        for chunk in self._chunks:
            starts, lengths = where(chunk)
            parts.append(
                (
                    chunk.buffer,
                    np.ascontiguousarray(starts, dtype=np.int64),
                    np.ascontiguousarray(lengths, dtype=np.int32),
                )
            )
        return parts

    def _gathered(
        self,
        where: Callable[[PulledChunk], tuple[Int64Array, Int32Array]],
        null_empty: bool,
    ) -> tuple[bytes, bytes, bytes | None, int]:
        """The spans ``where`` gives, in Arrow's binary layout, in one native pass (the
        reference is :meth:`_variable_py`): ``(offsets, data, validity, null_count)``."""
        return _native.gather(self._parts(where), len(self), null_empty)

    def _variable(
        self, where: Callable[[PulledChunk], tuple[Int64Array, Int32Array]]
    ) -> tuple[Int32Array, npt.NDArray[np.uint8]]:
        if _native is not None:
            offsets, data, _, _ = self._gathered(where, False)
            return np.frombuffer(offsets, dtype=np.int32), np.frombuffer(data, dtype=np.uint8)
        return self._variable_py(where)

    def _variable_py(
        self, where: Callable[[PulledChunk], tuple[Int64Array, Int32Array]]
    ) -> tuple[Int32Array, npt.NDArray[np.uint8]]:
        """:meth:`_variable` in numpy: the reference of the native gather, and its fallback."""
        offsets = np.zeros(len(self) + 1, dtype=np.int32)
        pieces: list[memoryview] = []
        lengths: list[Int32Array] = []
        for chunk in self._chunks:
            starts, chunk_lengths = where(chunk)
            if chunk_lengths.any():  # tags are often all empty
                pieces.extend(chunk.pieces(starts, chunk_lengths))
            lengths.append(chunk_lengths)
        if lengths:
            np.cumsum(np.concatenate(lengths) if len(lengths) > 1 else lengths[0], out=offsets[1:])
        return offsets, np.frombuffer(b"".join(pieces), dtype=np.uint8)  # the one copy

    def property_column(self, name: str) -> tuple[Int32Array, npt.NDArray[np.uint8], BoolArray]:
        """``(offsets, data, present)``: property ``name`` of each message in Arrow's string
        layout (``present`` false where a message lacks it), found by one native pass over
        the property bytes (or one regular expression over each chunk's, the reference),
        not by parsing each message's properties."""
        if _native is not None:
            offsets, data, validity, _ = self._found_property(name)
            present = (
                np.ones(len(self), dtype=bool)
                if validity is None
                else np.unpackbits(
                    np.frombuffer(validity, dtype=np.uint8), count=len(self), bitorder="little"
                ).astype(bool)
            )
            return np.frombuffer(offsets, dtype=np.int32), np.frombuffer(data, np.uint8), present
        return self.property_column_py(name)

    def _found_property(self, name: str) -> tuple[bytes, bytes, bytes | None, int]:
        return _native.find_property(
            name.encode() + b"\x01",
            self._parts(lambda c: (c.properties_start, c.properties_length)),
            len(self),
        )

    def property_column_py(self, name: str) -> tuple[Int32Array, npt.NDArray[np.uint8], BoolArray]:
        """:meth:`property_column` with a regular expression: the reference, and fallback."""
        pattern = _property_pattern(name)
        needle = name.encode() + b"\x01"
        lengths = np.zeros(len(self), dtype=np.int32)
        present = np.zeros(len(self), dtype=bool)
        pieces: list[bytes] = []
        for chunk, first in zip(self._chunks, self._starts, strict=False):
            # C searches of the property bytes alone: most answers lack a given property
            if not chunk.holds(needle, chunk.properties_start, chunk.properties_length):
                continue
            data = chunk.segments(chunk.properties_start, chunk.properties_length)
            starts = np.cumsum(chunk.properties_length, dtype=np.int64) - chunk.properties_length
            found = [
                (match.start(), match.start(1), match.end(1)) for match in pattern.finditer(data)
            ]
            if not found:
                continue
            at = np.array([f[0] for f in found], dtype=np.int64)
            owners = first + np.searchsorted(starts, at, side="right") - 1
            lengths[owners] = [end - start for _, start, end in found]
            present[owners] = True
            pieces.extend(data[start:end] for _, start, end in found)
        offsets = np.zeros(len(self) + 1, dtype=np.int32)
        np.cumsum(lengths, out=offsets[1:])
        return offsets, np.frombuffer(b"".join(pieces), dtype=np.uint8), present

    def body_array(self) -> pyarrow.Array:
        """The bodies as an Arrow ``binary`` array over the pulled bytes' layout."""
        import pyarrow as pa

        if _native is not None:
            return _arrow(pa.binary(), len(self), self._gathered(_body_spans, False))
        offsets, data = self.bodies()
        return pa.Array.from_buffers(
            pa.binary(), len(self), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )

    def tag_array(self) -> pyarrow.Array:
        """The tags as an Arrow ``string`` array (null where a message has none)."""
        if _native is not None:
            import pyarrow as pa

            return _arrow(pa.string(), len(self), self._gathered(_tag_spans, True))
        offsets, data = self.tag_column()
        return _string_array(offsets, data, np.diff(offsets) > 0)

    def property_array(self, name: str) -> pyarrow.Array:
        """Property ``name`` as an Arrow ``string`` array (null where a message lacks it)."""
        if _native is not None:
            import pyarrow as pa

            return _arrow(pa.string(), len(self), self._found_property(name))
        return _string_array(*self.property_column(name))

    def to_arrow(self, *, properties: bool = False) -> pyarrow.RecordBatch:
        """The messages as a ``pyarrow.RecordBatch``: columns ``topic`` and ``broker_name``
        (dictionary-encoded), ``queue_id``, ``queue_offset``, ``tags``, ``body``,
        ``born_timestamp``, ``store_timestamp``; with ``properties``, a ``properties`` map
        (which costs a Python parse per message). Needs ``pyarrow`` (the ``spark`` extra)."""
        import pyarrow as pa

        body = self.body_array()
        tags = self.tag_array()
        arrays = [
            _runs([(chunk.queue.topic, len(chunk)) for chunk in self._chunks]),
            _runs([(chunk.broker_name, len(chunk)) for chunk in self._chunks]),
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


def _body_spans(chunk: PulledChunk) -> tuple[Int64Array, Int32Array]:
    return chunk.body_start, chunk.body_length


def _tag_spans(chunk: PulledChunk) -> tuple[Int64Array, Int32Array]:
    return chunk.tag_start, chunk.tag_length


def _arrow(
    kind: pyarrow.DataType, count: int, layout: tuple[bytes, bytes, bytes | None, int]
) -> pyarrow.Array:
    """An Arrow binary or string array over a native gather's buffers (no copy)."""
    import pyarrow as pa

    offsets, data, validity, missing = layout
    return pa.Array.from_buffers(
        kind,
        count,
        [
            None if validity is None else pa.py_buffer(validity),
            pa.py_buffer(offsets),
            pa.py_buffer(data),
        ],
        null_count=missing,
    )


@lru_cache(maxsize=64)
def _property_pattern(name: str) -> re.Pattern[bytes]:
    """``name``'s pair in property bytes that hold whole pairs back to back."""
    return re.compile(rb"(?:^|(?<=\x02))" + re.escape(name.encode()) + rb"\x01([^\x02]*)\x02")


def _string_array(
    offsets: Int32Array, data: npt.NDArray[np.uint8], present: BoolArray
) -> pyarrow.Array:
    import pyarrow as pa

    count = len(present)
    missing = int(count - np.count_nonzero(present))
    return pa.Array.from_buffers(
        pa.string(),
        count,
        [
            pa.py_buffer(np.packbits(present, bitorder="little")) if missing else None,
            pa.py_buffer(offsets),
            pa.py_buffer(data),
        ],
        null_count=missing,
    )


def _runs(runs: list[tuple[str, int]]) -> pyarrow.Array:
    """A dictionary-encoded string column of ``runs`` of equal values."""
    import pyarrow as pa

    values = sorted({value for value, _ in runs})
    if len(values) == 1:
        codes = np.zeros(sum(n for _, n in runs), dtype=np.int32)
    else:
        codes = np.repeat(
            np.array([values.index(value) for value, _ in runs], dtype=np.int32),
            [n for _, n in runs],
        )
    return pa.DictionaryArray.from_arrays(  # codes index ``values`` by construction
        pa.array(codes), _dictionary(tuple(values)), safe=False
    )


@lru_cache(maxsize=64)
def _dictionary(values: tuple[str, ...]) -> pyarrow.Array:
    """The Arrow string array of ``values`` (made once: a poll's few topics and brokers)."""
    import pyarrow as pa

    return pa.array(values, pa.string())


def as_message_batch(messages: Sequence[MessageExt]) -> MessageBatch:
    """``messages`` as a :class:`MessageBatch`: itself when it is one; else (messages made
    elsewhere, e.g. by a test broker) encoded into record batches, one per run of consecutive
    offsets of one queue, and read back as a pull answer is."""
    if isinstance(messages, MessageBatch):
        return messages
    from aeromq.consumer._pulled import read_pulled_batches

    chunks: list[PulledChunk] = []
    run: list[MessageExt] = []

    def flush() -> None:
        first = run[0]
        queue = MessageQueue(first.topic, first.broker_name, first.queue_id)
        end = first.queue_offset + len(run)
        read = read_pulled_batches(
            _encoded(run), queue, first.broker_name, first.queue_offset, end, None
        )
        chunks.extend(read.chunks)

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
    return MessageBatch(chunks)


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
