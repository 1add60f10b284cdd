"""``controlled_poll`` and the fragment assemblers over logs written by other processes.

Publishers run in their own processes (``hold_publisher``: offer, then keep the stream open);
the driver in its own; the subscriber is the test's process, which scripts the handler's
actions and checks, for each, the fragments read and the subscriber position (the sub-pos
counter in cnc.dat that the driver reads), during and after the poll:

========  ==============================  =============================================
Action    fragments read                  subscriber position
========  ==============================  =============================================
ABORT     this one not counted            not moved past it; the poll stops
BREAK     counted                         after it, stored when the poll ends; stops
COMMIT    counted                         after it, stored at once; the poll goes on
CONTINUE  counted                         after it, stored when the poll ends
========  ==============================  =============================================
"""

from __future__ import annotations

from collections.abc import Iterator

from aeromq.transport import Action
from aeromq.transport.client import Aeron, Image, Subscription
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.stream_counters import SUBSCRIBER_POSITION_TYPE_ID
from aeromq.transport.logbuffer import ControlledFragmentAssembler, FragmentAssembler, Header
from tests.system import _workers
from tests.system._driver import DriverProcess
from tests.system._messages import PREFIX, MessageWriter
from tests.system.conftest import Workers, counter_value, wait_for

FRAME = 160  # 100 bytes of payload + 32 of header, aligned to 32
BIG = 3000  # three fragments at the default MTU: 1376 + 1376 + 248 bytes of payload
BIG_SPAN = 1408 + 1408 + 288  # the term bytes of one BIG message
DEADLINE_S = 30.0

ABORT, BREAK, COMMIT, CONTINUE = Action.ABORT, Action.BREAK, Action.COMMIT, Action.CONTINUE


