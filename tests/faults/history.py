"""A history of a fault run's operations and Jepsen's queue checker over it.

Clients record every operation as it happens: an ``invoke`` when it starts and one completion,
``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (unknown: a timeout, a
connection lost mid-call). A send's value is its message id and queue, and on ``ok`` the queue
offset the broker acknowledged; a poll's ``ok`` holds the deliveries (message id, queue,
offset) a consumer got. The fault injector marks its faults (:meth:`History.mark`), so that
:func:`recovery_times` can measure from each fault to the first acknowledged send after it.

:func:`check` reads a finished history (after a final drain of every queue) and reports:

- **lost**: a send acknowledged ``ok`` whose message was never delivered;
- **duplicated**: a message stored at two places (delivered or acknowledged at two different
  (queue, offset) pairs); the same message delivered again at the same offset is a redelivery,
  allowed (at least once);
- **reordered**: one consumer's deliveries of one queue whose offsets do not increase, or one
  producer's acknowledged sends to one queue whose offsets do not increase (a producer sends
  one message at a time);
- **offset conflicts**: one (queue, offset) given to two different messages;
- **unexpected**: a delivered message that no send ever tried;
- **failed but delivered**: a send that ``fail``-ed (certainly not stored) was delivered.

An ``info`` send may or may not be delivered: either is fine (delivered ones are counted as
``recovered``). An operation with no completion counts as ``info``. A consumer that seeks back
on purpose (a restart from the committed offset) records under a new process name.

Recording is thread-safe: one :class:`History` is shared by every client thread.
"""

from __future__ import annotations

import enum
import json
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "CheckResult",
    "Delivery",
    "History",
    "HistoryError",
    "Op",
    "OpType",
    "Reordering",
    "check",
    "recovery_times",
]

SEND = "send"
POLL = "poll"
MARK = "mark"


class HistoryError(Exception):
    """A history that is not well formed (a completion without its invoke, two completions)."""


class OpType(enum.Enum):
    """Jepsen's operation types."""

    INVOKE = "invoke"
    OK = "ok"
    FAIL = "fail"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message a consumer got: its id, queue and queue offset."""

    message_id: str
    queue: str
    offset: int


@dataclass(frozen=True, slots=True)
class Op:
    """One entry of a history. ``index`` is its position; ``invoke_index`` links a completion
    to its invoke (-1 for an invoke and a mark). A send carries ``message_id`` and ``queue``
    (and ``offset`` once ``ok``); a poll's ``ok`` carries ``deliveries``. A fault's mark has
    ``f == "mark"`` and the fault's name in ``error``."""

    index: int
    type: OpType
    f: str
    process: str
    time_ns: int
    invoke_index: int = -1
    message_id: str | None = None
    queue: str | None = None
    offset: int | None = None
    deliveries: tuple[Delivery, ...] = ()
    error: str | None = None


