"""Random sequences of writes, batches, claims, aborts and reads against a model (a deque)."""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport.concurrent import (
    INSUFFICIENT_CAPACITY,
    AtomicBuffer,
    ManyToOneRingBuffer,
    OneToOneRingBuffer,
)
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.ring_buffer_descriptor import TRAILER_LENGTH

Message = tuple[int, bytes]

operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(0, 160)),
        st.tuples(st.just("batch"), st.lists(st.integers(0, 40), min_size=1, max_size=8)),
        st.tuples(st.just("claim"), st.integers(0, 40), st.booleans()),
        st.tuples(st.just("read"), st.integers(1, 6)),
        st.tuples(st.just("controlled"), st.lists(st.sampled_from(list(Action)), min_size=1)),
    ),
    max_size=80,
)


class Model:
    """What the consumer must see: every accepted record, once, in order."""

    def __init__(self, ring: OneToOneRingBuffer | ManyToOneRingBuffer) -> None:
        self.ring = ring
        self.pending: deque[Message] = deque()
        self.serial = 0

    def payload(self, length: int) -> tuple[int, bytes]:
        self.serial += 1
        length = min(length, self.ring.max_msg_length)
        data = bytes((self.serial * 7 + k) & 0xFF for k in range(length))
        return 1 + self.serial % 50, data

    def apply(self, op: tuple[Any, ...]) -> None:
        ring = self.ring
        kind = op[0]
        if kind == "write":
            msg_type_id, data = self.payload(op[1])
            if ring.write(msg_type_id, data):
                self.pending.append((msg_type_id, data))
        elif kind == "batch":
            msg_type_id = self.payload(0)[0]
            records = [self.payload(n)[1] for n in op[1]]
            written = ring.write_batch(msg_type_id, records)
            assert 0 <= written <= len(records)
            self.pending.extend((msg_type_id, r) for r in records[:written])
        elif kind == "claim":
            msg_type_id, data = self.payload(op[1])
            index = ring.try_claim(msg_type_id, len(data))
            if index != INSUFFICIENT_CAPACITY:
                ring.buffer.put_bytes(index, data)
                if op[2]:
                    ring.commit(index)
                    self.pending.append((msg_type_id, data))
                else:
                    ring.abort(index)
        elif kind == "read":
            self.read(op[1])
        else:
            self.controlled_read(op[1])
        assert 0 <= ring.producer_position() - ring.consumer_position() <= ring.capacity
        assert ring.size() == ring.producer_position() - ring.consumer_position()

    def read(self, limit: int) -> int:
        def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> None:
            assert (msg_type_id, buffer.get_bytes(index, length)) == self.pending.popleft()

        count = self.ring.read(handler, limit)
        assert count <= limit
        return count

    def controlled_read(self, actions: list[Action]) -> None:
        cycle = itertools.cycle(actions)
        stopped = False
        consumed = 0

        def handler(msg_type_id: int, buffer: AtomicBuffer, index: int, length: int) -> Action:
            nonlocal stopped, consumed
            assert not stopped, "called after ABORT or BREAK"
            assert (msg_type_id, buffer.get_bytes(index, length)) == self.pending[0]
            action = next(cycle)
            if action is not Action.ABORT:
                self.pending.popleft()
                consumed += 1
            stopped = action in (Action.ABORT, Action.BREAK)
            return action

        assert self.ring.controlled_read(handler) == consumed

    def drain(self) -> None:
        for _ in range(4):  # a read stops at the end of the buffer: at most a few reads
            self.read(1 << 30)
        assert not self.pending
        ring = self.ring
        assert ring.size() == 0
        assert ring.consumer_position() == ring.producer_position()
        assert ring.buffer.get_bytes(0, ring.capacity) == bytes(ring.capacity)


@settings(max_examples=150, deadline=None)
@given(
    cls=st.sampled_from([OneToOneRingBuffer, ManyToOneRingBuffer]),
    capacity=st.sampled_from([64, 128, 256, 1024]),
    ops=operations,
)
def test_should_deliver_random_records_intact_once_and_in_order(
    cls: type[OneToOneRingBuffer | ManyToOneRingBuffer], capacity: int, ops: list[Any]
) -> None:
    model = Model(cls(AtomicBuffer.allocate(capacity + TRAILER_LENGTH)))
    for op in ops:
        model.apply(op)
    model.drain()


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.sampled_from([64, 256]),
    sizes=st.lists(st.integers(0, 32), min_size=1, max_size=300),
)
def test_should_survive_many_laps_of_the_buffer(capacity: int, sizes: list[int]) -> None:
    for cls in (OneToOneRingBuffer, ManyToOneRingBuffer):
        model = Model(cls(AtomicBuffer.allocate(capacity + TRAILER_LENGTH)))
        for size in sizes:
            while True:
                msg_type_id, data = model.payload(size)
                if model.ring.write(msg_type_id, data):
                    model.pending.append((msg_type_id, data))
                    break
                model.read(1 << 30)
        model.drain()
