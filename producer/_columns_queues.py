"""Which queue each row of a columnar send goes to: the send's lanes, one per queue.

A :class:`Lane` is the rows of one queue, in their order (its batches are cut from them), or
the rows that go to no queue in particular (:attr:`Lane.queue` None: each batch takes the next
queue round robin when it is sent, and a retry may go elsewhere, as a ``send`` to no queue):

- ``queue`` given: every row to it;
- no selector (nor the producer's ``queue_selector``), or a :class:`~producer.RoundRobinSelector`:
  no queue in particular, batch by batch;
- :class:`~producer.KeyHashSelector`: the queue of the Java hash of each row's first key (or of
  each value of ``arg`` given as a column; one ``arg`` value: one queue for every row), as it
  chooses one message's queue; a row without a key is an error naming it;
- :class:`~producer.RandomSelector`: a random queue for each row;
- a :class:`ColumnSelector` (``select_rows``): the queue it gives each row, in one call;
- any other selector (a function of one message): called once per row with a
  :class:`~client.Message` of the row: a Python object per row, for selectors written for
  ``send``.

Caller: the columnar send (``producer/_columns.py``), once per call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from aeromq.client import IllegalArgumentError, Message, MessageIllegalError, MessageQueue
from aeromq.common import hash_code
from aeromq.common.record_batch import ColumnProblem, ColumnSet, hash_column
from aeromq.producer._columns_input import is_arrow, row_values, text_column
from aeromq.producer._selector import (
    KeyHashSelector,
    QueueSelector,
    RandomSelector,
    RoundRobinSelector,
)

if TYPE_CHECKING:
    from aeromq.producer._routing import QueueRouter

__all__ = ["ColumnSelector", "Lane", "queue_lanes"]

RowIndexes = npt.NDArray[np.int64]


@runtime_checkable
class ColumnSelector(Protocol):
    """A selector of a columnar send's queues: all the rows' at once
    (``Producer.send_columns(..., selector=...)``)."""

    def select_rows(
        self, queues: Sequence[MessageQueue], columns: ColumnSet, arg: object
    ) -> npt.NDArray[np.integer]:
        """The index in ``queues`` (the topic's writable queues, sorted) of each row's queue;
        ``columns`` are the send's (``common.record_batch.column_value`` reads a row's value)."""
        ...


@dataclass(frozen=True, slots=True)
class Lane:
    """The rows of one queue (``rows``: their numbers, in order; None: every row), or of no
    queue in particular (``queue`` None)."""

    queue: MessageQueue | None
    rows: RowIndexes | None


def _by_index(queues: Sequence[MessageQueue], chosen: npt.NDArray[np.integer]) -> list[Lane]:
    """The lanes of each row's queue index (checked)."""
    count = len(queues)
    chosen = np.asarray(chosen)
    if chosen.ndim != 1 or not np.issubdtype(chosen.dtype, np.integer):
        raise IllegalArgumentError("a selector gives one queue index per row", shape=chosen.shape)
    bad = np.flatnonzero((chosen < 0) | (chosen >= count))
    if bad.size:
        row = int(bad[0])
        raise IllegalArgumentError(
            "a selector chose no queue of the topic", row=row, index=int(chosen[row]), queues=count
        )
    if chosen.size and (chosen == chosen[0]).all():  # one queue: the rows as they are
        return [Lane(queues[int(chosen[0])], None)]
    order = np.argsort(chosen, kind="stable").astype(np.int64)
    counts = np.bincount(chosen, minlength=count)
    lanes = []
    start = 0
    for index, size in enumerate(counts.tolist()):
        if size:
            lanes.append(Lane(queues[index], order[start : start + size]))
            start += size
    return lanes


def _hash_rows(columns: ColumnSet, arg: object, count: int) -> npt.NDArray[np.int64]:
    """Each row's hash for :class:`~producer.KeyHashSelector`: of ``arg`` (a column: each
    value's; a str or any other value: one for every row), else of each row's first key."""
    if arg is None:
        keys = columns.keys
        if keys is None:
            raise IllegalArgumentError("hash selection needs a key or an arg", column="keys")
        hashes, row, problem = hash_column(keys, first_key=True)
    elif isinstance(arg, str):
        return np.full(count, hash_code(arg), np.int64)
    elif isinstance(arg, np.ndarray) or is_arrow(arg):
        hashes, row, problem = hash_column(text_column(arg, "arg", count), first_key=False)
    else:
        return np.full(count, hash(arg), np.int64)
    if row >= 0:
        if problem == ColumnProblem.NO_KEY:
            raise IllegalArgumentError("hash selection needs a key or an arg", row=row)
        raise MessageIllegalError("a key to hash is not UTF-8 or not in its column", row=row)
    return hashes.astype(np.int64)


def queue_lanes(
    topic: str,
    columns: ColumnSet,
    router: QueueRouter,
    queue: MessageQueue | None,
    selector: QueueSelector | ColumnSelector | None,
    arg: object,
) -> list[Lane]:
    """The lanes of a send's rows (see module). Raises IllegalArgumentError for a queue of
    another topic, a selector's bad choice, or a row that a hash selector cannot place."""
    if queue is not None:
        if queue.topic != topic:
            raise IllegalArgumentError("the queue is of another topic", topic=topic, queue=queue)
        return [Lane(queue, None)]
    if selector is None or isinstance(selector, RoundRobinSelector):
        return [Lane(None, None)]
    queues = router.write_queues(router.route(topic))
    count = columns.bodies.length
    if isinstance(selector, ColumnSelector):
        return _by_index(queues, selector.select_rows(queues, columns, arg))
    if isinstance(selector, KeyHashSelector):
        hashes = _hash_rows(columns, arg, count)
        return _by_index(queues, np.abs(hashes) % len(queues))
    if isinstance(selector, RandomSelector):
        generator = np.random.default_rng(selector._random.getrandbits(64))
        return _by_index(queues, generator.integers(len(queues), size=count))
    index = {chosen: i for i, chosen in enumerate(queues)}
    picks = np.empty(count, np.int64)
    for row in range(count):  # a selector of one message: a Message per row
        body, tag, keys, properties = row_values(columns, row)
        message = Message(topic, body, tags=tag, keys=keys or (), properties=properties)
        chosen = selector(queues, message, arg)
        picks[row] = index.get(chosen, -1)
    return _by_index(queues, picks)
