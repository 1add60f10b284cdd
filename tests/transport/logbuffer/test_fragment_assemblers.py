"""Both assemblers: interleaved sessions, gaps, and ABORT on a message's last fragment."""

from __future__ import annotations

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer import (
    BufferBuilder,
    ControlledFragmentAssembler,
    FragmentAssembler,
    Header,
    HeaderWriter,
    TermAppender,
)
from aeromq.transport.logbuffer import log_buffer_descriptor as d
from aeromq.transport.logbuffer.frame_descriptor import BEGIN_FLAG, END_FLAG, UNFRAGMENTED

TERM_LENGTH = 64 * 1024
INITIAL_TERM_ID = 100
TERM_ID = 102
MAX_PAYLOAD = 1408 - 32
BITS = 16


class Fragment:
    """One fragment as a reader hands it over: its own header over a frame in a term."""

    def __init__(self, term: AtomicBuffer, frame_offset: int) -> None:
        self.header = Header(INITIAL_TERM_ID, BITS, context="image")
        self.header.buffer = term
        self.header.offset = frame_offset
        self.term = term
        self.offset = frame_offset + 32
        self.length = term.get_int32(frame_offset) - 32


class Stream:
    """A term written by one session, cut into the fragments a reader would deliver."""

    def __init__(self, session_id: int) -> None:
        self.term = AtomicBuffer.allocate(TERM_LENGTH)
        meta = AtomicBuffer.allocate(d.LOG_META_DATA_LENGTH)
        d.fill_default_header(meta, session_id, 1, INITIAL_TERM_ID)
        d.initialise_tail_with_term_id(meta, 0, TERM_ID)
        self.writer = HeaderWriter(d.default_frame_header(meta))
        self.appender = TermAppender(self.term, meta, 0)
        self.offset = 0

    def message(self, payload: bytes, reserved: int = 0) -> list[Fragment]:
        start = self.offset
        if len(payload) <= MAX_PAYLOAD:
            end = self.appender.append_unfragmented_message(
                self.writer, payload, 0, len(payload), lambda *_: reserved, TERM_ID
            )
        else:
            end = self.appender.append_fragmented_message(
                self.writer, payload, 0, len(payload), MAX_PAYLOAD, lambda *_: reserved, TERM_ID
            )
        fragments = []
        offset = start
        while offset < end:
            fragments.append(Fragment(self.term, offset))
            offset += (self.term.get_int32(offset) + 31) & -32
        self.offset = end
        return fragments


class Delivered:
    def __init__(self, actions: list[Action] | None = None) -> None:
        self.messages: list[tuple[bytes, int, int, int, int, int, int, int, object]] = []
        self.actions = actions or []

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        self.messages.append(
            (
                buffer.get_bytes(offset, length),
                header.session_id,
                header.flags,
                header.frame_length,
                header.term_offset,
                header.position,
                header.reserved_value,
                header.term_id,
                header.context,
            )
        )
        return self.actions.pop(0) if self.actions else Action.CONTINUE


def _feed(assembler: object, fragments: list[Fragment]) -> list[object]:
    return [assembler(f.term, f.offset, f.length, f.header) for f in fragments]  # type: ignore[operator]


def _kinds() -> list[type]:
    return [FragmentAssembler, ControlledFragmentAssembler]


@pytest.mark.parametrize("kind", _kinds())
def test_should_pass_unfragmented_messages_straight_through(kind: type) -> None:
    stream = Stream(1)
    delivered = Delivered()
    fragments = stream.message(b"small", reserved=5)
    _feed(kind(delivered), fragments)
    assert delivered.messages == [
        (b"small", 1, UNFRAGMENTED, 37, 0, (2 << BITS) + 64, 5, TERM_ID, "image")
    ]


@pytest.mark.parametrize("kind", _kinds())
def test_should_assemble_a_message_with_a_header_describing_the_whole(kind: type) -> None:
    stream = Stream(1)
    stream.message(b"lead")  # so the message starts at term offset 64
    message = bytes(range(250)) * 20  # 5000 bytes: 4 fragments
    fragments = stream.message(message, reserved=77)
    assert [f.header.flags for f in fragments] == [BEGIN_FLAG, 0, 0, END_FLAG]
    delivered = Delivered()
    _feed(kind(delivered), fragments)
    ((payload, session, flags, frame_length, term_offset, position, reserved, term_id, ctx),) = (
        delivered.messages
    )
    assert payload == message
    assert (session, flags, frame_length, term_offset) == (1, UNFRAGMENTED, 5000 + 32, 64)
    assert position == (2 << BITS) + stream.offset == fragments[-1].header.position
    assert (reserved, term_id, ctx) == (77, TERM_ID, "image")


