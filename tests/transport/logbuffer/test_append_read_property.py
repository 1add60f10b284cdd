"""Property: whatever the message sizes and poll pattern, what is appended is read back intact.

Messages of 0 to 2 x MTU bytes (so unfragmented and fragmented ones) go through many rotations
of a 64 KiB term, with both appenders, from an initial term id anywhere (including just below
the 32-bit wrap), and are read back through the fragment assembler in order, each with the
position the offer returned.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import FragmentAssembler, Header, LogBuffers
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import UNFRAGMENTED
from tests.transport.logbuffer._harness import (
    MTU_LENGTH,
    Publisher,
    Subscriber,
    init_log,
)

TERM_LENGTH = d.TERM_MIN_LENGTH


@pytest.fixture(scope="module")
def log() -> Iterator[LogBuffers]:
    with (
        tempfile.TemporaryDirectory(dir="/dev/shm") as tmp,
        LogBuffers.create(Path(tmp) / "property.logbuffer", TERM_LENGTH) as log,
    ):
        yield log


def _payload(index: int, size: int) -> bytes:
    seed = index.to_bytes(4, "little")
    return (seed * (size // 4 + 1))[:size]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sizes=st.lists(st.integers(0, 2 * MTU_LENGTH), min_size=200, max_size=400),
    polls=st.lists(st.tuples(st.booleans(), st.integers(1, 20)), min_size=1, max_size=50),
    exclusive=st.booleans(),
    initial_term_id=st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(2**31 - 4, 2**31 - 1)),
)
def test_should_read_back_every_message_intact_and_in_order_across_rotations(
    log: LogBuffers,
    sizes: list[int],
    polls: list[tuple[bool, int]],
    exclusive: bool,
    initial_term_id: int,
) -> None:
    for term in log.term_buffers:  # a fresh log for each example
        term.set_memory(0, TERM_LENGTH, 0)
    log.meta_data_buffer.set_memory(0, d.LOG_META_DATA_LENGTH, 0)
    init_log(log, initial_term_id)
    log.metadata.term_length = TERM_LENGTH

    subscriber = Subscriber(log)
    publisher = Publisher(
        log, exclusive=exclusive, limit=lambda: subscriber.position + TERM_LENGTH // 2
    )
    received: list[tuple[bytes, int, int]] = []

    def on_message(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        assert header.flags == UNFRAGMENTED
        assert header.frame_length == length + 32
        received.append((buffer.get_bytes(offset, length), header.position, header.term_id))

    assembler = FragmentAssembler(on_message)
    expected: list[tuple[bytes, int]] = []
    for index, size in enumerate(sizes):
        payload = _payload(index, size)
        position = publisher.offer_until_done(payload, lambda: subscriber.poll(assembler, 10))
        expected.append((payload, position))
        do_poll, limit = polls[index % len(polls)]
        if do_poll:
            subscriber.poll(assembler, limit)
    for _ in range(10_000):
        if len(received) == len(expected):
            break
        subscriber.poll(assembler, 20)

    assert [(p, pos) for p, pos, _ in received] == expected
    bits = d.position_bits_to_shift(TERM_LENGTH)
    for _, position, term_id in received:
        begin = d.compute_term_begin_position(term_id, bits, initial_term_id)
        assert begin < position <= begin + TERM_LENGTH
    assert subscriber.position == expected[-1][1]
