"""System counters (ids, keys, labels as Aeron's) and stream counter keys and labels."""

from __future__ import annotations

import pytest

from aeromq.transport import TransportStateError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.driver.stream_counters import (
    CLIENT_HEARTBEAT_TYPE_ID,
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POSITION_TYPE_ID,
    STREAM_KEY_CHANNEL_LENGTH_OFFSET,
    STREAM_KEY_CHANNEL_OFFSET,
    STREAM_KEY_MAX_CHANNEL_LENGTH,
    STREAM_KEY_REGISTRATION_ID_OFFSET,
    STREAM_KEY_SESSION_ID_OFFSET,
    STREAM_KEY_STREAM_ID_OFFSET,
    SUBSCRIBER_POSITION_TYPE_ID,
    allocate_client_heartbeat,
    allocate_publisher_limit,
    allocate_publisher_position,
    allocate_subscriber_position,
    stream_counter_key,
)
from aeromq.transport.driver.system_counters import (
    AERON_VERSION,
    CONTROL_PROTOCOL_VERSION,
    SystemCounter,
    SystemCounters,
    system_counter_label,
)


def _manager() -> CountersManager:
    values = AtomicBuffer.allocate(64 * 1024)
    return CountersManager(AtomicBuffer.allocate(4 * 64 * 1024), values)


def test_should_lay_out_the_stream_key_as_documented() -> None:
    assert STREAM_KEY_REGISTRATION_ID_OFFSET == 0
    assert STREAM_KEY_SESSION_ID_OFFSET == 8
    assert STREAM_KEY_STREAM_ID_OFFSET == 12
    assert STREAM_KEY_CHANNEL_LENGTH_OFFSET == 16
    assert STREAM_KEY_CHANNEL_OFFSET == 20
    assert STREAM_KEY_MAX_CHANNEL_LENGTH == MAX_KEY_LENGTH - 20 == 92
    key = stream_counter_key(-7, 1985493803, 1001, "aeron:ipc")
    assert key == (
        (-7).to_bytes(8, "little", signed=True)
        + (1985493803).to_bytes(4, "little")
        + (1001).to_bytes(4, "little")
        + (9).to_bytes(4, "little")
        + b"aeron:ipc"
    )


def test_should_cut_a_long_channel_to_fit_the_key() -> None:
    key = stream_counter_key(1, 2, 3, "aeron:ipc?alias=" + "x" * 200)
    assert len(key) == MAX_KEY_LENGTH
    assert int.from_bytes(key[16:20], "little") == 92


def test_should_allocate_stream_counters_with_aerons_types_labels_and_ids() -> None:
    manager = _manager()
    pub_pos = allocate_publisher_position(
        manager, 4, 1149896852, 1001, "aeron:ipc", 77, is_exclusive=False
    )
    exclusive_pos = allocate_publisher_position(
        manager, 6, 1149896853, 1001, "aeron:ipc", 77, is_exclusive=True
    )
    pub_lmt = allocate_publisher_limit(manager, 4, 1149896852, 1001, "aeron:ipc", owner_id=77)
    sub_pos = allocate_subscriber_position(manager, 2, 1985493803, 1001, "aeron:ipc", 0, 78, 4)
    heartbeat = allocate_client_heartbeat(manager, 5)

    # Labels, owner and reference ids as Aeron 1.53's C driver writes them (tests/interop/).
    assert manager.get_counter_type_id(pub_pos) == PUBLISHER_POSITION_TYPE_ID == 12
    assert manager.get_counter_label(pub_pos) == (
        "pub-pos (concurrent): 4 1149896852 1001 aeron:ipc"
    )
    assert manager.get_counter_owner_id(pub_pos) == 77
    assert manager.get_counter_label(exclusive_pos) == (
        "pub-pos (exclusive): 6 1149896853 1001 aeron:ipc"
    )
    assert manager.get_counter_type_id(pub_lmt) == PUBLISHER_LIMIT_TYPE_ID == 1
    assert manager.get_counter_label(pub_lmt) == "pub-lmt: 4 1149896852 1001 aeron:ipc"
    assert manager.get_counter_registration_id(pub_lmt) == 4
    assert manager.get_counter_owner_id(pub_lmt) == 77
    assert manager.get_counter_type_id(sub_pos) == SUBSCRIBER_POSITION_TYPE_ID == 4
    assert manager.get_counter_label(sub_pos) == "sub-pos: 2 1985493803 1001 aeron:ipc @0"
    assert manager.get_counter_owner_id(sub_pos) == 78
    assert manager.get_counter_reference_id(sub_pos) == 4
    assert manager.get_counter_key(sub_pos)[:29] == stream_counter_key(
        2, 1985493803, 1001, "aeron:ipc"
    )
    assert manager.get_counter_type_id(heartbeat) == CLIENT_HEARTBEAT_TYPE_ID == 11
    assert manager.get_counter_label(heartbeat) == "client-heartbeat: id=5"
    assert manager.get_counter_key(heartbeat)[:8] == (5).to_bytes(8, "little")
    assert manager.get_counter_registration_id(heartbeat) == 5
    assert manager.get_counter_owner_id(heartbeat) == 5


def test_should_allocate_all_46_system_counters_in_aerons_order() -> None:
    manager = _manager()
    system = SystemCounters(manager, "DEDICATED", 100_000_000)
    assert len(SystemCounter) == 46
    for counter in SystemCounter:
        assert manager.get_counter_type_id(counter) == 0
        assert manager.get_counter_key(counter)[:4] == int(counter).to_bytes(4, "little")
        assert manager.get_counter_registration_id(counter) == counter
        assert manager.get_counter_owner_id(counter) == -1
        assert manager.get_counter_label(counter).startswith(system_counter_label(counter))
    assert manager.get_counter_label(0) == "Bytes sent"
    assert manager.get_counter_label(15).startswith("Errors: version=1.53.2 commit=aeromq")
    assert manager.get_counter_label(19) == "Unblocked Publications"
    assert manager.get_counter_label(20) == "Unblocked Control Commands"
    assert manager.get_counter_label(24) == "Client liveness timeouts"
    assert (
        manager.get_counter_label(26) == "Conductor max cycle time doing its work in ns: DEDICATED"
    )
    assert manager.get_counter_label(27) == (
        "Conductor work cycle exceeded threshold count: threshold=100ms DEDICATED"
    )
    assert manager.get_counter_label(25) == "Resolution changes: driverName="
    for sender_or_receiver in (29, 31):  # the labels Aeron 1.53's C driver writes
        assert manager.get_counter_label(sender_or_receiver).endswith(
            "work cycle exceeded threshold count: threshold=100ms DEDICATED"
        )
    assert manager.get_counter_label(33) == ("NameResolver exceeded threshold count: threshold=5s")
    assert manager.get_counter_label(43) == "Control protocol version"
    assert manager.get_counter_value(SystemCounter.AERON_VERSION) == AERON_VERSION
    assert manager.get_counter_value(43) == CONTROL_PROTOCOL_VERSION
    system.get(SystemCounter.ERRORS).increment()
    assert manager.get_counter_value(15) == 1
    system.close()
    assert manager.get_counter_state(15) == -1


def test_should_refuse_system_counters_that_cannot_take_their_ids() -> None:
    manager = _manager()
    manager.allocate("squatter")
    with pytest.raises(TransportStateError, match="out of order"):
        SystemCounters(manager, "SHARED", 1_000_000)