@pytest.mark.parametrize("kind", _kinds())
def test_should_assemble_interleaved_sessions_apart(kind: type) -> None:
    one, two = Stream(1), Stream(2)
    a = one.message(b"A" * 3000)
    b = two.message(b"B" * 2000)
    c = two.message(b"c")
    delivered = Delivered()
    _feed(kind(delivered), [a[0], b[0], a[1], b[1], c[0], a[2]])
    assert [(m[0], m[1]) for m in delivered.messages] == [
        (b"B" * 2000, 2),
        (b"c", 2),
        (b"A" * 3000, 1),
    ]


@pytest.mark.parametrize("kind", _kinds())
def test_should_drop_a_message_with_a_missing_fragment(kind: type) -> None:
    stream = Stream(3)
    broken = stream.message(b"x" * 5000)
    whole = stream.message(b"y" * 3000)
    delivered = Delivered()
    assembler = kind(delivered)
    _feed(assembler, [broken[0], broken[2]])  # broken[1] was lost: discard
    _feed(assembler, [broken[1]])  # late and out of order: nothing to continue
    _feed(assembler, [broken[3]])
    _feed(assembler, whole)
    assert [m[0] for m in delivered.messages] == [b"y" * 3000]


@pytest.mark.parametrize("kind", _kinds())
def test_should_ignore_fragments_of_a_message_joined_midway(kind: type) -> None:
    stream = Stream(4)
    fragments = stream.message(b"z" * 3000)
    delivered = Delivered()
    _feed(kind(delivered), fragments[1:])
    assert delivered.messages == []


def test_should_roll_back_on_abort_so_the_redelivered_last_fragment_completes_again() -> None:
    one, two = Stream(1), Stream(2)
    a = one.message(b"A" * 3000)
    b = two.message(b"B" * 2000)
    delivered = Delivered([Action.ABORT, Action.ABORT, Action.COMMIT, Action.BREAK])
    assembler = ControlledFragmentAssembler(delivered)
    assert _feed(assembler, [a[0], b[0], a[1]]) == [Action.CONTINUE] * 3
    assert _feed(assembler, [a[2]]) == [Action.ABORT]
    assert _feed(assembler, [a[2]]) == [Action.ABORT]  # the reader delivers it again
    assert _feed(assembler, [b[1], a[2]]) == [Action.COMMIT, Action.BREAK]
    assert [m[0] for m in delivered.messages] == [
        b"A" * 3000,
        b"A" * 3000,
        b"B" * 2000,
        b"A" * 3000,
    ]
    assert all(m[3] == 3032 for m in delivered.messages if m[1] == 1)
    # the message is done: its last fragment again is no longer a continuation
    assert _feed(assembler, [a[2]]) == [Action.CONTINUE]
    assert len(delivered.messages) == 4


def test_should_return_the_delegates_action_for_unfragmented_messages() -> None:
    stream = Stream(1)
    delivered = Delivered([Action.BREAK])
    assert _feed(ControlledFragmentAssembler(delivered), stream.message(b"m")) == [Action.BREAK]


@pytest.mark.parametrize("kind", _kinds())
def test_should_free_and_clear_session_builders(kind: type) -> None:
    stream = Stream(9)
    fragments = stream.message(b"q" * 3000)
    delivered = Delivered()
    assembler = kind(delivered)
    _feed(assembler, fragments[:2])
    assembler.clear()
    _feed(assembler, fragments[2:])
    assert delivered.messages == []
    assert assembler.free_session_buffer(9)
    assert not assembler.free_session_buffer(9)


# --- BufferBuilder ---------------------------------------------------------------------------


def test_should_grow_the_builder_by_half_again_and_keep_its_bytes() -> None:
    builder = BufferBuilder()
    assert builder.capacity == 4096
    source = AtomicBuffer(bytearray(range(256)) * 40)
    builder.append(source, 0, 4000).append(source, 4000, 2000)
    assert builder.capacity == 6144
    assert builder.limit == 6000
    assert builder.buffer.get_bytes(0, 6000) == source.get_bytes(0, 6000)
    builder.append(source, 0, 10_000 - 6000)
    assert builder.capacity == 13824  # 4096 -> 6144 -> 9216 -> 13824


def test_should_roll_the_limit_back_and_refuse_one_out_of_range() -> None:
    builder = BufferBuilder(100)
    builder.append(AtomicBuffer(bytearray(b"abcdef")), 0, 6)
    builder.limit = 3
    builder.append(AtomicBuffer(bytearray(b"XY")), 0, 2)
    assert builder.buffer.get_bytes(0, builder.limit) == b"abcXY"
    with pytest.raises(ConfigurationError, match="limit=5000 capacity=4096"):
        builder.limit = 5000
    with pytest.raises(ConfigurationError):
        BufferBuilder(-1)


def test_should_reset_and_compact_the_builder() -> None:
    builder = BufferBuilder()
    builder.append(AtomicBuffer(bytearray(20_000)), 0, 20_000)
    builder.next_term_offset = 64
    builder.reset()
    assert (builder.limit, builder.next_term_offset) == (0, -1)
    builder.compact()
    assert builder.capacity == 4096
