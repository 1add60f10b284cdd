"""An idempotent producer's sequence numbers: the producer state each batch carries, per queue.

With ``ProducerConfig.enable_idempotence`` a producer has a random 63-bit producer id, and each
queue it sends to a sequence of its own that counts records (from 0, wrapping at 2^31) within an
epoch. A send's record batch is encoded once without a producer state
(``producer/_batch.py``); when its first attempt picks its queue, :meth:`ProducerSequences.stamp`
gives it the queue's next sequences, which the session writes into the batch as it encodes the
request (``common/_send_envelope.py``: in C, the record batch's layout in
``common/record_batch/descriptor.py``). Every retry sends those same bytes to that same queue: a broker that stored them already answers the
stored result instead of storing them again (its producer state table, ``broker/store``).

A stamped batch that ends without being stored, or whose outcome is unknown, may leave a hole in
its queue's sequence, and every later batch would be refused (``OUT_OF_ORDER_SEQUENCE``). So when
a stamped send fails for good (:meth:`ProducerSequences.settle`), the queue starts a new epoch
at sequence 0, which the broker takes as the producer starting over (Kafka's epoch bump,
KIP-360); a send that failed for certain and was the queue's last stamped one just gives its
sequences back. A batch refused ``OUT_OF_ORDER_SEQUENCE`` (:meth:`ProducerSequences.out_of_order`)
is tried again (``WAIT``) while a batch stamped before it in its queue is still unsettled (it
overtook it: a retry through a failover); otherwise, if no try of it may have been stored, it is
stamped anew in a new epoch of its queue (``RESTAMP``: a later batch went first, as when its own
first try was refused and the next one's was not: a broker takes any first batch of a producer
it does not know); a batch that may be stored already is not (``FAIL``: the error is raised to
the application, which knows the send's outcome is unknown).

Caller: the send path (``SendPath.request`` stamps, the sync and async sends settle). Thread-safe.
"""

from __future__ import annotations

import enum
import secrets
import threading
from typing import Final

from aeromq.client import MessageQueue
from aeromq.common.record_batch import (
    ATTRIBUTES_OFFSET,
    MAX_SEQUENCE,
    TIMER_FLAG,
)
from aeromq.producer._attempt import Attempt, Stamp

__all__ = [
    "MAX_EPOCH",
    "MAX_RESTAMPS",
    "OutOfOrder",
    "ProducerSequences",
    "new_producer_id",
]

MAX_EPOCH: Final = (1 << 15) - 1
"""A queue's epochs go 0..MAX_EPOCH (an i16); past it, the queue takes a new producer id."""
MAX_RESTAMPS: Final = 2
"""How many times one send is stamped anew after ``OUT_OF_ORDER_SEQUENCE`` before the error is
raised: a broker that refuses a fresh epoch's first batch is not going to take it."""
_SEQUENCE_MODULUS: Final = MAX_SEQUENCE + 1
_tuple_new: Final = tuple.__new__
_TIMER_BYTE: Final = ATTRIBUTES_OFFSET + 1  # TIMER_FLAG's byte of the u16 (little-endian)
_TIMER_BIT: Final = TIMER_FLAG >> 8


def new_producer_id() -> int:
    """A random 63-bit producer id (non-negative i64; 2^-63 odds that two producers share one,
    and a shared one matters only if they also share a queue, an epoch and a sequence)."""
    return secrets.randbits(63)


class OutOfOrder(enum.Enum):
    """What to do with a batch refused ``OUT_OF_ORDER_SEQUENCE`` (see the module)."""

    WAIT = "wait"
    RESTAMP = "restamp"
    FAIL = "fail"


class _Queue:
    """One queue's sequence: producer id, epoch, next sequence, and the stamped batches not
    settled yet (serial -> end of their sequences), in stamping order."""

    __slots__ = ("epoch", "next", "producer_id", "unsettled")

    def __init__(self, producer_id: int) -> None:
        self.producer_id = producer_id
        self.epoch = 0
        self.next = 0
        self.unsettled: dict[int, int] = {}

    def start_over(self) -> None:
        """A new epoch from sequence 0 (a new producer id once the epochs run out)."""
        if self.epoch >= MAX_EPOCH:
            self.producer_id = new_producer_id()
            self.epoch = 0
        else:
            self.epoch += 1
        self.next = 0