class History:
    """The operations of a run, in the order they were recorded (thread-safe)."""

    def __init__(self, clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self._clock_ns = clock_ns
        self._lock = threading.Lock()
        self._ops: list[Op] = []
        self._open: dict[int, Op] = {}

    @property
    def ops(self) -> tuple[Op, ...]:
        """A snapshot of every entry so far."""
        with self._lock:
            return tuple(self._ops)

    def invoke_send(self, process: str, message_id: str, queue: str) -> Op:
        """``process`` starts sending ``message_id`` to ``queue``; complete the returned op."""
        return self._invoke(SEND, process, message_id=message_id, queue=queue)

    def invoke_poll(self, process: str, queue: str | None = None) -> Op:
        """Consumer ``process`` starts a poll (of ``queue``, or of whatever it is assigned)."""
        return self._invoke(POLL, process, queue=queue)

    def ok(
        self, invoke: Op, *, offset: int | None = None, deliveries: Iterable[Delivery] = ()
    ) -> Op:
        """The operation happened: a send with the acknowledged ``offset``, a poll with its
        ``deliveries``."""
        if invoke.f == SEND and offset is None:
            raise HistoryError(f"an ok send needs its offset: message_id={invoke.message_id!r}")
        return self._complete(invoke, OpType.OK, offset=offset, deliveries=tuple(deliveries))

    def fail(self, invoke: Op, error: str = "") -> Op:
        """The operation certainly did not happen (refused before any effect)."""
        return self._complete(invoke, OpType.FAIL, error=error)

    def info(self, invoke: Op, error: str = "") -> Op:
        """The operation's outcome is unknown (timeout, lost connection)."""
        return self._complete(invoke, OpType.INFO, error=error)

    def mark(self, fault: str, process: str = "nemesis") -> Op:
        """A fault was injected now (``fault`` names it)."""
        with self._lock:
            op = Op(len(self._ops), OpType.INFO, MARK, process, self._clock_ns(), error=fault)
            self._ops.append(op)
            return op

    def _invoke(self, f: str, process: str, **values: Any) -> Op:
        with self._lock:
            op = Op(len(self._ops), OpType.INVOKE, f, process, self._clock_ns(), **values)
            self._ops.append(op)
            self._open[op.index] = op
            return op

    def _complete(self, invoke: Op, op_type: OpType, **values: Any) -> Op:
        with self._lock:
            if self._open.pop(invoke.index, None) is not invoke:
                raise HistoryError(
                    f"completion of an operation that is not open: index={invoke.index} "
                    f"f={invoke.f!r} process={invoke.process!r}"
                )
            op = Op(
                len(self._ops),
                op_type,
                invoke.f,
                invoke.process,
                self._clock_ns(),
                invoke_index=invoke.index,
                message_id=invoke.message_id,
                queue=invoke.queue,
                **values,
            )
            self._ops.append(op)
            return op

    def dump(self, path: Path) -> None:
        """Write the history as JSON lines (one op a line), for a failing run's report."""
        with path.open("w", encoding="utf-8") as out:
            for op in self.ops:
                out.write(json.dumps(_to_json(op)) + "\n")

    @staticmethod
    def load(path: Path) -> tuple[Op, ...]:
        """The ops of a history written by :meth:`dump`."""
        with path.open(encoding="utf-8") as lines:
            return tuple(_from_json(json.loads(line)) for line in lines if line.strip())


def _to_json(op: Op) -> dict[str, Any]:
    value = {k: getattr(op, k) for k in Op.__slots__ if getattr(op, k) not in (None, (), -1)}
    value["type"] = op.type.value
    if op.deliveries:
        value["deliveries"] = [[d.message_id, d.queue, d.offset] for d in op.deliveries]
    return value


def _from_json(value: dict[str, Any]) -> Op:
    value = dict(value)
    value["type"] = OpType(value["type"])
    value["deliveries"] = tuple(Delivery(*d) for d in value.get("deliveries", ()))
    return Op(**value)


@dataclass(frozen=True, slots=True)
class Reordering:
    """Offsets that went backwards (or repeated) for one ``process`` and ``queue``: ``kind``
    is ``"delivery"`` (a consumer) or ``"ack"`` (a producer)."""

    kind: str
    process: str
    queue: str
    previous: Delivery
    current: Delivery


@dataclass(frozen=True)
class CheckResult:
    """What :func:`check` found; ``valid`` when no anomaly at all."""

    lost: tuple[str, ...] = ()
    duplicated: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    reordered: tuple[Reordering, ...] = ()
    offset_conflicts: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)
    unexpected: tuple[str, ...] = ()
    failed_but_delivered: tuple[str, ...] = ()
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        """No anomaly of any kind."""
        return not (
            self.lost
            or self.duplicated
            or self.reordered
            or self.offset_conflicts
            or self.unexpected
            or self.failed_but_delivered
        )

    def summary(self, limit: int = 5) -> str:
        """One line per kind of anomaly found (the first ``limit`` examples), then the counts."""
        lines = [f"valid={self.valid}"]
        for name in (
            "lost",
            "duplicated",
            "reordered",
            "offset_conflicts",
            "unexpected",
            "failed_but_delivered",
        ):
            found: Sequence[Any] | dict[Any, Any] = getattr(self, name)
            if found:
                examples = list(found.items() if isinstance(found, dict) else found)[:limit]
                lines.append(f"{name}: count={len(found)} e.g. {examples}")
        lines.append(" ".join(f"{key}={value}" for key, value in sorted(self.stats.items())))
        return "\n".join(lines)


