"""NetworkPublication: SETUP until an SM, data within the limit packed per MTU, heartbeats,
resends, flow control, pub-lmt and the end of the stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aeromq.transport.concurrent import AtomicBuffer, Position
from aeromq.transport.driver.log_factory import initialise_log_metadata
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.driver.udp.flow_control import UnicastFlowControl
from aeromq.transport.driver.udp.network_publication import (
    HEARTBEAT_TIMEOUT_NS,
    SETUP_TIMEOUT_NS,
    NetworkPublication,
    NetworkPublicationState,
)
from aeromq.transport.driver.udp.retransmit_handler import RetransmitHandler
from aeromq.transport.logbuffer.log_buffer_descriptor import end_of_stream_position, is_connected
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.protocol import (
    EOS_FLAG,
    HDR_TYPE_PAD,
    HDR_TYPE_RTTM,
    HDR_TYPE_SETUP,
    DataHeaderFlyweight,
    SetupFlyweight,
    validate_frame,
)
from tests.transport.udp.harness import LogWriter
from tests.transport.udp.support import system_counters

TERM = 64 * 1024
MTU = 1408
SESSION = 77
STREAM = 1001
INITIAL_TERM_ID = 12
MS = 1_000_000


class FakeSendEndpoint:
    """Records every datagram; ``result`` overrides what send returns."""

    is_multicast = False

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self.result: int | None = None

    def send(self, data: memoryview) -> int:
        if self.result is not None:
            return self.result
        self.sent.append(bytes(data))
        return len(data)

    def types(self) -> list[int]:
        return [int.from_bytes(d[6:8], "little") for d in self.sent]


class Rig:
    def __init__(self, tmp_path: Path, **overrides: Any) -> None:
        self.counters, self.system = system_counters()
        self.log = LogBuffers.create(tmp_path / "pub.logbuffer", TERM)
        initialise_log_metadata(
            self.log,
            registration_id=5,
            session_id=SESSION,
            stream_id=STREAM,
            initial_term_id=INITIAL_TERM_ID,
            term_id=None,
            term_offset=0,
            mtu_length=MTU,
            term_window_length=TERM // 2,
            linger_timeout_ns=10 * MS,
            untethered_window_limit_timeout_ns=1,
            untethered_resting_timeout_ns=1,
            is_exclusive=True,
            is_sparse=True,
            signal_eos=True,
            tether=True,
            spies_simulate_connection=False,
            entity_tag=-1,
            response_correlation_id=-1,
        )
        self.endpoint = FakeSendEndpoint()
        positions = [
            Position(self.counters.values_buffer, self.counters.allocate(name), self.counters)
            for name in ("pub-pos", "pub-lmt", "snd-pos", "snd-lmt")
        ]
        self.snd_bpe = self.counters.new_counter("snd-bpe")
        system = self.system
        values: dict[str, Any] = {
            "log": self.log,
            "endpoint": self.endpoint,
            "registration_id": 5,
            "session_id": SESSION,
            "stream_id": STREAM,
            "channel": "aeron:udp?endpoint=127.0.0.1:1",
            "initial_term_id": INITIAL_TERM_ID,
            "starting_term_id": INITIAL_TERM_ID,
            "starting_term_offset": 0,
            "is_exclusive": True,
            "pub_pos": positions[0],
            "pub_lmt": positions[1],
            "snd_pos": positions[2],
            "snd_lmt": positions[3],
            "snd_bpe": self.snd_bpe,
            "flow_control": UnicastFlowControl(TERM // 2),
            "retransmit_handler": RetransmitHandler(
                delay_ns=0,
                linger_ns=10 * MS,
                max_resend=16,
                invalid_packets=system.get(SystemCounter.INVALID_PACKETS),
                overflows=system.get(SystemCounter.RETRANSMIT_OVERFLOW),
            ),
            "term_window_length": TERM // 2,
            "mtu_length": MTU,
            "max_messages_per_send": 2,
            "connection_timeout_ns": 5_000 * MS,
            "linger_timeout_ns": 10 * MS,
            "unblock_timeout_ns": 15_000 * MS,
            "multicast_ttl": 0,
            "signal_eos": True,
            "short_sends": system.get(SystemCounter.SHORT_SENDS),
            "heartbeats_sent": system.get(SystemCounter.HEARTBEATS_SENT),
            "sender_flow_control_limits": system.get(SystemCounter.SENDER_FLOW_CONTROL_LIMITS),
            "retransmits_sent": system.get(SystemCounter.RETRANSMITS_SENT),
            "retransmitted_bytes": system.get(SystemCounter.RETRANSMITTED_BYTES),
            "unblocked_publications": system.get(SystemCounter.UNBLOCKED_PUBLICATIONS),
            "now_ns": 0,
        }
        values.update(overrides)
        self.publication = NetworkPublication(**values)
        self.publication.pub_lmt.set_ordered(TERM)
        self.writer = LogWriter(self.publication)

    def count(self, counter: SystemCounter) -> int:
        return self.system.get(counter).get()

    def status_message(self, position: int, window: int, now_ns: int, eos: bool = False) -> None:
        term_id = INITIAL_TERM_ID + (position >> 16)
        self.publication.on_status_message(9, term_id, position & (TERM - 1), window, eos, now_ns)

    def write(self, count: int, size: int = 64) -> list[bytes]:
        payloads = [bytes([i % 251]) * size for i in range(count)]
        for payload in payloads:
            assert self.writer.offer(payload)
        return payloads


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


def test_should_send_setup_every_100_ms_until_a_status_message(rig: Rig) -> None:
    publication = rig.publication
    publication.send(0)
    publication.send(SETUP_TIMEOUT_NS // 2)
    assert rig.endpoint.types() == [HDR_TYPE_SETUP]
    publication.send(SETUP_TIMEOUT_NS + 1)
    assert rig.endpoint.types() == [HDR_TYPE_SETUP, HDR_TYPE_SETUP]
    setup = AtomicBuffer.allocate(40)
    setup.put_bytes(0, rig.endpoint.sent[0])
    flyweight = SetupFlyweight(setup)
    assert validate_frame(setup, 0, 40) == 0
    assert (flyweight.session_id, flyweight.stream_id, flyweight.term_length, flyweight.mtu) == (
        SESSION,
        STREAM,
        TERM,
        MTU,
    )
    assert (flyweight.initial_term_id, flyweight.active_term_id) == (INITIAL_TERM_ID,) * 2
    rig.status_message(0, 4096, 3 * SETUP_TIMEOUT_NS)
    publication.send(10 * SETUP_TIMEOUT_NS)
    assert rig.endpoint.types().count(HDR_TYPE_SETUP) == 2
    publication.trigger_send_setup()
    publication.send(20 * SETUP_TIMEOUT_NS)
    assert rig.endpoint.types().count(HDR_TYPE_SETUP) == 3


def test_should_pack_frames_into_datagrams_up_to_the_mtu(rig: Rig) -> None:
    payloads = rig.write(40)
    rig.status_message(0, TERM // 2, 0)
    rig.endpoint.sent.clear()
    sent = rig.publication.send(1)
    datagrams = rig.endpoint.sent
    assert len(datagrams) == 2  # max_messages_per_send
    assert all(len(d) <= MTU for d in datagrams)
    assert len(datagrams[0]) == 14 * 96
    assert sent == sum(len(d) for d in datagrams)
    rig.publication.send(2)
    rig.publication.send(3)
    received = b"".join(rig.endpoint.sent)
    frames = [received[i + 32 : i + 96] for i in range(0, len(received), 96)]
    assert frames == payloads
    assert rig.publication.snd_pos.get() == 40 * 96


def test_should_stop_at_the_sender_limit_and_count_back_pressure_once(rig: Rig) -> None:
    rig.write(10)
    rig.status_message(0, 3 * 96, 0)
    rig.endpoint.sent.clear()
    rig.publication.send(1)
    assert b"".join(rig.endpoint.sent) and len(b"".join(rig.endpoint.sent)) == 3 * 96
    rig.publication.send(2)
    rig.publication.send(3)
    assert rig.snd_bpe.get() == 1
    assert rig.count(SystemCounter.SENDER_FLOW_CONTROL_LIMITS) == 1
    assert rig.publication.snd_lmt.get() == 3 * 96
    rig.status_message(3 * 96, 3 * 96, 4)
    rig.publication.send(5)
    assert rig.publication.snd_pos.get() == 6 * 96


def test_should_not_move_on_after_a_short_or_blocked_send(rig: Rig) -> None:
    rig.write(3)
    rig.status_message(0, TERM // 2, 0)
    rig.endpoint.result = 0
    assert rig.publication.send(1) == 0
    assert rig.publication.snd_pos.get() == 0
    assert rig.count(SystemCounter.SHORT_SENDS) == 2  # the data, then the idle heartbeat
    rig.endpoint.result = None
    rig.publication.send(2)
    assert rig.publication.snd_pos.get() == 3 * 96


def test_should_send_a_heartbeat_when_idle_and_eos_at_the_end(rig: Rig) -> None:
    publication = rig.publication
    rig.status_message(0, TERM // 2, 0)
    rig.write(1)
    publication.send(1)
    rig.endpoint.sent.clear()
    publication.send(HEARTBEAT_TIMEOUT_NS // 2)
    assert rig.endpoint.sent == []
    publication.send(HEARTBEAT_TIMEOUT_NS + 2)
    heartbeat = AtomicBuffer.allocate(32)
    heartbeat.put_bytes(0, rig.endpoint.sent[-1])
    flyweight = DataHeaderFlyweight(heartbeat)
    assert flyweight.is_heartbeat(32)
    assert flyweight.term_offset == 96 and flyweight.term_id == INITIAL_TERM_ID
    assert not flyweight.is_end_of_stream()
    assert rig.count(SystemCounter.HEARTBEATS_SENT) == 1
    publication.decref()
    assert publication.state is NetworkPublicationState.DRAINING
    assert end_of_stream_position(rig.log.meta_data_buffer) == 96
    assert publication.is_end_of_stream
    publication.send(3 * HEARTBEAT_TIMEOUT_NS)
    heartbeat.put_bytes(0, rig.endpoint.sent[-1])
    assert flyweight.flags & EOS_FLAG


def test_should_resend_a_nak_once_while_it_lingers(rig: Rig) -> None:
    rig.write(20)
    rig.status_message(0, TERM // 2, 0)
    for now in range(1, 4):
        rig.publication.send(now)
    first_send = list(rig.endpoint.sent)
    rig.endpoint.sent.clear()
    rig.publication.on_nak(INITIAL_TERM_ID, 96, 2 * 96, 10)
    rig.publication.on_nak(INITIAL_TERM_ID, 96, 2 * 96, 11)
    assert rig.endpoint.sent == [b"".join(first_send)[96 : 3 * 96]]
    assert rig.count(SystemCounter.RETRANSMITS_SENT) == 1
    assert rig.count(SystemCounter.RETRANSMITTED_BYTES) == 2 * 96
    rig.publication.on_nak(INITIAL_TERM_ID, 20 * 96, 96, 12)  # not sent yet: nothing
    rig.publication.on_nak(INITIAL_TERM_ID + 5, 0, 96, 13)  # far ahead: nothing
    assert len(rig.endpoint.sent) == 1


def test_should_resend_padding_as_its_header_only(rig: Rig) -> None:
    rig.status_message(0, TERM, 0)
    rig.publication.pub_lmt.set_ordered(2 * TERM)
    payload = bytes(1000)
    while rig.writer.offer(payload):
        pass
    for now in range(1, 200):
        rig.publication.send(now)
    last = rig.endpoint.sent[-1]
    pad_header = last[-32:]
    assert int.from_bytes(pad_header[6:8], "little") == HDR_TYPE_PAD
    pad_offset = int.from_bytes(pad_header[8:12], "little")
    assert int.from_bytes(pad_header[0:4], "little") == TERM - pad_offset  # covers the rest
    assert sum(len(d) for d in rig.endpoint.sent) == pad_offset + 32  # only its header went
    assert rig.publication.snd_pos.get() == TERM


def test_should_move_pub_lmt_with_receivers_and_pull_it_back_without(rig: Rig) -> None:
    publication = rig.publication
    publication.update_pub_pos_and_lmt()
    assert publication.pub_lmt.get() == 0
    assert not is_connected(rig.log.meta_data_buffer)
    rig.status_message(0, 4096, 0)
    assert is_connected(rig.log.meta_data_buffer)
    assert publication.update_pub_pos_and_lmt() == 1
    assert publication.pub_lmt.get() == TERM // 2
    publication.send(5_001 * MS)  # past the connection timeout: no receivers any more
    assert not publication.has_receivers
    publication.on_time_event(5_001 * MS)
    assert not is_connected(rig.log.meta_data_buffer)


def test_should_end_linger_early_on_a_unicast_eos_status_message(rig: Rig) -> None:
    publication = rig.publication
    rig.status_message(0, 4096, 0)
    publication.decref()
    publication.on_time_event(1)
    assert publication.state is NetworkPublicationState.LINGER
    publication.on_time_event(2)
    assert publication.state is NetworkPublicationState.LINGER
    rig.status_message(0, 4096, 3, eos=True)
    publication.on_time_event(4)
    assert publication.state is NetworkPublicationState.DONE
    assert publication.has_reached_end_of_life
    publication.sender_release()
    assert publication.has_sender_released
    assert publication.close()


def test_should_linger_for_the_linger_timeout_without_eos(rig: Rig) -> None:
    publication = rig.publication
    publication.decref()
    publication.on_time_event(0)
    publication.on_time_event(5 * MS)
    assert publication.state is NetworkPublicationState.LINGER
    publication.on_time_event(11 * MS)
    assert publication.state is NetworkPublicationState.DONE


def test_should_answer_an_rttm_that_asks_for_a_reply(rig: Rig) -> None:
    rig.publication.on_rttm(False, 123, 9)
    assert rig.endpoint.sent == []
    rig.publication.on_rttm(True, 123, 9)
    reply = rig.endpoint.sent[0]
    assert int.from_bytes(reply[6:8], "little") == HDR_TYPE_RTTM
    assert int.from_bytes(reply[16:24], "little") == 123
    assert reply[5] == 0  # a reply does not ask for one


def test_should_tell_a_status_message_that_moves_nothing_from_one_that_moves_the_limit(
    rig: Rig,
) -> None:
    publication = rig.publication
    term_id = INITIAL_TERM_ID
    assert not publication.on_status_message(9, term_id, 0, 4096, False, 0)  # connects
    assert publication.on_status_message(9, term_id, 0, 4096, False, 200 * MS)  # the same
    rig.write(2)  # frames waiting to be sent
    assert not publication.on_status_message(9, term_id, 1024, 4096, False, 400 * MS)  # moves
    assert publication.on_status_message(9, term_id, 1024, 4096, False, 600 * MS)


def test_should_take_a_status_message_that_frees_space_no_frame_waits_for_as_a_keepalive(
    rig: Rig,
) -> None:
    """It moves the limit, but the sender has nothing more to send for it (see
    ``on_status_message``)."""
    publication = rig.publication
    term_id = INITIAL_TERM_ID
    assert not publication.on_status_message(9, term_id, 0, 4096, False, 0)  # connects
    assert publication.on_status_message(9, term_id, 1024, 4096, False, 200 * MS)
    assert publication.snd_lmt.get() == 1024 + 4096  # moved all the same
    rig.write(2)
    assert publication.send(300 * MS) > 0  # all written is sent
    assert publication.on_status_message(9, term_id, 2048, 4096, False, 400 * MS)
    rig.write(2)
    assert not publication.on_status_message(9, term_id, 3072, 4096, False, 500 * MS)


def test_should_say_it_has_unsent_frames_while_it_may_send_one_now(rig: Rig) -> None:
    """``has_unsent`` (the sender's ``left_work``): a complete frame at snd-pos within the
    sender limit, whatever stopped the last send (its datagrams a cycle, a short send, a status
    message that opened the window after it); not frames beyond the window."""
    publication = rig.publication
    assert not publication.has_unsent()  # nothing written
    rig.write(40)
    assert not publication.has_unsent()  # written, but no window yet
    rig.status_message(0, TERM // 2, 0)  # the window opens after the sender's turn
    assert publication.has_unsent()
    publication.send(1)  # two datagrams of 14 frames: 12 left
    assert publication.has_unsent()
    rig.endpoint.result = 0  # a short send: the frame stays at snd-pos
    publication.send(2)
    assert publication.has_unsent()
    rig.endpoint.result = None
    publication.send(3)
    assert not publication.has_unsent()  # all sent
    rig.write(320)  # past the window the status message gave (half a term)
    for now_ns in range(4, 200):
        if not publication.has_unsent():
            break
        publication.send(now_ns)
    assert publication.sender_position() == TERM // 2 // 96 * 96  # the window's last frame
    assert publication.producer_position() > publication.sender_position()  # the rest waits
    assert not publication.has_unsent()  # for a status message: a datagram, which ends a park


def test_should_resend_a_delayed_nak_when_its_delay_ends_in_a_cycle_with_nothing_to_send(
    tmp_path: Path,
) -> None:
    _, system = system_counters()
    rig = Rig(
        tmp_path,
        retransmit_handler=RetransmitHandler(
            delay_ns=5 * MS,
            linger_ns=10 * MS,
            max_resend=16,
            invalid_packets=system.get(SystemCounter.INVALID_PACKETS),
            overflows=system.get(SystemCounter.RETRANSMIT_OVERFLOW),
        ),
    )
    publication = rig.publication
    rig.write(2)
    rig.status_message(0, TERM // 2, 0)
    publication.send(1)  # all sent: later cycles find no frame at snd-pos
    rig.endpoint.sent.clear()
    publication.on_nak(INITIAL_TERM_ID, 0, 96, 2 * MS)
    assert publication.owes_soon() and rig.endpoint.sent == []
    assert publication.send(6 * MS) == 0  # not yet: due after 7 ms
    assert rig.endpoint.sent == []
    assert publication.send(7 * MS + 1) == 0  # the resend is not data sent
    assert len(rig.endpoint.sent) == 1 and rig.count(SystemCounter.RETRANSMITS_SENT) == 1
    publication.send(17 * MS + 2)  # the linger ends: nothing owed
    assert not publication.owes_soon() and publication.retransmit_handler.active_count == 0
