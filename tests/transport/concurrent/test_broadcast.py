from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport import (
    ConfigurationError,
    IndexOutOfBoundsError,
    InvalidMessageTypeError,
    MessageTooLongError,
    TransportStateError,
)
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent import broadcast_descriptor as bd
from aeromq.transport.concurrent import ring_buffer_descriptor as rbd
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.copy_broadcast_receiver import (
    SCRATCH_BUFFER_LENGTH,
    CopyBroadcastReceiver,
)


def make(capacity: int = 1024) -> tuple[AtomicBuffer, BroadcastTransmitter]:
    buffer = AtomicBuffer.allocate(capacity + bd.TRAILER_LENGTH)
    return buffer, BroadcastTransmitter(buffer)


def counters(buffer: AtomicBuffer, capacity: int) -> tuple[int, int, int]:
    intent, tail, latest = struct.unpack_from("<qqq", buffer, capacity)
    return intent, tail, latest


def receive(receiver: BroadcastReceiver) -> tuple[int, bytes] | None:
    if not receiver.receive_next():
        return None
    message = receiver.buffer().get_bytes(receiver.offset(), receiver.length())
    assert receiver.validate()
    return receiver.type_id(), message


# --- descriptor ------------------------------------------------------------------------------


def test_should_document_the_trailer_and_the_record_header() -> None:
    assert (bd.TAIL_INTENT_COUNTER_OFFSET, bd.TAIL_COUNTER_OFFSET, bd.LATEST_COUNTER_OFFSET) == (
        0,
        8,
        16,
    )
    assert bd.TRAILER_LENGTH == 128 >= struct.calcsize("<qqq")
    assert bd.HEADER_LENGTH == struct.calcsize("<ii") == 8 == bd.RECORD_ALIGNMENT
    assert (bd.length_offset(64), bd.type_offset(64), bd.msg_offset(64)) == (64, 68, 72)
    # the same record header as the ring buffers
    assert (bd.HEADER_LENGTH, bd.PADDING_MSG_TYPE_ID) == (
        rbd.HEADER_LENGTH,
        rbd.PADDING_MSG_TYPE_ID,
    )


@pytest.mark.parametrize("capacity", [0, 8, 100, 1000])
def test_should_reject_a_capacity_that_is_not_a_power_of_two(capacity: int) -> None:
    with pytest.raises(ConfigurationError, match=f"capacity={capacity} "):
        bd.check_capacity(capacity + bd.TRAILER_LENGTH)
    for cls in (BroadcastTransmitter, BroadcastReceiver):
        with pytest.raises(ConfigurationError, match=f"capacity={capacity} "):
            cls(AtomicBuffer.allocate(capacity + bd.TRAILER_LENGTH))


def test_should_reject_a_buffer_that_is_not_8_byte_aligned() -> None:
    backing = AtomicBuffer.allocate(1024 + bd.TRAILER_LENGTH + 8)
    for cls in (BroadcastTransmitter, BroadcastReceiver):
        with pytest.raises(ConfigurationError, match="address="):
            cls(backing.slice(4, 1024 + bd.TRAILER_LENGTH))


# --- transmitter ------------------------------------------------------------------------------


def test_should_lay_out_a_record_and_the_counters() -> None:
    buffer, tx = make()
    assert (tx.capacity, tx.max_msg_length) == (1024, 128)
    tx.transmit(7, b"hello")
    assert struct.unpack_from("<ii", buffer, 0) == (13, 7)
    assert buffer.get_bytes(8, 5) == b"hello"
    assert counters(buffer, 1024) == (16, 16, 0)
    tx.transmit(8, b"0123456789", 2, 3)
    assert struct.unpack_from("<ii", buffer, 16) == (11, 8)
    assert buffer.get_bytes(24, 3) == b"234"
    assert counters(buffer, 1024) == (32, 32, 16)


def test_should_pad_the_end_and_put_the_record_at_zero() -> None:
    buffer, tx = make(256)
    for _ in range(7):
        tx.transmit(1, b"a" * 24)  # 32 bytes each: tail at 224
    tx.transmit(2, b"b" * 30)  # 40 bytes do not fit in the last 32
    assert struct.unpack_from("<ii", buffer, 224) == (32, bd.PADDING_MSG_TYPE_ID)
    assert struct.unpack_from("<ii", buffer, 0) == (38, 2)
    assert counters(buffer, 256) == (296, 296, 256)