def check(ops: Iterable[Op]) -> CheckResult:
    """Check a finished history (see the module docstring for what is reported)."""
    open_invokes: set[int] = set()
    sends: dict[int, str] = {}  # send invoke index -> message id
    completed: dict[int, OpType] = {}  # send invoke index -> its completion
    placed: dict[str, set[tuple[str, int]]] = defaultdict(set)  # by acks and deliveries
    holders: dict[tuple[str, int], set[str]] = defaultdict(set)
    delivered: set[str] = set()
    reordered: list[Reordering] = []
    last_delivery: dict[tuple[str, str], Delivery] = {}
    last_ack: dict[tuple[str, str], Delivery] = {}
    deliveries = 0
    for op in ops:
        if op.f == MARK:
            continue
        if op.type is OpType.INVOKE:
            open_invokes.add(op.index)
            if op.f == SEND and op.message_id is not None:
                sends[op.index] = op.message_id
            continue
        if op.invoke_index not in open_invokes:
            raise HistoryError(f"completion without an open invoke: index={op.index}")
        open_invokes.remove(op.invoke_index)
        if op.f == SEND:
            completed[op.invoke_index] = op.type
            if op.type is OpType.OK and op.message_id and op.queue and op.offset is not None:
                ack = Delivery(op.message_id, op.queue, op.offset)
                placed[ack.message_id].add((ack.queue, ack.offset))
                holders[ack.queue, ack.offset].add(ack.message_id)
                _advance(last_ack, reordered, "ack", op.process, ack)
        elif op.f == POLL and op.type is OpType.OK:
            for delivery in op.deliveries:
                deliveries += 1
                delivered.add(delivery.message_id)
                placed[delivery.message_id].add((delivery.queue, delivery.offset))
                holders[delivery.queue, delivery.offset].add(delivery.message_id)
                _advance(last_delivery, reordered, "delivery", op.process, delivery)
    outcome = _outcomes(sends, completed)
    ok = {m for m, t in outcome.items() if t is OpType.OK}
    failed = {m for m, t in outcome.items() if t is OpType.FAIL}
    unknown = {m for m, t in outcome.items() if t is OpType.INFO}
    return CheckResult(
        lost=tuple(sorted(ok - delivered)),
        duplicated={m: tuple(sorted(at)) for m, at in sorted(placed.items()) if len(at) > 1},
        reordered=tuple(reordered),
        offset_conflicts={
            at: tuple(sorted(ids)) for at, ids in sorted(holders.items()) if len(ids) > 1
        },
        unexpected=tuple(sorted(delivered - outcome.keys())),
        failed_but_delivered=tuple(sorted(failed & delivered)),
        stats={
            "attempted": len(outcome),
            "acknowledged": len(ok),
            "failed": len(failed),
            "unknown": len(unknown),
            "recovered": len(unknown & delivered),
            "delivered": len(delivered),
            "deliveries": deliveries,
        },
    )


def _outcomes(sends: dict[int, str], completed: dict[int, OpType]) -> dict[str, OpType]:
    """Each message's outcome over all its sends (a retry sends the same message again): ok if
    any send was ok, else unknown if any was (a send never completed is unknown), else fail."""
    outcome: dict[str, OpType] = {}
    for index, message_id in sends.items():
        this = completed.get(index, OpType.INFO)
        before = outcome.get(message_id)
        if before is None or _RANK[this] > _RANK[before]:
            outcome[message_id] = this
    return outcome


_RANK = {OpType.FAIL: 0, OpType.INFO: 1, OpType.OK: 2}


def _advance(
    last: dict[tuple[str, str], Delivery],
    reordered: list[Reordering],
    kind: str,
    process: str,
    current: Delivery,
) -> None:
    key = (process, current.queue)
    previous = last.get(key)
    if previous is not None and current.offset <= previous.offset:
        reordered.append(Reordering(kind, process, current.queue, previous, current))
    last[key] = current


def recovery_times(ops: Sequence[Op]) -> list[tuple[str, float | None]]:
    """For each fault marked, the seconds from the mark to the first send acknowledged after
    it (None if none was)."""
    times: list[tuple[str, float | None]] = []
    for mark in (op for op in ops if op.f == MARK):
        first = next(
            (
                op.time_ns
                for op in ops
                if op.index > mark.index and op.f == SEND and op.type is OpType.OK
            ),
            None,
        )
        seconds = None if first is None else (first - mark.time_ns) / 1e9
        times.append((mark.error or "", seconds))
    return times
