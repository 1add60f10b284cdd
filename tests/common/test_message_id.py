"""Message ids. Expected hex strings were printed by OpenJDK 17 running RocketMQ's layout code
(``ByteBuffer`` puts of the same fields); the offset id is also a real RocketMQ sample
(``offsetMsgId=0A42333A00002A9F000000000134F1F5`` for 10.66.51.58:10911, offset 20247029)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aeromq.client import (
    IllegalArgumentError,
    OffsetMessageId,
    UniqueMessageId,
    UniqueMessageIdGenerator,
    create_unique_message_id,
    decode_offset_message_id,
    decode_unique_message_id,
    encode_offset_message_id,
    encode_unique_message_id,
)
from aeromq.common import (
    IPV6_EXTRA_LENGTH,
    OFFSET_COMMIT_LOG_OFFSET_OFFSET,
    OFFSET_MESSAGE_ID_LENGTH,
    OFFSET_PORT_OFFSET,
    UNIQUE_CLIENT_HASH_OFFSET,
    UNIQUE_COUNTER_OFFSET,
    UNIQUE_MESSAGE_ID_LENGTH,
    UNIQUE_PID_OFFSET,
    UNIQUE_TIME_OFFSET,
    unique_message_id_time_ms,
)


def test_should_match_the_documented_layouts() -> None:
    assert (UNIQUE_PID_OFFSET, UNIQUE_CLIENT_HASH_OFFSET) == (4, 6)
    assert (UNIQUE_TIME_OFFSET, UNIQUE_COUNTER_OFFSET, UNIQUE_MESSAGE_ID_LENGTH) == (10, 14, 16)
    assert struct.calcsize(">4sHiIH") == UNIQUE_MESSAGE_ID_LENGTH
    assert (OFFSET_PORT_OFFSET, OFFSET_COMMIT_LOG_OFFSET_OFFSET) == (4, 8)
    assert OFFSET_MESSAGE_ID_LENGTH == struct.calcsize(">4siq") == 16
    assert IPV6_EXTRA_LENGTH == 12


def test_should_encode_unique_ids_as_rocketmq() -> None:
    msg_id = encode_unique_message_id("10.0.192.122", 0x12345678, -5, 3_000_000_000, 70000)
    assert msg_id == "0A00C07A5678FFFFFFFBB2D05E001170"
    assert decode_unique_message_id(msg_id) == UniqueMessageId(
        "10.0.192.122", 0x5678, -5, 3_000_000_000, 70000 & 0xFFFF
    )


def test_should_encode_offset_ids_as_rocketmq() -> None:
    msg_id = encode_offset_message_id("10.66.51.58", 10911, 20247029)
    assert msg_id == "0A42333A00002A9F000000000134F1F5"
    assert decode_offset_message_id(msg_id) == OffsetMessageId("10.66.51.58", 10911, 20247029)
    assert decode_offset_message_id(msg_id.lower()) == decode_offset_message_id(msg_id)


def test_should_use_28_bytes_for_ipv6_hosts() -> None:
    offset_id = encode_offset_message_id("fe80::1", 10911, 7)
    assert len(offset_id) == 56
    assert decode_offset_message_id(offset_id) == OffsetMessageId("fe80::1", 10911, 7)
    unique_id = encode_unique_message_id("::1", 1, 2, 3, 4)
    assert len(unique_id) == 56
    assert decode_unique_message_id(unique_id) == UniqueMessageId("::1", 1, 2, 3, 4)


_IPV4 = st.ip_addresses(v=4).map(str)
_IP = st.ip_addresses().map(str)


@given(
    _IP,
    st.integers(0, 0xFFFF),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(0, 2**32 - 1),
    st.integers(0, 0xFFFF),
)
def test_should_round_trip_unique_ids(
    ip: str, pid: int, client_hash: int, time_ms: int, counter: int
) -> None:
    msg_id = encode_unique_message_id(ip, pid, client_hash, time_ms, counter)
    assert msg_id == msg_id.upper()
    assert decode_unique_message_id(msg_id) == UniqueMessageId(
        ip, pid, client_hash, time_ms, counter
    )


@given(_IP, st.integers(0, 0xFFFF), st.integers(0, 2**63 - 1))
def test_should_round_trip_offset_ids(host: str, port: int, offset: int) -> None:
    msg_id = encode_offset_message_id(host, port, offset)
    assert len(msg_id) == (32 if "." in host else 56)
    assert decode_offset_message_id(msg_id) == OffsetMessageId(host, port, offset)


@pytest.mark.parametrize(
    "msg_id", ["", "0A42333A", "0A42333A00002A9F000000000134F1F", "0A42333A00002A9F0000 000134F1F5"]
)
def test_should_reject_ids_that_are_not_32_or_56_hex_characters(msg_id: str) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        decode_offset_message_id(msg_id)
    assert str(raised.value).startswith(
        "not an offset message id: expected 32 or 56 hex characters"
    )
    with pytest.raises(IllegalArgumentError, match="not a unique message id"):
        decode_unique_message_id(msg_id)


def test_should_reject_bad_hosts_ports_and_offsets() -> None:
    with pytest.raises(IllegalArgumentError, match="not an IPv4 or IPv6 address: ip='host-a'"):
        encode_offset_message_id("host-a", 1, 1)
    with pytest.raises(IllegalArgumentError, match=r"port out of range \[0, 65535\]: port=65536"):
        encode_offset_message_id("1.2.3.4", 65536, 1)
    with pytest.raises(IllegalArgumentError, match="commit log offset out of range"):
        encode_offset_message_id("1.2.3.4", 1, -1)


def _month_start_ms(year: int, month: int) -> int:
    return round(datetime(year, month, 1).timestamp() * 1000)


def test_should_count_time_from_the_start_of_the_local_month_and_roll_over() -> None:
    generator = UniqueMessageIdGenerator(ip="10.0.0.1", pid=7, client_hash=9)
    start_ms = _month_start_ms(2026, 3)
    first = decode_unique_message_id(generator.next_id(start_ms + 1234))
    second = decode_unique_message_id(generator.next_id(start_ms + 1234))
    assert (first.ip, first.pid, first.client_hash) == ("10.0.0.1", 7, 9)
    assert first.time_since_month_start_ms == second.time_since_month_start_ms == 1234
    assert (first.counter, second.counter) == (0, 1)
    next_month = decode_unique_message_id(generator.next_id(_month_start_ms(2026, 4) + 5))
    assert next_month.time_since_month_start_ms == 5
    assert next_month.counter == 2


def test_should_wrap_the_counter_at_16_bits() -> None:
    generator = UniqueMessageIdGenerator(ip="10.0.0.1", pid=7, client_hash=9)
    now_ms = _month_start_ms(2026, 3)
    ids = [generator.next_id(now_ms) for _ in range(0x10001)]
    assert decode_unique_message_id(ids[-1]).counter == 0
    assert len(set(ids)) == 0x10000


def test_should_recover_about_when_an_id_was_made() -> None:
    made_ms = _month_start_ms(2026, 3) + 86_400_000 * 20
    msg_id = UniqueMessageIdGenerator(ip="10.0.0.1").next_id(made_ms)
    assert unique_message_id_time_ms(msg_id, made_ms + 60_000) == made_ms
    # read next month, on an earlier day: still this month's start
    assert unique_message_id_time_ms(msg_id, _month_start_ms(2026, 4) + 86_400_000) == made_ms


def test_should_make_distinct_ids_with_the_process_generator() -> None:
    ids = {create_unique_message_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert decode_unique_message_id(next(iter(ids))).pid == os.getpid() & 0xFFFF
    now_ms = time.time_ns() // 1_000_000
    assert abs(unique_message_id_time_ms(next(iter(ids)), now_ms + 1) - now_ms) < 60_000


_FORK_SCRIPT = """
import os
from aeromq.client import create_unique_message_id, decode_unique_message_id
create_unique_message_id()  # the parent's generator exists before the fork
read_end, write_end = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write_end, str(decode_unique_message_id(create_unique_message_id()).pid).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(pid & 0xFFFF, os.read(read_end, 32).decode())
"""


def test_should_use_the_child_pid_after_fork() -> None:
    # a fresh single-threaded interpreter forks, so the test process itself never does
    done = subprocess.run(
        [sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    child_pid, pid_in_id = done.stdout.split()
    assert pid_in_id == child_pid


@pytest.mark.parametrize(("before", "count"), [(0, 1), (0, 32), (250, 12), (0xFFF0, 40), (3, 600)])
def test_should_make_a_block_of_ids_equal_to_one_at_a_time(before: int, count: int) -> None:
    now_ms = _month_start_ms(2026, 3) + 77
    one = UniqueMessageIdGenerator(ip="10.0.0.1", pid=7, client_hash=9)
    block = UniqueMessageIdGenerator(ip="10.0.0.1", pid=7, client_hash=9)
    for generator in (one, block):
        for _ in range(before):
            generator.next_id(now_ms)
    expected = [one.next_id(now_ms) for _ in range(count)]
    assert block.next_ids(count, now_ms) == expected
    assert [decode_unique_message_id(i).counter for i in expected] == [
        (before + i) & 0xFFFF for i in range(count)
    ]
    assert {len(i) for i in expected} == {32}
    assert block.next_id(now_ms) == one.next_id(now_ms)  # both go on from the same counter


def test_should_not_hand_one_counter_to_two_threads() -> None:
    import threading

    generator = UniqueMessageIdGenerator(ip="10.0.0.1", pid=7, client_hash=9)
    now_ms = _month_start_ms(2026, 3)
    made: list[list[str]] = [[] for _ in range(4)]

    def make(out: list[str]) -> None:
        for _ in range(500):
            out.extend(generator.next_ids(7, now_ms))

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    ids = [i for out in made for i in out]
    assert len(ids) == len(set(ids)) == 4 * 500 * 7  # 14,000 < 2^16: no wrap
