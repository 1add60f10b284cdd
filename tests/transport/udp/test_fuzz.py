"""Fuzz: random and mutated datagrams at a receiver while real traffic flows beside them.

Nothing escapes the receiver (an exception would end the pump and fail the test), the invalid
packet counter rises, and every real message still arrives intact and in order. The fuzzer's
frames never name the live session, and its SETUPs name a stream nobody subscribes to: a peer
that forges the live session's frames can damage that stream in Aeron too (there is no
authentication on the wire), which is not what this checks.
"""

from __future__ import annotations

import random
import socket
import struct
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver.system_counters import SystemCounter
from aeromq.transport.protocol import (
    DataHeaderFlyweight,
    ErrorFlyweight,
    NakFlyweight,
    RttmFlyweight,
    SetupFlyweight,
    StatusMessageFlyweight,
)
from tests.transport.udp.harness import LogReader, LogWriter, Node

STREAM_ID = 1001
OTHER_STREAM_ID = 2002


def _templates(live_session: int) -> list[bytes]:
    """One valid frame of each kind, none for the live session (see module)."""
    buffer = AtomicBuffer.allocate(4096)
    frames: list[bytes] = []
    session = live_session + 1
    data = DataHeaderFlyweight(buffer)
    offset = 0
    for term_offset in (0, 96, 192):
        data.wrap(buffer, offset)
        data.put_data_header(
            frame_length=80,
            flags=0xC0,
            header_type=1,
            term_offset=term_offset,
            session_id=session,
            stream_id=STREAM_ID,
            term_id=3,
        )
        offset += 96
    frames.append(buffer.get_bytes(0, offset))
    data.wrap(buffer, 0)
    data.put_heartbeat(session_id=session, stream_id=STREAM_ID, term_id=3, term_offset=64)
    frames.append(buffer.get_bytes(0, 32))
    data.put_data_header(
        frame_length=4096,
        flags=0xC0,
        header_type=0,
        term_offset=1024,
        session_id=session,
        stream_id=STREAM_ID,
        term_id=3,
    )
    frames.append(buffer.get_bytes(0, 32))
    length = SetupFlyweight(buffer).put_setup(
        session_id=session,
        stream_id=OTHER_STREAM_ID,
        initial_term_id=1,
        active_term_id=1,
        term_offset=0,
        term_length=64 * 1024,
        mtu=1408,
    )
    frames.append(buffer.get_bytes(0, length))
    length = StatusMessageFlyweight(buffer).put_status_message(
        session_id=session,
        stream_id=STREAM_ID,
        consumption_term_id=1,
        consumption_term_offset=0,
        receiver_window=4096,
        receiver_id=1,
    )
    frames.append(buffer.get_bytes(0, length))
    length = NakFlyweight(buffer).put_nak(
        session_id=session, stream_id=STREAM_ID, term_id=1, term_offset=0, length=64
    )
    frames.append(buffer.get_bytes(0, length))
    length = RttmFlyweight(buffer).put_rttm(
        session_id=session,
        stream_id=STREAM_ID,
        echo_timestamp_ns=1,
        reception_delta_ns=0,
        receiver_id=1,
        flags=0x80,
    )
    frames.append(buffer.get_bytes(0, length))
    length = ErrorFlyweight(buffer).put_error(
        session_id=session, stream_id=STREAM_ID, receiver_id=1, error_code=1, error_message="x"
    )
    frames.append(buffer.get_bytes(0, length))
    return frames


@st.composite
def _mutated(draw: st.DrawFn, templates: list[bytes], live_session: int) -> bytes:
    frame = bytearray(draw(st.sampled_from(templates)))
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "length", "version", "type", "cut", "grow", "word"]))
        if kind == "flip" and frame:
            index = draw(st.integers(0, len(frame) - 1))
            frame[index] ^= draw(st.integers(1, 255))
        elif kind == "length" and len(frame) >= 4:
            struct.pack_into("<i", frame, 0, draw(st.integers(-(2**31), 2**31 - 1)))
        elif kind == "version" and len(frame) >= 5:
            frame[4] = draw(st.integers(0, 255))
        elif kind == "type" and len(frame) >= 8:
            struct.pack_into("<H", frame, 6, draw(st.integers(0, 0xFFFF)))
        elif kind == "cut":
            del frame[draw(st.integers(0, len(frame))) :]
        elif kind == "grow":
            frame += draw(st.binary(max_size=256))
        elif kind == "word" and len(frame) >= 16:
            offset = draw(st.integers(0, (len(frame) - 4) // 4)) * 4
            struct.pack_into("<i", frame, offset, draw(st.integers(-(2**31), 2**31 - 1)))
    if len(frame) >= 16 and struct.unpack_from("<i", frame, 12)[0] == live_session:
        struct.pack_into("<i", frame, 12, live_session + 2)  # keep off the live session
    if len(frame) >= 8 and struct.unpack_from("<H", frame, 6)[0] == 5 and len(frame) >= 20:
        struct.pack_into("<i", frame, 16, OTHER_STREAM_ID)  # SETUPs only for nobody's stream
    return bytes(frame)


def test_should_drop_bad_datagrams_and_keep_real_traffic_intact(shm_dir: Path) -> None:
    sender, receiver = Node(shm_dir / "tx"), Node(shm_dir / "rx")
    fuzzer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.add_subscription("aeron:udp?endpoint=127.0.0.1:0", STREAM_ID)
        endpoint = next(iter(receiver.streams.subscriptions.endpoints.values()))
        target = endpoint.local_address
        publication = sender.add_publication(
            f"aeron:udp?endpoint=127.0.0.1:{target[1]}|term-length=64k", STREAM_ID
        )
        for _ in range(2000):
            if receiver.images():
                break
            sender.pump()
            receiver.pump()
        image = receiver.images()[0]
        ready = receiver.available_images[0]
        reader = LogReader(image.log, receiver.sub_pos(ready.subscriber_position_id))
        writer = LogWriter(publication)
        rng = random.Random(7)
        written: list[bytes] = []
        templates = _templates(publication.session_id)
        datagram = st.one_of(
            st.binary(max_size=1500),
            _mutated(templates, publication.session_id),
        )

        @settings(
            max_examples=60,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(st.lists(datagram, min_size=1, max_size=25))
        def fuzz(datagrams: list[bytes]) -> None:
            for data in datagrams:
                fuzzer.sendto(data, target)
                payload = rng.randbytes(rng.randint(0, 300))
                if writer.offer(payload):
                    written.append(payload)
                for node in (sender, receiver):
                    node.pump()
                reader.poll(100)

        fuzz()
        for _ in range(20_000):
            if len(reader.messages) >= len(written):
                break
            sender.pump()
            receiver.pump()
            reader.poll(100)
        assert reader.messages == written
        assert len(written) > 100
        assert receiver.counter(SystemCounter.INVALID_PACKETS) > 50
        assert image in receiver.images()
        assert receiver.errors == [] and sender.errors == []
    finally:
        fuzzer.close()
        sender.close()
        receiver.close()