@pytest.mark.parametrize("msg_type_id", [0, -1])
def test_should_reject_a_bad_message_type_id(msg_type_id: int) -> None:
    _, tx = make()
    with pytest.raises(InvalidMessageTypeError, match=f"msg_type_id={msg_type_id}"):
        tx.transmit(msg_type_id, b"x")


def test_should_reject_a_message_over_the_max_length_with_the_values() -> None:
    _, tx = make()
    with pytest.raises(MessageTooLongError, match="length=129 max_msg_length=128"):
        tx.transmit(1, bytes(129))
    tx.transmit(1, bytes(128))


@pytest.mark.parametrize(
    ("offset", "length", "match"),
    [(-1, 2, "src_offset=-1"), (2, 5, "src_offset=2"), (0, -3, "length=-3"), (4, -1, "length=-1")],
)
def test_should_reject_a_source_range_out_of_bounds(offset: int, length: int, match: str) -> None:
    buffer, tx = make()
    with pytest.raises(IndexOutOfBoundsError, match=match):
        tx.transmit(1, b"abc", offset, length)
    assert counters(buffer, 1024) == (0, 0, 0)


# --- receiver --------------------------------------------------------------------------------


def test_should_receive_messages_in_order() -> None:
    buffer, tx = make()
    rx = BroadcastReceiver(buffer)
    assert rx.capacity == 1024
    assert receive(rx) is None
    for i in range(1, 4):
        tx.transmit(i, bytes([i]) * i)
    assert [receive(rx) for _ in range(4)] == [
        (1, b"\x01"),
        (2, b"\x02" * 2),
        (3, b"\x03" * 3),
        None,
    ]
    assert rx.lapped_count() == 0


def test_should_join_at_the_latest_message() -> None:
    buffer, tx = make()
    for i in range(5):
        tx.transmit(1, bytes([i]))
    rx = BroadcastReceiver(buffer)
    assert receive(rx) == (1, b"\x04")
    tx.transmit(1, b"\x05")
    assert receive(rx) == (1, b"\x05")


def test_should_skip_padding_to_the_record_at_zero() -> None:
    buffer, tx = make(256)
    rx = BroadcastReceiver(buffer)
    for _ in range(7):
        tx.transmit(1, b"a" * 24)
        assert receive(rx) == (1, b"a" * 24)
    tx.transmit(2, b"b" * 30)
    assert receive(rx) == (2, b"b" * 30)
    assert rx.offset() == 8


def test_should_notice_being_lapped_and_jump_to_the_latest_message() -> None:
    buffer, tx = make(256)
    rx = BroadcastReceiver(buffer)
    tx.transmit(1, b"first")
    assert receive(rx) == (1, b"first")
    for i in range(20):  # 20 x 32 bytes: more than a lap
        tx.transmit(2, bytes([i]) * 24)
    assert receive(rx) == (2, bytes([19]) * 24)
    assert rx.lapped_count() == 1
    tx.transmit(3, b"after")
    assert receive(rx) == (3, b"after")
    assert rx.lapped_count() == 1


def test_should_fail_validation_when_the_message_is_overwritten_while_read() -> None:
    buffer, tx = make(256)
    rx = BroadcastReceiver(buffer)
    tx.transmit(1, b"read me")
    assert rx.receive_next()
    assert rx.validate()
    for _ in range(8):
        tx.transmit(2, b"x" * 24)
    assert not rx.validate()


def test_should_count_a_lap_that_happens_while_the_header_is_read() -> None:
    buffer, tx = make(256)
    checks: list[int] = []

    class LappedWhileReading(BroadcastReceiver):
        __slots__ = ()

        def _valid_at(self, cursor: int) -> bool:
            valid = super()._valid_at(cursor)
            checks.append(cursor)
            if len(checks) == 1:  # right after the first check, before the header is read
                for i in range(8):
                    tx.transmit(2, bytes([i]) * 24)
            return valid

    rx = LappedWhileReading(buffer)
    tx.transmit(1, b"first")
    assert receive(rx) == (2, bytes([7]) * 24)
    assert rx.lapped_count() == 1


