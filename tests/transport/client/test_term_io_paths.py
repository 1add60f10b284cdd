"""The native polls and offer (``transport/logbuffer/_term_io.c``) against their Python references.

Two identical logs get the same steps, one through the native call, one through the Python path
(``Image.python_poll`` / ``python_controlled_poll``; an ``ExclusivePublication`` without its
native offer; ``Subscription.round_robin_poll`` over stub images): every return code, position,
handler call (its arguments, the header's fields, the position it sees), error report and byte
of the logs must match. The steps mix appends of
0 to 2 x MTU bytes (fragments), claims left open (a negative length that stops a poll), term ends
(padding, rotation), polls with random limits and per-fragment actions (ABORT, BREAK, COMMIT,
CONTINUE, a raise, a close), back pressure, disconnection, regions outside their buffer and
closes.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.transport.client import Image, Subscription
from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.concurrent.counters_descriptor import checked_counter_offset
from aeromq.transport.logbuffer import BufferClaim, Header, LogBuffers
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    fill_default_header,
    initialise_tails,
    set_is_connected,
)
from aeromq.transport.logbuffer.term_io import NATIVE_TERM_IO

from .conftest import BareLog

pytestmark = pytest.mark.skipif(not NATIVE_TERM_IO, reason="the native helper is not built")

TERM_LENGTH = 64 * 1024
INITIAL_TERM_IDS = st.sampled_from([7, -5, 2**31 - 2, -(2**31)])
OUTCOMES = ["continue"] * 12 + ["commit"] * 3 + ["break"] * 2 + ["abort"] * 2 + ["raise", "close"]
"""A handler's answer to a fragment; a close (of the image, by the handler) ends the rest."""


@pytest.fixture(scope="module")
def tmp() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(dir="/dev/shm") as name:
        yield Path(name)


def payload(seed: int, length: int) -> bytes:
    return bytes((seed + i) & 0xFF for i in range(length))


# ------------------------------------------------------------------------------------------
# Polls


class Side:
    """One log and its image, polled natively or in Python."""

    def __init__(self, path: Path, initial_term_id: int, native: bool) -> None:
        self.log = BareLog(path, TERM_LENGTH, initial_term_id)
        self.errors: list[str] = []
        self.image = Image(
            None,  # type: ignore[arg-type]  # no subscription: the image is driven alone
            42,
            self.log.position,
            self.log.log,
            self.report,
            "aeron:ipc",
            5,
        )
        self.native = native
        self.claims: list[BufferClaim] = []

    def report(self, exc: Exception) -> None:
        self.errors.append(repr(exc))

    def claim(self, length: int) -> None:
        log = self.log
        claim = BufferClaim()
        result = log.appenders[log.index].claim(
            log.term_id, log.term_offset, log.header_writer, length, claim
        )
        if result < 0:  # padded: the next term
            log.term_id += 1
            log.term_offset = 0
            log.index = (log.index + 1) % 3
            self.claim(length)
            return
        log.term_offset = result
        self.claims.append(claim)

    def poll(self, limit: int, controlled: bool, script: list[str]) -> tuple[int, list[object]]:
        image = self.image
        seen: list[object] = []

        def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
            outcome = script[len(seen) % len(script)]
            seen.append(
                (
                    buffer.get_bytes(offset, length),
                    offset,
                    header.offset,
                    header.term_id,
                    header.term_offset,
                    header.flags,
                    header.buffer is buffer,
                    image.position,
                    outcome,
                )
            )
            if outcome == "raise":
                raise ValueError(f"poison at {header.offset}")
            if outcome == "close":
                image.close()
            return {"commit": Action.COMMIT, "break": Action.BREAK, "abort": Action.ABORT}.get(
                outcome, Action.CONTINUE
            )

        if controlled:
            poll = image.controlled_poll if self.native else image.python_controlled_poll
        else:
            poll = image.poll if self.native else image.python_poll
        return poll(handler, limit), seen  # type: ignore[arg-type]  # a controlled handler serves both


