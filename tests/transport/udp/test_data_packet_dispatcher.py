"""DataPacketDispatcher: frames to images by (stream, session); SETUP asked for, images made,
cool-downs, sessions nobody wants."""

from __future__ import annotations

from typing import Any

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.udp.data_packet_dispatcher import (
    COOL_DOWN,
    INIT_IN_PROGRESS,
    NO_INTEREST,
    PENDING_SETUP,
    DataPacketDispatcher,
)
from aeromq.transport.protocol import EOS_FLAG, RTTM_REPLY_FLAG, SM_SEND_SETUP_FLAG, RttmFlyweight
from tests.transport.udp.support import data_frames, setup_frame

SOURCE = ("127.0.0.1", 5555)
STREAM = 1001


class FakeEndpoint:
    def __init__(self) -> None:
        self.status_messages: list[tuple[Any, ...]] = []

    def control_address_for(self, address: Any) -> Any:
        return address

    def send_status_message(self, *args: Any) -> int:
        self.status_messages.append(args)
        return 36


class FakeCreator:
    def __init__(self) -> None:
        self.requests: list[tuple[Any, ...]] = []

    def create_publication_image(self, *args: Any) -> bool:
        self.requests.append(args)
        return True


class FakeImage:
    def __init__(self, session_id: int, stream_id: int = STREAM) -> None:
        self.session_id = session_id
        self.stream_id = stream_id
        self.packets: list[tuple[int, int, int]] = []
        self.rttm_requests: list[int] = []

    def insert_packet(
        self,
        term_id: int,
        term_offset: int,
        buffer: AtomicBuffer,
        length: int,
        address: Any,
        now_ns: int,
    ) -> None:
        self.packets.append((term_id, term_offset, length))

    def on_rttm_request(self, echo: int) -> None:
        self.rttm_requests.append(echo)


def _data(
    session_id: int, stream_id: int = STREAM, flags_eos: bool = False
) -> tuple[AtomicBuffer, int]:
    buffer = AtomicBuffer.allocate(512)
    length = data_frames(
        buffer,
        session_id=session_id,
        stream_id=stream_id,
        term_id=3,
        term_offset=64,
        payloads=[b"x"],
    )
    if flags_eos:
        buffer.put_int8(5, 0xC0 | EOS_FLAG)
    return buffer, length


def _setup(session_id: int, stream_id: int = STREAM) -> AtomicBuffer:
    buffer = AtomicBuffer.allocate(64)
    setup_frame(
        buffer, session_id=session_id, stream_id=stream_id, active_term_id=9, term_offset=64
    )
    return buffer


def _rig() -> tuple[DataPacketDispatcher, FakeEndpoint, FakeCreator]:
    creator = FakeCreator()
    return DataPacketDispatcher(creator, pending_setup_timeout_ns=1_000), FakeEndpoint(), creator


def test_should_ask_for_setup_for_a_wanted_session_then_request_an_image() -> None:
    dispatcher, endpoint, creator = _rig()
    dispatcher.add_subscription(STREAM)
    buffer, length = _data(42)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 1)
    assert len(endpoint.status_messages) == 1
    assert endpoint.status_messages[0] == (SOURCE, 42, STREAM, 0, 0, 0, SM_SEND_SETUP_FLAG)
    assert dispatcher.interests[STREAM].states[42] == PENDING_SETUP
    dispatcher.on_setup(endpoint, _setup(42), SOURCE)
    assert creator.requests[0][1:9] == (42, STREAM, 7, 9, 64, 64 * 1024, 1408, SOURCE)
    assert dispatcher.interests[STREAM].states[42] == INIT_IN_PROGRESS
    dispatcher.on_setup(endpoint, _setup(42), SOURCE)
    assert len(creator.requests) == 1


def test_should_route_data_to_its_image_and_cool_down_after_it() -> None:
    dispatcher, endpoint, _ = _rig()
    dispatcher.add_subscription(STREAM)
    image = FakeImage(42)
    dispatcher.add_publication_image(image)
    buffer, length = _data(42)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    assert image.packets == [(3, 64, length)]
    dispatcher.remove_publication_image(image)
    assert dispatcher.interests[STREAM].states[42] == COOL_DOWN
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 1)
    assert len(image.packets) == 1 and endpoint.status_messages == []
    dispatcher.remove_cool_down(42, STREAM)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 2)
    assert len(endpoint.status_messages) == 1  # a new image can be asked for


def test_should_ignore_streams_and_sessions_nobody_wants() -> None:
    dispatcher, endpoint, creator = _rig()
    buffer, length = _data(42, stream_id=7)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    dispatcher.on_setup(endpoint, _setup(42, stream_id=7), SOURCE)
    dispatcher.add_subscription_by_session(STREAM, 1)
    buffer, length = _data(42)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    assert dispatcher.interests[STREAM].states[42] == NO_INTEREST
    assert endpoint.status_messages == [] and creator.requests == []
    dispatcher.add_subscription(STREAM)  # now every session is wanted
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    assert len(endpoint.status_messages) == 1


def test_should_not_ask_for_a_setup_for_a_stream_that_ended() -> None:
    dispatcher, endpoint, _ = _rig()
    dispatcher.add_subscription(STREAM)
    buffer, length = _data(42, flags_eos=True)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    assert endpoint.status_messages == []


def test_should_ask_again_after_the_pending_setup_timeout() -> None:
    dispatcher, endpoint, _ = _rig()
    dispatcher.add_subscription(STREAM)
    buffer, length = _data(42)
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 0)
    assert dispatcher.check_pending_setups(500) == 0
    assert dispatcher.check_pending_setups(1_001) == 1
    dispatcher.on_data(endpoint, buffer, length, SOURCE, 1_002)
    assert len(endpoint.status_messages) == 2


def test_should_forget_a_stream_when_its_subscriptions_go() -> None:
    dispatcher, _, _ = _rig()
    dispatcher.add_subscription(STREAM)
    dispatcher.add_subscription_by_session(STREAM, 42)
    dispatcher.add_publication_image(FakeImage(42))
    dispatcher.add_publication_image(FakeImage(43))
    dispatcher.remove_subscription(STREAM)
    assert set(dispatcher.interests[STREAM].images) == {42}
    dispatcher.remove_subscription_by_session(STREAM, 42)
    assert STREAM not in dispatcher.interests
    assert not dispatcher.has_images()


def test_should_answer_rttm_requests_through_the_image() -> None:
    dispatcher, endpoint, _ = _rig()
    dispatcher.add_subscription(STREAM)
    image = FakeImage(42)
    dispatcher.add_publication_image(image)
    buffer = AtomicBuffer.allocate(64)
    flyweight = RttmFlyweight(buffer)
    flyweight.put_rttm(
        session_id=42, stream_id=STREAM, echo_timestamp_ns=99, reception_delta_ns=0, receiver_id=1
    )
    dispatcher.on_rttm(endpoint, buffer, SOURCE)
    assert image.rttm_requests == []
    flyweight.put_rttm(
        session_id=42,
        stream_id=STREAM,
        echo_timestamp_ns=99,
        reception_delta_ns=0,
        receiver_id=1,
        flags=RTTM_REPLY_FLAG,
    )
    dispatcher.on_rttm(endpoint, buffer, SOURCE)
    assert image.rttm_requests == [99]
