"""The session's assembler: a fragmented answer's raw section copied straight out of its
fragments, everything else as a FragmentAssembler hands it over (fragments from a real term
appender)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aeromq.client import _answer_assembler
from aeromq.client._answer_assembler import AnswerAssembler
from aeromq.common import CorruptMessageError, encode_envelope, encode_envelope_around
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer import Header
from aeromq.transport.logbuffer.bytes_filler import PyBytesFiller
from aeromq.transport.logbuffer.frame_descriptor import MAX_MESSAGE_LENGTH
from tests.transport.logbuffer.test_fragment_assemblers import (
    MAX_PAYLOAD,
    TERM_ID,
    Fragment,
    Stream,
)

_PULL = 4


class Seen:
    """What the assembler handed to each of the session's three handlers."""

    def __init__(self) -> None:
        self.whole: list[bytes] = []
        self.answers: list[tuple[bytes, bytes, int]] = []
        self.malformed: list[tuple[bytes, CorruptMessageError]] = []

    def on_whole(self, buffer: AtomicBuffer, offset: int, length: int, _header: Header) -> None:
        self.whole.append(buffer.get_bytes(offset, length))

    def on_answer(self, data: bytes, raw: bytes, length: int) -> None:
        self.answers.append((data, raw, length))

    def on_malformed(self, head: bytes, error: CorruptMessageError) -> None:
        self.malformed.append((head, error))


@pytest.fixture(params=["native", "python"])
def assembler_and_seen(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[AnswerAssembler, Seen]]:
    """The assembler with the C filler, and with the Python one."""
    if request.param == "python":
        monkeypatch.setattr(_answer_assembler, "BytesFiller", PyBytesFiller)
    elif _answer_assembler.BytesFiller is PyBytesFiller:
        pytest.fail("the C filler (transport/logbuffer/_gather.c) is not built")
    seen = Seen()
    yield AnswerAssembler(seen.on_whole, seen.on_answer, seen.on_malformed), seen


def _answer(correlation_id: int, raw: bytes, tail_body: bytes, claimed: int = -1) -> bytes:
    head, tail = encode_envelope_around(
        correlation_id, 7, _PULL, tail_body, len(raw) if claimed < 0 else claimed
    )
    return head + raw + tail


def _deliver(assembler: AnswerAssembler, fragments: list[Fragment]) -> None:
    for fragment in fragments:
        assembler(fragment.term, fragment.offset, fragment.length, fragment.header)


@pytest.mark.parametrize(
    ("raw_length", "body_length"),
    [
        (3 * MAX_PAYLOAD, 5),  # the raw section ends inside the last fragment
        (3 * MAX_PAYLOAD - 7, 0),  # the raw section ends just before the last fragment's end
        (2 * MAX_PAYLOAD, 2 * MAX_PAYLOAD),  # a long tail, over two fragments of its own
        (MAX_PAYLOAD + 1, 1),
        (0, MAX_PAYLOAD * 2),  # an empty raw section in a fragmented message
    ],
)
def test_should_hand_over_a_fragmented_answer_with_its_raw_section_apart(
    assembler_and_seen: tuple[AnswerAssembler, Seen], raw_length: int, body_length: int
) -> None:
    assembler, seen = assembler_and_seen
    raw = bytes(i % 251 for i in range(raw_length))
    body = b"b" * body_length
    message = _answer(41, raw, body)
    fragments = Stream(7).message(message)
    assert len(fragments) > 1
    _deliver(assembler, fragments)
    _, tail = encode_envelope_around(41, 7, _PULL, body, raw_length)
    ids = encode_envelope(41, 7, 0, b"")[:-2]  # the ids, without the empty field 0
    assert seen.answers == [(ids + tail, raw, len(message))]
    assert type(seen.answers[0][1]) is bytes
    assert not seen.whole and not seen.malformed


def test_should_pass_unfragmented_messages_straight_through(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    message = _answer(1, b"stored batches", b"control")
    _deliver(assembler, Stream(7).message(message))
    assert seen.whole == [message] and not seen.answers


def test_should_assemble_a_fragmented_message_without_a_raw_section_whole(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    message = encode_envelope(2, 7, _PULL, b"q" * (3 * MAX_PAYLOAD))
    _deliver(assembler, Stream(7).message(message))
    assert seen.whole == [message] and not seen.answers


def test_should_assemble_an_answer_whole_when_its_first_fragment_is_shorter_than_the_head(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    """Fragments of 32 bytes (the envelope's head is up to 34): the raw section's length may
    go on in the second fragment, so the message is assembled whole, as before."""
    assembler, seen = assembler_and_seen
    stream = Stream(7)
    message = _answer(10, b"r" * 200, b"tail")
    end = stream.appender.append_fragmented_message(
        stream.writer, message, 0, len(message), 32, lambda *_: 0, TERM_ID
    )
    fragments, at = [], 0
    while at < end:
        fragments.append(Fragment(stream.term, at))
        at += (stream.term.get_int32(at) + 31) & -32
    assert fragments[0].length == 32 and len(fragments) > 2
    _deliver(assembler, fragments)
    assert seen.whole == [message] and not seen.answers and not seen.malformed


def test_should_drop_an_answer_with_a_missing_fragment_and_take_the_next_whole(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    stream = Stream(7)
    first = stream.message(_answer(3, b"r" * (3 * MAX_PAYLOAD), b"x"))
    second_raw = b"s" * (2 * MAX_PAYLOAD)
    second = stream.message(_answer(4, second_raw, b"y"))
    _deliver(assembler, [first[0], first[2], first[3], *second])  # first[1] lost
    assert [raw for _, raw, _ in seen.answers] == [second_raw]
    assert not seen.whole and not seen.malformed


def test_should_report_a_raw_section_longer_than_its_message_at_its_last_fragment(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    message = _answer(5, b"r" * (2 * MAX_PAYLOAD), b"", claimed=3 * MAX_PAYLOAD)
    fragments = Stream(7).message(message)
    _deliver(assembler, fragments)
    assert not seen.answers and not seen.whole
    [(head, error)] = seen.malformed
    assert head == message[: len(head)]
    assert "raw section runs past its message" in str(error)
    assert error.values["correlation_id"] == 5
    assert error.values["raw_length"] == 3 * MAX_PAYLOAD
    assert error.values["message_length"] == len(message)


def test_should_drop_a_raw_section_longer_than_any_message_at_its_first_fragment(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    message = _answer(6, b"r" * (2 * MAX_PAYLOAD), b"", claimed=MAX_MESSAGE_LENGTH)
    _deliver(assembler, Stream(7).message(message))
    [(_, error)] = seen.malformed
    assert error.values["correlation_id"] == 6 and error.values["raw_length"] == MAX_MESSAGE_LENGTH
    assert not seen.answers and not seen.whole  # its later fragments are dropped too


def test_should_assemble_interleaved_sessions_apart(
    assembler_and_seen: tuple[AnswerAssembler, Seen],
) -> None:
    assembler, seen = assembler_and_seen
    a_raw, b_raw = b"a" * (2 * MAX_PAYLOAD + 9), b"b" * (3 * MAX_PAYLOAD)
    a = Stream(7).message(_answer(8, a_raw, b"1"))
    b = Stream(9).message(_answer(9, b_raw, b"2"))
    interleaved = [f for pair in zip(a, b, strict=False) for f in pair] + b[len(a) :]
    _deliver(assembler, interleaved)
    assert sorted(raw for _, raw, _ in seen.answers) == [a_raw, b_raw]