POLL = st.tuples(
    st.just("poll"),
    st.integers(1, 12),
    st.booleans(),
    st.lists(st.sampled_from(OUTCOMES), min_size=1, max_size=4),
)
POLL_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2 * 1376)),
        st.tuples(st.just("append"), st.integers(900, 1376)),
        st.tuples(st.just("append"), st.integers(0, 100)),
        st.tuples(st.just("claim"), st.integers(0, 200)),
        st.tuples(st.just("commit"), st.just(0)),
        POLL,
        POLL,
        POLL,
    ),
    min_size=30,
    max_size=120,
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(initial_term_id=INITIAL_TERM_IDS, steps=POLL_STEPS)
def test_should_poll_as_the_python_reference_does(
    tmp: Path, initial_term_id: int, steps: list[tuple[object, ...]]
) -> None:
    native = Side(tmp / "native.logbuffer", initial_term_id, True)
    python = Side(tmp / "python.logbuffer", initial_term_id, False)
    try:
        for number, step in enumerate(steps):
            kind = step[0]
            if kind == "append":
                data = payload(number, int(step[1]))  # type: ignore[call-overload]  # an int by the strategy
                native.log.append(data)
                python.log.append(data)
            elif kind == "claim":
                native.claim(int(step[1]))  # type: ignore[call-overload]  # an int by the strategy
                python.claim(int(step[1]))  # type: ignore[call-overload]  # an int by the strategy
            elif kind == "commit":
                for side in (native, python):
                    for claim in side.claims:
                        claim.commit()
                    side.claims.clear()
            else:
                _, limit, controlled, script = step
                got = native.poll(limit, controlled, script)  # type: ignore[arg-type]  # typed by the strategy
                want = python.poll(limit, controlled, script)  # type: ignore[arg-type]  # typed by the strategy
                assert got == want, f"step {number}: {step}"
                assert native.errors == python.errors
                assert native.image.position == python.image.position
        assert native.image.is_closed == python.image.is_closed
    finally:
        native.log.log.close()
        python.log.log.close()


def test_should_give_an_empty_poll_nothing_and_leave_the_position(tmp: Path) -> None:
    side = Side(tmp / "empty.logbuffer", 7, True)
    try:
        calls: list[int] = []
        assert side.image.poll(lambda *args: calls.append(1), 10) == 0
        assert side.image.controlled_poll(lambda *args: Action.CONTINUE, 10) == 0
        assert calls == [] and side.image.position == 0
    finally:
        side.log.log.close()


def test_should_propagate_what_is_not_an_exception_without_moving_the_position(
    tmp: Path,
) -> None:
    side = Side(tmp / "interrupt.logbuffer", 7, True)
    try:
        side.log.append(b"x" * 10)

        def interrupt(*args: object) -> None:
            raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            side.image.poll(interrupt, 10)
        assert side.image.position == 0 and side.errors == []
    finally:
        side.log.log.close()


def test_should_poll_a_one_image_subscription_straight_through_its_reader(tmp: Path) -> None:
    side = Side(tmp / "first.logbuffer", 7, True)
    try:
        subscription = Subscription(None, "aeron:ipc", 1001, 1, None, None)  # type: ignore[arg-type]  # no conductor: driven alone
        assert subscription.poll(lambda *args: None, 10) == 0
        subscription.add_image(side.image)
        # the methods call the image's native polls themselves (no round robin between)
        assert subscription._poll == side.image.poll_call
        assert subscription._controlled_poll == side.image.controlled_poll_call
        side.log.append(b"one")
        seen: list[bytes] = []
        assert subscription.poll(lambda b, o, n, h: seen.append(b.get_bytes(o, n)), 10) == 1
        assert seen == [b"one"]
    finally:
        side.log.log.close()


class StubImages:
    """Images whose polls record ``(image, limit)`` and read ``counts[call % len]`` fragments."""

    def __init__(self, counts: list[int]) -> None:
        self.calls: list[tuple[int, int, str]] = []
        self.counts = counts
        self.made = 0

    def image(self) -> SimpleNamespace:
        number = self.made
        self.made += 1

        def poll(kind: str) -> object:
            def call(handler: object, limit: int) -> int:
                self.calls.append((number, limit, kind))
                return min(limit, self.counts[len(self.calls) % len(self.counts)])

            return call

        return SimpleNamespace(
            poll_call=poll("poll"),
            controlled_poll_call=poll("controlled"),
            correlation_id=number,
            close=lambda: None,
        )


ROUND_ROBIN_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.just(0), st.booleans()),
        st.tuples(st.just("remove"), st.integers(0, 8), st.booleans()),
        st.tuples(st.just("poll"), st.integers(0, 12), st.booleans()),
        st.tuples(st.just("poll"), st.integers(0, 12), st.booleans()),
    ),
    min_size=5,
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(counts=st.lists(st.integers(0, 5), min_size=1, max_size=5), steps=ROUND_ROBIN_STEPS)
def test_should_poll_several_images_round_robin_as_the_python_reference_does(
    counts: list[int], steps: list[tuple[str, int, bool]]
) -> None:
    sides = []
    for native in (True, False):
        subscription = Subscription(None, "aeron:ipc", 1001, 1, None, None)  # type: ignore[arg-type]  # no conductor: driven alone
        subscription._native_round_robin = native
        sides.append((subscription, StubImages(counts)))
    for number, (kind, value, controlled) in enumerate(steps):
        results = []
        for subscription, stubs in sides:
            if kind == "add":
                subscription.add_image(stubs.image())  # type: ignore[arg-type]  # a stub image: its polls alone
            elif kind == "remove":
                subscription.remove_image(value)
            else:
                poll = subscription.controlled_poll if controlled else subscription.poll
                results.append(poll(None, value))  # type: ignore[arg-type]  # the stubs take any handler
        assert results[:1] == results[1:], f"step {number}"
        assert sides[0][1].calls == sides[1][1].calls, f"step {number}"