class ProducerSequences:
    """The sequences of one producer's queues (see the module). ``producer_id``: None, a random
    one."""

    def __init__(self, producer_id: int | None = None) -> None:
        self.producer_id = new_producer_id() if producer_id is None else producer_id
        self._queues: dict[MessageQueue, _Queue] = {}
        self._serial = 0
        self._lock = threading.Lock()
        # the last queue stamped (the object the router gave) and its sequence: a producer
        # sending to one queue finds it without hashing it (a Python __hash__ of a dataclass,
        # twice a send: stamp and settle)
        self._last: tuple[MessageQueue | None, _Queue | None] = (None, None)

    def stamp(self, attempt: Attempt, queue: MessageQueue) -> Stamp | None:
        """The producer state of ``attempt`` to ``queue``: its stamp, made now if it was not
        for ``queue`` (a batch stamped for another queue gives its sequences back first); the
        session writes it into the batch as it encodes the request (``SendRequest``,
        ``common/_send_envelope.py``), so every try sends the same bytes.

        A timer message's batch (``TIMER_FLAG``) is sent as it is, not stamped (None): the
        broker holds it in its timer topic, outside the queue's sequence (its retry may store
        it twice).

        Caller: ``SendPath.request``. Affects: the queue's next sequence; ``attempt.stamp``."""
        if attempt.batch[_TIMER_BYTE] & _TIMER_BIT:
            return None
        stamp = attempt.stamp
        if stamp is not None:
            if stamp.queue == queue:
                return stamp
            self.settle(attempt, ok=False)
        count = len(attempt.unique_ids)
        with self._lock:
            last, state = self._last
            if queue is not last:
                state = self._queues.get(queue)
                if state is None:
                    state = self._queues[queue] = _Queue(self.producer_id)
                self._last = (queue, state)
            assert state is not None
            base = state.next
            state.next = (base + count) % _SEQUENCE_MODULUS
            self._serial += 1
            state.unsettled[self._serial] = state.next
            stamp = attempt.stamp = _tuple_new(  # (a NamedTuple's __new__ is a Python function)
                Stamp, (queue, state.producer_id, state.epoch, base, self._serial)
            )
        return stamp

    def settle(self, attempt: Attempt, *, ok: bool) -> None:
        """``attempt`` is over: stored (``ok``), or failed for good (or moved to another
        queue). A failure starts its queue over, unless it certainly stored nothing and was the
        queue's last stamped batch (its sequences are given back).

        Caller: the sync and async sends, once per send; ``stamp``. Affects: the queue."""
        stamp = attempt.stamp
        if stamp is None:
            return
        attempt.stamp = None
        with self._lock:
            last, state = self._last
            if stamp.queue is not last:
                state = self._queues.get(stamp.queue)
            if state is None:
                return
            end = state.unsettled.pop(stamp.serial, None)
            if ok or end is None or state.epoch != stamp.epoch:
                return
            if not attempt.maybe_stored and state.next == end:
                state.next = stamp.base_sequence  # nothing after it: its sequences again
            else:
                state.start_over()

    def out_of_order(self, attempt: Attempt) -> OutOfOrder:
        """What to do with ``attempt``, refused ``OUT_OF_ORDER_SEQUENCE`` (see the module).
        :data:`OutOfOrder.RESTAMP` has settled its stamp already (starting its queue over
        when its sequences are still the queue's): its next try stamps it anew.

        Caller: ``SendPath.retry_delay_ms``."""
        stamp = attempt.stamp
        if stamp is None:
            return OutOfOrder.FAIL
        with self._lock:
            state = self._queues.get(stamp.queue)
            if state is None:
                return OutOfOrder.FAIL
            if next(iter(state.unsettled), stamp.serial) != stamp.serial:
                return OutOfOrder.WAIT  # an earlier batch of the queue is still on its way
            if attempt.maybe_stored or attempt.restamps >= MAX_RESTAMPS:
                return OutOfOrder.FAIL
            if state.epoch == stamp.epoch and state.producer_id == stamp.producer_id:
                state.start_over()  # the queue's sequence went past it (a later batch first)
            state.unsettled.pop(stamp.serial, None)
        attempt.stamp = None
        attempt.restamps += 1
        return OutOfOrder.RESTAMP