class Script:
    """A controlled handler answering the next scripted action; it records each message's
    (sender, sequence) and the image position the handler saw."""

    def __init__(self, image: Image) -> None:
        self._image = image
        self._actions: Iterator[Action] = iter(())
        self.seen: list[tuple[int, int]] = []
        self.positions: list[int] = []

    def run(self, subscription: Subscription, actions: list[Action], limit: int) -> int:
        self._actions = iter(actions)
        self.seen, self.positions = [], []
        return subscription.controlled_poll(self, limit)

    def __call__(self, buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        self.seen.append((sender, seq))
        self.positions.append(self._image.position)
        return next(self._actions)


def _publish(
    workers: Workers, aeron_dir: str, stream_id: int, sender: int, lengths: list[int]
) -> tuple[int, int]:
    """Start a publisher process, wait for its messages; return (position, session id)."""
    release = workers.event()
    workers.start(
        _workers.hold_publisher, aeron_dir, stream_id, sender, lengths, True, release, DEADLINE_S
    )
    _, got_sender, position, _, session_id = workers.expect("published")
    assert got_sender == sender and isinstance(position, int), position
    return position, session_id


def test_should_apply_each_action_to_positions_and_fragments_read(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    subscription = observer.add_subscription("aeron:ipc", 5)
    _publish(workers, driver.aeron_dir, 5, 1, [100] * 10)
    wait_for(lambda: subscription.image_count == 1, what="the image")
    image = subscription.images[0]
    script = Script(image)
    reader = observer.counters_reader

    def sub_pos() -> int | None:
        return counter_value(reader, SUBSCRIBER_POSITION_TYPE_ID, subscription.registration_id)

    # ABORT: not counted, position not moved, the same message comes again.
    assert script.run(subscription, [ABORT], 10) == 0
    assert (script.seen, image.position) == ([(1, 0)], 0)
    # CONTINUE, CONTINUE, BREAK: three read, positions stored only when the poll ends.
    assert script.run(subscription, [CONTINUE, CONTINUE, BREAK], 10) == 3
    assert script.seen == [(1, 0), (1, 1), (1, 2)]
    assert script.positions == [0, 0, 0]
    assert image.position == sub_pos() == 3 * FRAME
    # COMMIT, COMMIT, ABORT: each COMMIT stores the position at once; ABORT keeps it.
    assert script.run(subscription, [COMMIT, COMMIT, ABORT], 10) == 2
    assert script.seen == [(1, 3), (1, 4), (1, 5)]
    assert script.positions == [3 * FRAME, 4 * FRAME, 5 * FRAME]
    assert image.position == sub_pos() == 5 * FRAME
    # The fragment limit stops a poll of CONTINUEs.
    assert script.run(subscription, [CONTINUE] * 10, 2) == 2
    assert (script.seen, image.position) == ([(1, 5), (1, 6)], 7 * FRAME)
    # CONTINUE then ABORT: the first kept, the aborted one not.
    assert script.run(subscription, [CONTINUE, ABORT], 10) == 1
    assert (script.seen, image.position) == ([(1, 7), (1, 8)], 8 * FRAME)
    # The rest, then nothing.
    assert script.run(subscription, [CONTINUE] * 10, 10) == 2
    assert (script.seen, image.position) == ([(1, 8), (1, 9)], 10 * FRAME)
    assert script.run(subscription, [CONTINUE], 10) == 0
    assert sub_pos() == 10 * FRAME


def test_should_apply_break_and_abort_to_one_image_and_still_read_the_others(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    subscription = observer.add_subscription("aeron:ipc", 6)
    _, session_1 = _publish(workers, driver.aeron_dir, 6, 1, [100] * 3)
    _, session_2 = _publish(workers, driver.aeron_dir, 6, 2, [100] * 3)
    wait_for(lambda: subscription.image_count == 2, what="both images")
    image_1 = subscription.image_by_session_id(session_1)
    image_2 = subscription.image_by_session_id(session_2)
    assert image_1 is not None and image_2 is not None
    seen: list[tuple[int, int]] = []

    def abort_sender_1(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        seen.append((sender, seq))
        return ABORT if sender == 1 else CONTINUE

    assert subscription.controlled_poll(abort_sender_1, 10) == 3
    assert sorted(seen) == [(1, 0), (2, 0), (2, 1), (2, 2)]
    assert (image_1.position, image_2.position) == (0, 3 * FRAME)

    seen.clear()

    def always_break(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        seen.append((sender, seq))
        return BREAK

    assert subscription.controlled_poll(always_break, 10) == 1  # only image 1 has any left
    assert seen == [(1, 0)] and image_1.position == FRAME


def test_should_assemble_interleaved_sessions_and_redeliver_a_message_aborted_on_its_end(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    controlled = observer.add_subscription("aeron:ipc", 7)
    plain = observer.add_subscription("aeron:ipc", 7)
    sessions = {
        sender: _publish(workers, driver.aeron_dir, 7, sender, [BIG] * 3)[1] for sender in (1, 2)
    }
    wait_for(lambda: controlled.image_count == plain.image_count == 2, what="the images")
    expected = {
        (sender, seq): MessageWriter(BIG).message(seq, BIG, sender)
        for sender in (1, 2)
        for seq in range(3)
    }
    fragment_sessions: list[int] = []
    accepted: dict[tuple[int, int], tuple[bytes, int, int, int, int, int]] = {}
    aborted: list[tuple[int, int]] = []

    def on_message(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        if (sender, seq) not in aborted:
            aborted.append((sender, seq))
            return ABORT
        accepted[(sender, seq)] = (
            buffer.get_bytes(offset, length),
            header.session_id,
            header.frame_length,
            header.flags,
            header.term_offset,
            header.position,  # after the message's last fragment
        )
        return COMMIT

    assembler = ControlledFragmentAssembler(on_message)

    def record(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> Action:
        fragment_sessions.append(header.session_id)
        return assembler(buffer, offset, length, header)

    wait_for(
        lambda: controlled.controlled_poll(record, 1) >= 0 and len(accepted) == 6,
        what="every message, one fragment per poll",
    )
    assert sorted(aborted) == sorted(expected)
    # Interleaved: both sessions' first messages were being assembled at once.
    assert set(fragment_sessions[:3]) == set(sessions.values())
    for (sender, seq), message in expected.items():
        body, session_id, frame_length, flags, term_offset, position = accepted[(sender, seq)]
        assert body == message
        assert session_id == sessions[sender]
        assert (frame_length, flags, term_offset) == (32 + BIG, 0xC0, seq * BIG_SPAN)
        assert position == (seq + 1) * BIG_SPAN
    # Each END fragment came twice (ABORT, then COMMIT); every other fragment once.
    assert len(fragment_sessions) == 6 * 3 + 6
    assert [image.position for image in controlled.images] == [3 * BIG_SPAN] * 2

    received: dict[tuple[int, int], bytes] = {}

    def on_plain(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        received[(sender, seq)] = buffer.get_bytes(offset, length)

    plain_assembler = FragmentAssembler(on_plain)
    wait_for(
        lambda: plain.poll(plain_assembler, 1) >= 0 and len(received) == 6,
        what="every message through the plain assembler",
    )
    assert received == expected
