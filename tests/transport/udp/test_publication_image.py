"""PublicationImage: out-of-order inserts, rcv-hwm/rcv-pos, NAKs, status messages, windows,
end of stream and the life cycle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aeromq.transport.concurrent import AtomicBuffer, Position
from aeromq.transport.driver.subscriber_position import SubscriberPosition
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.driver.udp.loss_detector import StaticDelayGenerator
from aeromq.transport.driver.udp.publication_image import ImageState, PublicationImage
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    LOG_ACTIVE_TRANSPORT_COUNT_OFFSET,
    end_of_stream_position,
    fill_default_header,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.protocol import HDR_TYPE_PAD, SM_EOS_FLAG, DataHeaderFlyweight
from tests.transport.udp.support import data_frames, system_counters

TERM = 64 * 1024
SESSION = 5
STREAM = 1001
INITIAL_TERM_ID = 100
WINDOW = 4096
MS = 1_000_000
SOURCE = ("127.0.0.1", 40999)


class FakeReceiveEndpoint:
    def __init__(self) -> None:
        self.status_messages: list[tuple[int, int, int, int]] = []
        self.naks: list[tuple[int, int, int]] = []
        self.rttms: list[int] = []

    def send_status_message(
        self,
        address: Any,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        window: int,
        flags: int,
    ) -> int:
        assert (address, session_id, stream_id) == (SOURCE, SESSION, STREAM)
        self.status_messages.append((term_id, term_offset, window, flags))
        return 36

    def send_nak(
        self,
        address: Any,
        session_id: int,
        stream_id: int,
        term_id: int,
        term_offset: int,
        length: int,
    ) -> int:
        self.naks.append((term_id, term_offset, length))
        return 28

    def send_rttm(self, address: Any, session_id: int, stream_id: int, echo: int) -> int:
        self.rttms.append(echo)
        return 40


class Rig:
    def __init__(self, tmp_path: Path, **overrides: Any) -> None:
        self.counters, self.system = system_counters()
        self.log = LogBuffers.create(tmp_path / "image.logbuffer", TERM)
        fill_default_header(self.log.meta_data_buffer, SESSION, STREAM, INITIAL_TERM_ID)
        self.endpoint = FakeReceiveEndpoint()
        values = self.counters.values_buffer
        hwm, pos, sub = (
            Position(values, self.counters.allocate(name), self.counters)
            for name in ("rcv-hwm", "rcv-pos", "sub-pos")
        )
        system = self.system
        args: dict[str, Any] = {
            "log": self.log,
            "endpoint": self.endpoint,
            "correlation_id": 9,
            "session_id": SESSION,
            "stream_id": STREAM,
            "initial_term_id": INITIAL_TERM_ID,
            "active_term_id": INITIAL_TERM_ID,
            "initial_term_offset": 0,
            "rcv_hwm": hwm,
            "rcv_pos": pos,
            "control_address": SOURCE,
            "source_address": SOURCE,
            "delay_generator": StaticDelayGenerator(100, 10 * MS),
            "is_reliable": True,
            "receiver_window_length": WINDOW,
            "status_message_timeout_ns": 200 * MS,
            "image_liveness_timeout_ns": 1_000 * MS,
            "untethered_window_limit_timeout_ns": 1,
            "untethered_resting_timeout_ns": 1,
            "heartbeats_received": system.get(SystemCounter.HEARTBEATS_RECEIVED),
            "flow_control_under_runs": system.get(SystemCounter.FLOW_CONTROL_UNDER_RUNS),
            "flow_control_over_runs": system.get(SystemCounter.FLOW_CONTROL_OVER_RUNS),
            "status_messages_sent": system.get(SystemCounter.STATUS_MESSAGES_SENT),
            "naks_sent": system.get(SystemCounter.NAK_MESSAGES_SENT),
            "loss_gap_fills": system.get(SystemCounter.LOSS_GAP_FILLS),
            "now_ns": 0,
        }
        args.update(overrides)
        self.image = PublicationImage(**args)
        self.sub_pos = sub
        self.image.add_subscriber(SubscriberPosition(sub, 33, True, 0))
        self.packet = AtomicBuffer.allocate(2048)

    def insert(
        self, term_offset: int, count: int, now_ns: int = 0, term_id: int = INITIAL_TERM_ID
    ) -> None:
        length = data_frames(
            self.packet,
            session_id=SESSION,
            stream_id=STREAM,
            term_id=term_id,
            term_offset=term_offset,
            payloads=[bytes([term_offset // 64 % 256]) * 32] * count,
        )
        self.image.insert_packet(term_id, term_offset, self.packet, length, SOURCE, now_ns)

    def heartbeat(self, term_offset: int, now_ns: int, eos: bool = False) -> None:
        DataHeaderFlyweight(self.packet).put_heartbeat(
            session_id=SESSION,
            stream_id=STREAM,
            term_id=INITIAL_TERM_ID,
            term_offset=term_offset,
            end_of_stream=eos,
        )
        self.image.insert_packet(INITIAL_TERM_ID, term_offset, self.packet, 32, SOURCE, now_ns)

    def count(self, counter: SystemCounter) -> int:
        return self.system.get(counter).get()


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_should_rebuild_from_out_of_order_and_duplicate_packets(rig: Rig) -> None:
    rig.insert(128, 2)
    assert rig.image.rcv_hwm.get() == 256
    rig.image.do_work(1)
    assert rig.image.rcv_pos.get() == 0
    rig.insert(0, 2)
    rig.insert(0, 2)  # duplicate: left alone
    rig.image.do_work(2)
    assert rig.image.rcv_pos.get() == 256
    term = rig.log.term_buffers[0]
    assert [term.get_int32(offset) for offset in (0, 64, 128, 192)] == [64] * 4


def test_should_nak_a_gap_after_the_delay_and_retry_later(rig: Rig) -> None:
    rig.insert(0, 1)
    rig.insert(192, 1)
    rig.image.do_work(0)
    assert rig.endpoint.naks == []
    rig.image.do_work(100)
    assert rig.endpoint.naks == [(INITIAL_TERM_ID, 64, 128)]
    assert rig.count(SystemCounter.NAK_MESSAGES_SENT) == 1
    rig.image.do_work(5 * MS)
    assert len(rig.endpoint.naks) == 1
    rig.image.do_work(11 * MS)
    assert len(rig.endpoint.naks) == 2
    rig.insert(64, 2, now_ns=12 * MS)
    rig.image.do_work(12 * MS)
    assert rig.image.rcv_pos.get() == 256


def test_should_pad_over_gaps_when_unreliable(tmp_path: Path) -> None:
    rig = Rig(tmp_path, is_reliable=False)
    rig.insert(0, 1)
    rig.insert(192, 1)
    rig.image.do_work(0)
    rig.image.do_work(200)
    assert rig.endpoint.naks == []
    assert rig.count(SystemCounter.LOSS_GAP_FILLS) == 1
    assert rig.log.term_buffers[0].get_uint16(64 + 6) == HDR_TYPE_PAD
    rig.image.do_work(300)
    assert rig.image.rcv_pos.get() == 256


def test_should_send_status_messages_on_progress_and_on_timeout(rig: Rig) -> None:
    image = rig.image
    image.do_work(0)  # the first one goes at once
    assert rig.endpoint.status_messages == [(INITIAL_TERM_ID, 0, WINDOW, 0)]
    rig.insert(0, 20)
    rig.sub_pos.set(WINDOW // 4)  # consumed a quarter window: not past the threshold yet
    image.do_work(1)
    assert len(rig.endpoint.status_messages) == 1
    rig.sub_pos.set(WINDOW // 4 + 64)
    image.do_work(2)
    assert rig.endpoint.status_messages[-1] == (INITIAL_TERM_ID, WINDOW // 4 + 64, WINDOW, 0)
    image.do_work(150 * MS)
    assert len(rig.endpoint.status_messages) == 2
    image.do_work(203 * MS)  # the status message timeout
    assert len(rig.endpoint.status_messages) == 3
    assert rig.count(SystemCounter.STATUS_MESSAGES_SENT) == 3
    assert rig.log.meta_data_buffer.get_int32(LOG_ACTIVE_TRANSPORT_COUNT_OFFSET) == 1


def test_should_send_the_status_message_a_read_after_the_rebuild_made_due(rig: Rig) -> None:
    """A subscriber on the receiver's thread reads after the image's cycle: the status message
    its read made due goes at once (``status_after_reads``), not at the next cycle."""
    image = rig.image
    image.do_work(0)  # the first one goes at once
    rig.insert(0, 20)
    image.do_work(1)  # rebuilt; nothing read yet
    image.status_after_reads(2)
    assert len(rig.endpoint.status_messages) == 1  # nothing read: nothing due
    rig.sub_pos.set(WINDOW // 4 + 64)  # the subscriber read past a quarter window
    image.status_after_reads(3)
    assert rig.endpoint.status_messages[-1] == (INITIAL_TERM_ID, WINDOW // 4 + 64, WINDOW, 0)
    image.do_work(4)
    assert len(rig.endpoint.status_messages) == 2  # the cycle after owes none
    assert not image.owes_soon()


def test_should_drop_over_and_under_runs(rig: Rig) -> None:
    rig.image.do_work(0)
    rig.insert(TERM // 2, 1)  # beyond the last SM position + half a term
    assert rig.count(SystemCounter.FLOW_CONTROL_OVER_RUNS) == 1
    assert rig.image.rcv_hwm.get() == 0
    rig.insert(0, 20)
    rig.sub_pos.set(1280)
    rig.image.do_work(1)
    rig.insert(0, 1)  # behind the position the last SM reported
    assert rig.count(SystemCounter.FLOW_CONTROL_UNDER_RUNS) == 1


def test_should_take_end_of_stream_from_a_heartbeat(rig: Rig) -> None:
    rig.insert(0, 2)
    rig.heartbeat(128, now_ns=5)
    assert rig.count(SystemCounter.HEARTBEATS_RECEIVED) == 1
    assert not rig.image.is_end_of_stream
    rig.heartbeat(128, now_ns=6, eos=True)
    assert rig.image.is_end_of_stream
    assert end_of_stream_position(rig.log.meta_data_buffer) == 128
    assert rig.image.time_of_last_packet_ns == 6


def test_should_go_through_its_life_cycle_after_end_of_stream(rig: Rig) -> None:
    image = rig.image
    rig.insert(0, 2)
    rig.heartbeat(128, now_ns=0, eos=True)
    image.do_work(0)
    assert image.on_time_event(1) is ImageState.DRAINING
    image.do_work(2)
    assert rig.endpoint.status_messages[-1][3] == SM_EOS_FLAG
    assert image.on_time_event(3) is None  # not drained: the subscriber is at 0
    rig.sub_pos.set(128)
    assert image.on_time_event(900 * MS) is None  # EOS status messages go on a while
    assert image.on_time_event(1_001 * MS) is ImageState.LINGER
    assert image.on_time_event(1_002 * MS) is None
    image.remove_subscriber(image.subscribers[0].counter_id)
    assert image.on_time_event(1_003 * MS) is ImageState.DONE
    image.receiver_release()
    assert image.close()


def test_should_go_when_no_packet_arrives_for_the_liveness_timeout(rig: Rig) -> None:
    assert rig.image.on_time_event(999 * MS) is None
    assert rig.image.on_time_event(1_001 * MS) is ImageState.DRAINING


def test_should_go_when_its_last_subscriber_leaves(rig: Rig) -> None:
    subscriber = rig.image.subscribers[0]
    assert rig.image.remove_subscriber(subscriber.counter_id) is subscriber
    assert rig.image.remove_subscriber(subscriber.counter_id) is None
    assert rig.image.on_time_event(1) is ImageState.DRAINING


def test_should_echo_an_rttm_request(rig: Rig) -> None:
    rig.image.on_rttm_request(4242)
    assert rig.endpoint.rttms == [4242]


def test_should_ignore_packets_from_before_the_initial_term(rig: Rig) -> None:
    rig.insert(0, 1, term_id=INITIAL_TERM_ID - 1)
    assert rig.image.rcv_hwm.get() == 0


def test_should_count_only_heartbeats_that_move_nothing_as_keepalives(rig: Rig) -> None:
    image = rig.image
    packet = rig.packet

    def heartbeat(term_offset: int, eos: bool = False) -> bool:
        DataHeaderFlyweight(packet).put_heartbeat(
            session_id=SESSION,
            stream_id=STREAM,
            term_id=INITIAL_TERM_ID,
            term_offset=term_offset,
            end_of_stream=eos,
        )
        return image.insert_packet(INITIAL_TERM_ID, term_offset, packet, 32, SOURCE, 1)

    assert heartbeat(0)  # at the high-water mark: a keepalive
    assert not heartbeat(128)  # ahead of it: moves rcv-hwm (a gap to NAK), work
    assert heartbeat(128)
    rig.insert(128, 1)  # data (one 64-byte frame): rcv-hwm 192
    assert heartbeat(192)
    assert not heartbeat(192, eos=True)  # the end of the stream: work
    assert heartbeat(192, eos=True)


def test_should_count_a_status_message_sent_as_no_work(rig: Rig) -> None:
    """A status message leaves the receiver nothing more to do (``receiver``'s module)."""
    assert rig.image.do_work(0) == 0  # the first SM was pending: sent, not work
    assert rig.endpoint.status_messages
    sent = len(rig.endpoint.status_messages)
    assert rig.image.do_work(201 * MS) == 0  # due by its timeout: a keepalive
    assert len(rig.endpoint.status_messages) == sent + 1
    rig.insert(0, 1)
    assert rig.image.do_work(202 * MS) == 1  # the rebuild moved: work
