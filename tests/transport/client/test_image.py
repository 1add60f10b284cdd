"""``Image``: polls, the controlled-poll action table, bounded and block polls, positions."""

from __future__ import annotations

import pytest

from aeromq.transport import ConfigurationError, TransportStateError
from aeromq.transport.client import Image
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.action import Action
from aeromq.transport.logbuffer import FragmentAssembler, Header
from aeromq.transport.logbuffer.log_buffer_descriptor import set_end_of_stream_position

from .conftest import BareLog

FRAME = 64  # a 20-byte payload takes 52 bytes, aligned to 64


def make_image(log: BareLog, errors: list[Exception] | None = None) -> Image:
    sink = errors if errors is not None else []
    return Image(None, 42, log.position, log.log, sink.append, "aeron:ipc", 5)  # type: ignore[arg-type]


def payloads(count: int) -> list[bytes]:
    return [b"message-%012d" % i for i in range(count)]  # 20 bytes each


class Recorder:
    def __init__(self, actions: dict[int, Action] | None = None, image: Image | None = None):
        self.received: list[bytes] = []
        self.positions_seen: list[int] = []
        self.actions = actions or {}
        self.image = image

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        if self.image is not None:
            self.positions_seen.append(self.image.position)
        self.received.append(buffer.get_bytes(offset, length))
        return self.actions.get(len(self.received), Action.CONTINUE)


def test_should_poll_fragments_in_order_and_advance_the_position(bare_log: BareLog) -> None:
    for payload in payloads(5):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder()

    assert image.poll(recorder, 10) == 5
    assert recorder.received == payloads(5)
    assert image.position == 5 * FRAME
    assert image.poll(recorder, 10) == 0


def test_should_stop_at_the_fragment_limit(bare_log: BareLog) -> None:
    for payload in payloads(5):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder()

    assert image.poll(recorder, 2) == 2
    assert image.position == 2 * FRAME
    assert image.poll(recorder, 10) == 3
    assert recorder.received == payloads(5)


def test_should_step_over_the_end_of_term_padding_into_the_next_term(bare_log: BareLog) -> None:
    big = b"x" * 1000  # 1056-byte frames: the 63rd does not fit in a 64 KiB term
    for _ in range(70):
        bare_log.append(big)
    image = make_image(bare_log)
    received: list[int] = []
    total = 0
    for _ in range(10):
        total += image.poll(lambda b, o, n, h: received.append(h.term_id), 100)
    assert total == 70
    assert received[0] == 7 and received[-1] == 8
    assert image.position == 64 * 1024 + (70 - 62) * 1056


@pytest.mark.parametrize("controlled", [False, True], ids=["poll", "controlled_poll"])
def test_should_read_on_into_the_next_term_when_only_padding_was_left(
    bare_log: BareLog, controlled: bool
) -> None:
    # an agent that sleeps until rung polls once after its last look at the doorbell: that poll
    # must not return 0 having consumed only the padding before a fragment whose ring it saw
    big = b"x" * 1000  # 1056-byte frames: the 63rd goes to the next term, after padding
    for _ in range(63):
        bare_log.append(big)
    image = make_image(bare_log)
    recorder = Recorder()
    poll = image.controlled_poll if controlled else image.poll
    assert poll(recorder, 62) == 62  # the first term's frames, up to the padding
    assert poll(recorder, 10) == 1  # the padding, then the next term's frame
    assert image.position == 64 * 1024 + 1056
    assert poll(recorder, 10) == 0


def test_should_not_read_on_into_the_next_term_after_a_break_at_the_terms_end(
    bare_log: BareLog,
) -> None:
    frame = b"x" * (1024 - 32)  # 64 frames of 1,024 bytes fill the 64 KiB term exactly
    for _ in range(65):
        bare_log.append(frame)
    image = make_image(bare_log)
    recorder = Recorder({64: Action.BREAK})
    assert image.controlled_poll(recorder, 100) == 64
    assert image.position == 64 * 1024
    assert image.controlled_poll(recorder, 100) == 1


