"""A pull answer's kept records as columns: :class:`PulledChunk`, what the reader
(:mod:`.reader`) makes of one answer and a consumer's ``MessageBatch`` wraps.

A chunk keeps the answer's bytes (``buffer``), its batches' headers as one numpy structured
array, and for each kept record (in the pulled range, matching the subscription) its batch,
its index there and where its body, tag and properties are in ``buffer``: views of the one
buffer the C reader filled, or lists (a small answer read without numpy) that become arrays
only when a column is asked for. Slices share everything but the per-record arrays. No I/O.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NotRequired, Protocol, TypedDict, TypeVar

import numpy as np
import numpy.typing as npt

from aeromq.common._errors import CorruptMessageError

__all__ = ["PulledChunk", "PulledQueue"]

Int64Array = npt.NDArray[np.int64]
Int32Array = npt.NDArray[np.int32]
_Scalar = TypeVar("_Scalar", bound=np.generic)


class PulledQueue(Protocol):
    """The queue an answer was pulled from, as the reader names it in an error and a chunk
    keeps it (a client's ``MessageQueue`` is one)."""

    @property
    def topic(self) -> str:
        """The queue's topic."""

    @property
    def broker_name(self) -> str:
        """The name of the broker that serves the queue."""

    @property
    def queue_id(self) -> int:
        """The queue's id in its topic."""


class _Refused(TypedDict):
    """What a refusal names, kept as its error's attributes."""

    topic: str
    broker: str
    queue_id: int
    pull_offset: int
    response_length: int
    batch_position: NotRequired[int]


def _corrupt(
    problem: str, queue: PulledQueue, offset: int, length: int, position: int = -1
) -> CorruptMessageError:
    """The refusal of a pull answer (``length`` bytes, pulled at ``offset``) for ``problem``:
    the queue, the pull's offset, the answer's length and the batch's position in it. The numpy
    reader and the inflating path (``compression.py``) refuse with it; the native reader writes
    the same words in C."""
    values: _Refused = {
        "topic": queue.topic,
        "broker": queue.broker_name,
        "queue_id": queue.queue_id,
        "pull_offset": offset,
        "response_length": length,
    }
    if position >= 0:
        values["batch_position"] = position
    return CorruptMessageError(f"pulled record batch failed its check: {problem}", **values)


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
        queue: PulledQueue,
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

    def _array(self, name: str, dtype: type[_Scalar]) -> npt.NDArray[_Scalar]:
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
        """Each kept record's batch: an index into ``headers``."""
        return self._array("batch", np.int64)

    @property
    def index(self) -> Int64Array:
        """Each kept record's index in its batch."""
        return self._array("index", np.int64)

    @property
    def body_start(self) -> Int64Array:
        """Where each kept record's body starts in ``buffer``."""
        return self._array("body_start", np.int64)

    @property
    def body_length(self) -> Int32Array:
        """Each kept record's body length."""
        return self._array("body_length", np.int32)

    @property
    def tag_start(self) -> Int64Array:
        """Where each kept record's tag starts in ``buffer``."""
        return self._array("tag_start", np.int64)

    @property
    def tag_length(self) -> Int32Array:
        """Each kept record's tag length (0: no tag)."""
        return self._array("tag_length", np.int32)

    @property
    def properties_start(self) -> Int64Array:
        """Where each kept record's property string starts in ``buffer``."""
        return self._array("properties_start", np.int64)

    @property
    def properties_length(self) -> Int32Array:
        """Each kept record's property string length."""
        return self._array("properties_length", np.int32)

    @property
    def tag_hash(self) -> Int64Array:
        """Each kept record's tag hash (Java's ``hashCode`` of the tag; 0 without one)."""
        return self._array("tag_hash", np.int64)

    @property
    def born_delta_ms(self) -> Int32Array:
        """Each kept record's born timestamp, from its batch's base (ms)."""
        return self._array("born_delta_ms", np.int32)

    @property
    def flag(self) -> Int32Array:
        """Each kept record's flag."""
        return self._array("flag", np.int32)

    def __len__(self) -> int:
        return len(self._records["batch"])

    def sliced(self, start: int, stop: int) -> PulledChunk:
        """The chunk of the records ``[start, stop)``."""
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
        """Each kept record's queue offset."""
        made = self._made("queue_offset")
        if made is not None:
            return made
        return self.header("base_queue_offset") + self.index

    @property
    def commit_log_offsets(self) -> Int64Array:
        """Each kept record's commit log offset."""
        made = self._made("commit_log_offset")
        if made is not None:
            return made
        return self.header("base_physical_offset") + self.index

    @property
    def store_timestamps_ms(self) -> Int64Array:
        """Each kept record's store timestamp (its batch's, ms)."""
        made = self._made("store_ms")
        if made is not None:
            return made
        return self.header("store_timestamp_ms")

    @property
    def born_timestamps_ms(self) -> Int64Array:
        """Each kept record's born timestamp (ms)."""
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
