"""What a columnar send returns: :class:`ColumnSendResults`, every row's result, made when read.

The broker answers each batch with its queue and first offsets; row ``i`` of a batch is at
``queue_offset + i``. The results are kept per batch (:class:`~producer.SendResults`, with the
batch's unique ids as a :class:`UniqueIdRun`: a head and a counter, no string per row), and
read as columns (:meth:`ColumnSendResults.queue_offsets`, :meth:`~ColumnSendResults.queue_ids`:
numpy arrays in the rows' order) or row by row (``results[i]``, a
:class:`~producer.SendResult` made when asked).

Caller: the columnar send (``producer/_columns.py``) makes them; the application reads them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, overload

import numpy as np
import numpy.typing as npt

from aeromq.client import MessageQueue
from aeromq.producer._batch import SendResults
from aeromq.producer._send_result import SendResult, SendStatus

__all__ = ["BatchRows", "ColumnSendResults", "UniqueIdRun"]


class UniqueIdRun(Sequence[str]):
    """The unique ids of one batch: ``head`` then a 4-digit hex counter from ``first``,
    wrapping at 16 bits, as the encoder wrote them; each string made when read."""

    __slots__ = ("first", "head", "length")

    def __init__(self, head: str, first: int, length: int) -> None:
        self.head = head
        self.first = first
        self.length = length

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.length))]
        if index < 0:
            index += self.length
        if not 0 <= index < self.length:
            raise IndexError(f"id index out of range: index={index} length={self.length}")
        return f"{self.head}{(self.first + index) & 0xFFFF:04X}"


class BatchRows(NamedTuple):
    """The rows of one batch: ``rows[start:stop]`` of its lane (``rows`` None: the rows
    ``start..stop`` themselves)."""

    rows: npt.NDArray[np.int64] | None
    start: int
    stop: int

    def numbers(self) -> npt.NDArray[np.int64] | slice:
        """The batch's row numbers, in its order: an array, or a slice of every row's."""
        if self.rows is None:
            return slice(self.start, self.stop)
        return self.rows[self.start : self.stop]


class ColumnSendResults(Sequence[SendResult]):
    """Every row's result of a columnar send, in the rows' order (see module); equal to a list
    of the same results."""

    __slots__ = ("_batches", "_count", "_located", "_rows")

    def __init__(self, count: int, rows: list[BatchRows], batches: list[SendResults]) -> None:
        self._count = count
        self._rows = rows
        self._batches = batches
        self._located: tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]] | None = None

    @property
    def batches(self) -> list[SendResults]:
        """Each batch's results, in the order the batches were sent."""
        return self._batches

    @property
    def ok(self) -> bool:
        """True when every batch's status is ``SEND_OK``."""
        return all(batch.send_status is SendStatus.SEND_OK for batch in self._batches)

    def queue_offsets(self) -> npt.NDArray[np.int64]:
        """Each row's queue offset."""
        out = np.empty(self._count, np.int64)
        for rows, batch in zip(self._rows, self._batches, strict=True):
            out[rows.numbers()] = np.arange(batch.queue_offset, batch.queue_offset + len(batch))
        return out

    def queue_ids(self) -> npt.NDArray[np.int32]:
        """Each row's queue id (of the broker its batch went to: :meth:`message_queues`)."""
        out = np.empty(self._count, np.int32)
        for rows, batch in zip(self._rows, self._batches, strict=True):
            out[rows.numbers()] = batch.message_queue.queue_id
        return out

    def message_queues(self) -> list[MessageQueue]:
        """The queue of each batch, in the order of :attr:`batches`."""
        return [batch.message_queue for batch in self._batches]

    def _locate(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32]]:
        located = self._located
        if located is None:
            batch_of = np.empty(self._count, np.int32)
            index_in = np.empty(self._count, np.int32)
            for number, rows in enumerate(self._rows):
                where = rows.numbers()
                batch_of[where] = number
                index_in[where] = np.arange(rows.stop - rows.start, dtype=np.int32)
            located = self._located = (batch_of, index_in)
        return located

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> SendResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[SendResult]: ...

    def __getitem__(self, index: int | slice) -> SendResult | list[SendResult]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._count))]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(f"row out of range: row={index} rows={self._count}")
        batch_of, index_in = self._locate()
        return self._batches[int(batch_of[index])][int(index_in[index])]

    def __iter__(self) -> Iterator[SendResult]:
        return (self[i] for i in range(self._count))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnSendResults | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list of its results: unhashable, as a list

    def __repr__(self) -> str:
        return f"ColumnSendResults(rows={self._count}, batches={len(self._batches)}, ok={self.ok})"