# ------------------------------------------------------------------------------------------
# Offers


def exclusive_publication(path: Path, initial_term_id: int, native: bool) -> ExclusivePublication:
    log = LogBuffers.create(path, TERM_LENGTH)
    meta = log.meta_data_buffer
    log.metadata.initial_term_id = initial_term_id
    log.metadata.mtu_length = 1408
    fill_default_header(meta, 42, 1001, initial_term_id)
    initialise_tails(meta, initial_term_id)
    set_is_connected(meta, True)
    conductor = SimpleNamespace(counters_values_buffer=AtomicBuffer(bytearray(1024)))
    publication = ExclusivePublication(
        conductor,  # type: ignore[arg-type]  # only its values buffer is used here
        "aeron:ipc",
        1001,
        42,
        0,
        0,
        log,
        1,
        1,
    )
    if not native:
        publication._native_offer = None
    return publication


def limit_of(publication: ExclusivePublication, value: int) -> None:
    values = publication._conductor.counters_values_buffer
    values.put_int64_ordered(checked_counter_offset(values.capacity, 0), value)


def log_bytes(publication: ExclusivePublication) -> list[bytes]:
    log = publication.log_buffers
    buffers = [*log.term_buffers, log.meta_data_buffer]
    return [buffer.get_bytes(0, buffer.capacity) for buffer in buffers]


OFFER_STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("offer"),
            st.integers(0, 2 * 1376),
            st.integers(0, 5),
            st.sampled_from(["bytes", "bytearray", "memoryview", "buffer"]),
        ),
        st.tuples(st.just("offer"), st.integers(1000, 1376), st.just(0), st.just("bytes")),
        st.tuples(
            st.just("outside"),
            st.integers(0, 100),
            st.sampled_from([1, 8, 2**63, 2**70]),
            st.just("bytes"),
        ),
        st.tuples(st.just("supplied"), st.integers(0, 100), st.just(0), st.just("bytes")),
        st.tuples(st.just("limit"), st.integers(-64, 4096), st.just(0), st.just("")),
        st.tuples(st.just("connected"), st.integers(0, 1), st.just(0), st.just("")),
        st.tuples(st.just("close"), st.just(0), st.just(0), st.just("")),
    ),
    min_size=30,
    max_size=150,
)


def source(kind: str, data: bytes, pad: int) -> object:
    raw = bytes(pad) + data
    if kind == "bytearray":
        return bytearray(raw)
    if kind == "memoryview":
        return memoryview(raw)
    if kind == "buffer":
        return AtomicBuffer(bytearray(raw))
    return raw


def apply(
    publication: ExclusivePublication, number: int, step: tuple[str, int, int, str]
) -> object:
    kind, value, pad, buffer_kind = step
    if kind == "offer":
        return publication.offer(source(buffer_kind, payload(number, value), pad), pad, value)  # type: ignore[arg-type]  # a buffer by construction
    if kind == "outside":
        try:
            return publication.offer(payload(number, value), pad, value)
        except Exception as exc:
            return repr(exc)
    if kind == "supplied":
        return publication.offer(payload(number, value), 0, -1, lambda b, o, n: number)
    if kind == "limit":
        limit_of(publication, publication.position + value)
        return None
    if kind == "connected":
        set_is_connected(publication.log_buffers.meta_data_buffer, bool(value))
        return None
    publication.internal_close()
    return None


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(initial_term_id=INITIAL_TERM_IDS, steps=OFFER_STEPS)
def test_should_offer_as_the_python_reference_does(
    tmp: Path, initial_term_id: int, steps: list[tuple[str, int, int, str]]
) -> None:
    native = exclusive_publication(tmp / "native.logbuffer", initial_term_id, True)
    python = exclusive_publication(tmp / "python.logbuffer", initial_term_id, False)
    try:
        for publication in (native, python):
            limit_of(publication, 1 << 40)
        for number, step in enumerate(steps):
            got = apply(native, number, step)
            want = apply(python, number, step)
            assert got == want, f"step {number}: {step}"
            assert (native.position, native.term_id, native.term_offset) == (
                python.position,
                python.term_id,
                python.term_offset,
            )
            assert log_bytes(native) == log_bytes(python), f"step {number}: {step}"
    finally:
        native.log_buffers.close()
        python.log_buffers.close()
