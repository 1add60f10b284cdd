"""Small helpers shared by the UDP unit tests: counters, a multicast probe, datagram builders."""

from __future__ import annotations

import functools
import socket

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.system_counters import SystemCounters
from aeromq.transport.protocol import HDR_TYPE_DATA, DataHeaderFlyweight, SetupFlyweight

MULTICAST_GROUP = "224.0.1.79"


def system_counters() -> tuple[CountersManager, SystemCounters]:
    """A counters manager over private buffers, with the driver's system counters in it."""
    counters = CountersManager(AtomicBuffer.allocate(512 * 1024), AtomicBuffer.allocate(128 * 1024))
    return counters, SystemCounters(counters, "INVOKER", 1_000_000_000)


@functools.cache
def loopback_multicast_works() -> bool:
    """Whether this host delivers a multicast datagram sent on 127.0.0.1 back to itself."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        receiver.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        receiver.bind((MULTICAST_GROUP, 0))
        group = socket.inet_aton(MULTICAST_GROUP) + socket.inet_aton("127.0.0.1")
        receiver.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, group)
        receiver.settimeout(1.0)
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1"))
        sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        sender.sendto(b"probe", (MULTICAST_GROUP, receiver.getsockname()[1]))
        return receiver.recv(16) == b"probe"
    except OSError:
        return False
    finally:
        receiver.close()
        sender.close()


def data_frames(
    buffer: AtomicBuffer,
    *,
    session_id: int,
    stream_id: int,
    term_id: int,
    term_offset: int,
    payloads: list[bytes],
) -> int:
    """Write DATA frames for ``payloads`` back to back at offset 0; return the datagram length."""
    flyweight = DataHeaderFlyweight(buffer)
    offset = 0
    for payload in payloads:
        flyweight.wrap(buffer, offset)
        frame_length = 32 + len(payload)
        flyweight.put_data_header(
            frame_length=frame_length,
            flags=0xC0,
            header_type=HDR_TYPE_DATA,
            term_offset=term_offset + offset,
            session_id=session_id,
            stream_id=stream_id,
            term_id=term_id,
        )
        buffer.put_bytes(offset + 32, payload)
        offset += (frame_length + 31) & ~31
    return offset


def setup_frame(
    buffer: AtomicBuffer,
    *,
    session_id: int,
    stream_id: int,
    initial_term_id: int = 7,
    active_term_id: int = 7,
    term_offset: int = 0,
    term_length: int = 64 * 1024,
    mtu: int = 1408,
) -> int:
    return SetupFlyweight(buffer).put_setup(
        session_id=session_id,
        stream_id=stream_id,
        initial_term_id=initial_term_id,
        active_term_id=active_term_id,
        term_offset=term_offset,
        term_length=term_length,
        mtu=mtu,
    )