@pytest.mark.parametrize("controlled", [False, True], ids=["poll", "controlled_poll"])
def test_should_not_read_on_into_the_next_term_after_a_handler_raised_at_the_terms_end(
    bare_log: BareLog, controlled: bool
) -> None:
    frame = b"x" * (1024 - 32)  # 64 frames of 1,024 bytes fill the 64 KiB term exactly
    for _ in range(65):
        bare_log.append(frame)
    errors: list[Exception] = []
    image = make_image(bare_log, errors)
    seen = 0

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        nonlocal seen
        seen += 1
        if seen == 64:
            raise ValueError("poison")
        return Action.CONTINUE

    poll = image.controlled_poll if controlled else image.poll
    assert poll(handler, 100) == 64  # stops at the raise, as anywhere else in a term
    assert [str(e) for e in errors] == ["poison"] and image.position == 64 * 1024
    assert poll(handler, 100) == 1


def test_should_give_each_fragment_a_header_describing_its_frame(bare_log: BareLog) -> None:
    bare_log.append(b"a" * 20)
    bare_log.append(b"b" * 20)
    image = make_image(bare_log)
    seen: list[tuple[int, int, int, int, int]] = []
    image.poll(
        lambda b, o, n, h: seen.append(
            (h.session_id, h.stream_id, h.term_id, h.term_offset, h.position)
        ),
        10,
    )
    assert seen == [(42, 1001, 7, 0, 64), (42, 1001, 7, 64, 128)]


# --------------------------------------------------------------------------------------------
# The controlled poll action table (seed 000): fragments read, offset, position, loop.


def test_should_not_consume_an_aborted_fragment_and_deliver_it_again(bare_log: BareLog) -> None:
    for payload in payloads(4):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({3: Action.ABORT}, image)

    assert image.controlled_poll(recorder, 10) == 2
    assert recorder.received == payloads(3)
    assert image.position == 2 * FRAME

    again = Recorder()
    assert image.controlled_poll(again, 10) == 2
    assert again.received == payloads(4)[2:]


def test_should_leave_the_position_alone_when_the_first_fragment_aborts(bare_log: BareLog) -> None:
    bare_log.append(payloads(1)[0])
    image = make_image(bare_log)

    assert image.controlled_poll(lambda b, o, n, h: Action.ABORT, 10) == 0
    assert image.position == 0


def test_should_consume_the_fragment_and_stop_on_break(bare_log: BareLog) -> None:
    for payload in payloads(4):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({2: Action.BREAK}, image)

    assert image.controlled_poll(recorder, 10) == 2
    assert recorder.received == payloads(2)
    assert image.position == 2 * FRAME


def test_should_publish_the_position_at_once_on_commit(bare_log: BareLog) -> None:
    for payload in payloads(4):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({2: Action.COMMIT}, image)

    assert image.controlled_poll(recorder, 10) == 4
    # Seen from inside the handler: after the COMMIT of fragment 2 the position is after it.
    assert recorder.positions_seen == [0, 0, 2 * FRAME, 2 * FRAME]
    assert image.position == 4 * FRAME


def test_should_publish_the_position_only_at_the_end_on_continue(bare_log: BareLog) -> None:
    for payload in payloads(3):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({}, image)

    assert image.controlled_poll(recorder, 10) == 3
    assert recorder.positions_seen == [0, 0, 0]
    assert image.position == 3 * FRAME


def test_should_keep_what_a_commit_published_when_a_later_fragment_aborts(
    bare_log: BareLog,
) -> None:
    for payload in payloads(4):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({1: Action.COMMIT, 3: Action.ABORT}, image)

    assert image.controlled_poll(recorder, 10) == 2
    assert image.position == 2 * FRAME