# --- copy receiver ------------------------------------------------------------------------------


def test_should_hand_out_a_copy_of_each_message() -> None:
    buffer, tx = make()
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    seen: list[tuple[int, int, bytes]] = []

    def handler(msg_type_id: int, scratch: AtomicBuffer, index: int, length: int) -> None:
        assert scratch is copy.scratch_buffer and scratch is not buffer
        seen.append((msg_type_id, index, scratch.get_bytes(index, length)))

    assert copy.receive(handler) == 0
    tx.transmit(4, b"copied")
    tx.transmit(5, b"")
    assert copy.receive(handler) == 1
    assert copy.receive(handler) == 1
    assert copy.receive(handler) == 0
    assert seen == [(4, 0, b"copied"), (5, 0, b"")]
    assert copy.scratch_buffer.capacity == SCRATCH_BUFFER_LENGTH


def test_should_raise_when_lapped_with_the_lapped_count() -> None:
    buffer, tx = make(256)
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer))
    tx.transmit(1, b"x")
    assert copy.receive(lambda *args: None) == 1
    for _ in range(20):
        tx.transmit(1, b"y" * 24)
    with pytest.raises(
        TransportStateError, match="unable to keep up with broadcast: lapped_count=1"
    ):
        copy.receive(lambda *args: None)
    tx.transmit(2, b"z")
    assert copy.receive(lambda *args: None) == 1  # carries on from the latest message


def test_should_raise_when_a_message_does_not_fit_the_scratch_buffer() -> None:
    buffer, tx = make()
    copy = CopyBroadcastReceiver(BroadcastReceiver(buffer), scratch_buffer_length=16)
    tx.transmit(1, bytes(17))
    with pytest.raises(TransportStateError, match="length=17 scratch_capacity=16"):
        copy.receive(lambda *args: None)


def test_should_raise_when_the_message_is_overwritten_during_the_copy() -> None:
    buffer, tx = make(256)

    class OverwrittenWhileCopying(BroadcastReceiver):
        __slots__ = ()

        def validate(self) -> bool:
            for _ in range(8):  # the transmitter laps the reader between copy and check
                tx.transmit(2, b"x" * 24)
            return super().validate()

    copy = CopyBroadcastReceiver(OverwrittenWhileCopying(buffer))
    tx.transmit(1, b"victim")
    with pytest.raises(TransportStateError, match="unable to keep up"):
        copy.receive(lambda *args: pytest.fail("handler must not see a torn message"))


def test_should_reject_a_scratch_buffer_length_that_is_not_positive() -> None:
    buffer, _ = make()
    with pytest.raises(ConfigurationError, match="scratch_buffer_length=0"):
        CopyBroadcastReceiver(BroadcastReceiver(buffer), 0)


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    capacity=st.sampled_from([64, 256, 1024]),
    steps=st.lists(st.tuples(st.integers(0, 128), st.integers(0, 3)), min_size=1, max_size=200),
)
def test_should_deliver_intact_increasing_messages_whatever_the_pace(
    capacity: int, steps: list[tuple[int, int]]
) -> None:
    """Each step transmits one message of a random length, then receives up to 0..3 of them."""
    buffer, tx = make(capacity)
    rx = BroadcastReceiver(buffer)
    last_seq = -1
    for seq, (length, reads) in enumerate(steps):
        length = min(max(length, 4), tx.max_msg_length)
        payload = seq.to_bytes(4, "little") + bytes([seq & 0xFF]) * (length - 4)
        tx.transmit(1 + seq % 9, payload)
        for _ in range(reads):
            message = receive(rx)
            if message is None:
                break
            msg_type_id, data = message
            got = int.from_bytes(data[:4], "little")
            assert got > last_seq
            assert msg_type_id == 1 + got % 9
            assert data[4:] == bytes([got & 0xFF]) * (len(data) - 4)
            last_seq = got
    while (message := receive(rx)) is not None:
        last_seq = int.from_bytes(message[1][:4], "little")
    assert last_seq == len(steps) - 1  # always ends on the latest message