def test_should_report_a_raising_handler_and_count_its_fragment_consumed(
    bare_log: BareLog,
) -> None:
    for payload in payloads(3):
        bare_log.append(payload)
    errors: list[Exception] = []
    image = make_image(bare_log, errors)

    def handler(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        raise ValueError("poison")

    assert image.controlled_poll(handler, 10) == 1
    assert [str(e) for e in errors] == ["poison"]
    assert image.position == FRAME
    assert image.poll(lambda b, o, n, h: (_ for _ in ()).throw(KeyError("x")), 10) == 1
    assert image.position == 2 * FRAME


# --------------------------------------------------------------------------------------------
# Bounded and block polls


def test_should_not_read_frames_at_or_past_the_limit_in_a_bounded_poll(bare_log: BareLog) -> None:
    for payload in payloads(5):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder()

    assert image.bounded_poll(recorder, 2 * FRAME, 10) == 2
    assert image.position == 2 * FRAME
    assert image.bounded_poll(recorder, 2 * FRAME, 10) == 0
    assert image.bounded_poll(recorder, 2 * FRAME + 1, 10) == 1
    assert recorder.received == payloads(3)


def test_should_apply_actions_and_the_limit_in_a_bounded_controlled_poll(
    bare_log: BareLog,
) -> None:
    for payload in payloads(5):
        bare_log.append(payload)
    image = make_image(bare_log)
    recorder = Recorder({2: Action.ABORT})

    assert image.bounded_controlled_poll(recorder, 4 * FRAME, 10) == 1
    assert image.position == FRAME
    assert image.bounded_controlled_poll(Recorder(), 4 * FRAME, 10) == 3
    assert image.position == 4 * FRAME


def test_should_hand_whole_frames_to_a_block_handler(bare_log: BareLog) -> None:
    for payload in payloads(5):
        bare_log.append(payload)
    image = make_image(bare_log)
    blocks: list[tuple[int, int, int, int, bytes]] = []

    def on_block(buffer: AtomicBuffer, offset: int, length: int, session: int, term: int) -> None:
        blocks.append((offset, length, session, term, buffer.get_bytes(offset + 32, 20)))

    assert image.block_poll(on_block, 3 * FRAME - 1) == 2 * FRAME
    assert blocks == [(0, 2 * FRAME, 42, 7, payloads(1)[0])]
    assert image.position == 2 * FRAME
    assert image.block_poll(on_block, 1 << 20) == 3 * FRAME
    assert image.position == 5 * FRAME
    assert image.block_poll(on_block, 1 << 20) == 0


# --------------------------------------------------------------------------------------------
# Position, end of stream, close


def test_should_move_the_position_forward_within_the_term(bare_log: BareLog) -> None:
    for payload in payloads(3):
        bare_log.append(payload)
    image = make_image(bare_log)
    image.set_position(2 * FRAME)
    recorder = Recorder()
    assert image.poll(recorder, 10) == 1
    assert recorder.received == payloads(3)[2:]


@pytest.mark.parametrize(
    ("new_position", "reason"),
    [(-32, "out of range"), (64 * 1024 + 32, "out of range"), (40, "not aligned")],
)
def test_should_refuse_a_position_outside_the_term_or_off_a_frame_boundary(
    bare_log: BareLog, new_position: int, reason: str
) -> None:
    image = make_image(bare_log)
    with pytest.raises(ConfigurationError, match=reason) as info:
        image.set_position(new_position)
    assert info.value.new_position == new_position


def test_should_accept_the_end_of_the_term_as_a_position(bare_log: BareLog) -> None:
    image = make_image(bare_log)
    image.set_position(64 * 1024)
    assert image.position == 64 * 1024


def test_should_report_end_of_stream_once_read_up_to_it(bare_log: BareLog) -> None:
    for payload in payloads(2):
        bare_log.append(payload)
    set_end_of_stream_position(bare_log.log.meta_data_buffer, 2**63 - 1)
    image = make_image(bare_log)
    assert not image.is_end_of_stream
    set_end_of_stream_position(bare_log.log.meta_data_buffer, 2 * FRAME)
    assert not image.is_end_of_stream
    image.poll(Recorder(), 10)
    assert image.is_end_of_stream
    image.close()
    assert image.is_end_of_stream and image.is_closed


def test_should_read_nothing_once_closed(bare_log: BareLog) -> None:
    bare_log.append(b"x")
    image = make_image(bare_log)
    image.close()
    assert image.poll(Recorder(), 10) == 0
    assert image.controlled_poll(Recorder(), 10) == 0
    assert image.block_poll(lambda *a: None, 1024) == 0
    assert image.position == 0
    with pytest.raises(TransportStateError):
        image.set_position(0)


def test_should_reassemble_a_fragmented_message(bare_log: BareLog) -> None:
    message = bytes(range(256)) * 20  # 5120 bytes: 4 fragments at MTU 1408
    bare_log.append(message)
    image = make_image(bare_log)
    whole: list[tuple[bytes, int]] = []
    assembler = FragmentAssembler(lambda b, o, n, h: whole.append((b.get_bytes(o, n), h.flags)))
    assert image.poll(assembler, 10) == 4
    assert whole == [(message, 0xC0)]
