"""Each command's response, field by field, through the raw protocol client."""

from __future__ import annotations

import os
import struct
import time

from aeromq.transport.command import (
    ON_AVAILABLE_IMAGE,
    ON_CLIENT_TIMEOUT,
    ON_COUNTER_READY,
    ON_EXCLUSIVE_PUBLICATION_READY,
    ON_OPERATION_SUCCESS,
    ON_PUBLICATION_READY,
    ON_SUBSCRIPTION_READY,
    ON_UNAVAILABLE_COUNTER,
    REMOVE_PUBLICATION,
    REMOVE_PUBLICATION_FLAG_REVOKE,
)
from aeromq.transport.concurrent.counters_descriptor import RECORD_ALLOCATED, RECORD_RECLAIMED
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer.log_buffer_descriptor import (
    compute_log_length,
    is_publication_revoked,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.testing.driver_client import CLIENT_HEARTBEAT_TYPE_ID, DriverClient
from tests.transport.driver.support import TERM_LENGTH, WINDOW, wait_until


def test_should_announce_a_new_clients_heartbeat_counter(client: DriverClient) -> None:
    client.add_publication("aeron:ipc", 10)
    ready = client.await_response(ON_COUNTER_READY)
    assert ready.message.correlation_id == client.client_id
    counter_id = ready.message.counter_id
    assert counter_id == client.heartbeat_counter_id()
    assert client.counters.get_counter_type_id(counter_id) == CLIENT_HEARTBEAT_TYPE_ID
    label = client.counters.get_counter_label(counter_id)
    assert label == f"client-heartbeat: id={client.client_id}"
    assert abs(client.counters.get_counter_value(counter_id) - time.time() * 1000) < 5000


def test_should_answer_add_publication_with_publication_ready(
    driver: MediaDriver, client: DriverClient
) -> None:
    correlation_id = client.add_publication("aeron:ipc", 10)
    ready = client.await_correlated(correlation_id)
    assert ready.type_id == ON_PUBLICATION_READY
    message = ready.message
    assert message.correlation_id == correlation_id
    assert message.registration_id == correlation_id
    assert message.stream_id == 10
    assert message.channel_status_indicator_id == -1
    assert message.log_file_name == os.path.join(
        driver.aeron_dir, "publications", f"{correlation_id}.logbuffer"
    )
    assert os.path.getsize(message.log_file_name) == compute_log_length(TERM_LENGTH, 4096)
    limit_id = message.position_limit_counter_id
    counters = client.counters
    assert counters.get_counter_type_id(limit_id) == 1
    assert counters.get_counter_label(limit_id) == (
        f"pub-lmt: {correlation_id} {message.session_id} 10 aeron:ipc"
    )
    assert counters.get_counter_owner_id(limit_id) == client.client_id
    assert counters.get_counter_value(limit_id) == 0
    assert counters.get_counter_label(limit_id - 1).startswith("pub-pos (concurrent): ")
    assert counters.get_counter_owner_id(limit_id - 1) == client.client_id


def test_should_fill_the_log_metadata_like_aeron(client: DriverClient) -> None:
    correlation_id = client.add_publication("aeron:ipc?linger=7ms|eos=false|tags=55", 10)
    message = client.await_correlated(correlation_id, ON_PUBLICATION_READY).message
    with LogBuffers.map(message.log_file_name) as log:
        metadata = log.metadata
        meta = log.meta_data_buffer
        assert metadata.correlation_id == correlation_id
        assert metadata.term_length == TERM_LENGTH
        assert metadata.mtu_length == 1408
        assert metadata.page_size == 4096
        assert metadata.publication_window_length == WINDOW
        assert metadata.linger_timeout_ns == 7_000_000
        assert metadata.signal_eos is False
        assert metadata.entity_tag == 55
        assert metadata.log_type == 0
        assert metadata.default_frame_header_length == 32
        assert meta.get_int64(128) == 2**63 - 1  # end of stream position: none yet
        assert meta.get_int32(136) == 0  # not connected
        header = meta.get_bytes(320, 32)
        assert int.from_bytes(header[12:16], "little", signed=True) == message.session_id
        assert int.from_bytes(header[16:20], "little") == 10
        initial_term_id = metadata.initial_term_id
        assert int.from_bytes(header[20:24], "little", signed=True) == initial_term_id
        assert meta.get_int64(0) >> 32 == initial_term_id
        assert meta.get_int64(0) & 0xFFFF_FFFF == 0
        assert meta.get_int32(24) == 0


def test_should_answer_add_exclusive_publication_with_its_own_log(client: DriverClient) -> None:
    shared = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
    correlation_id = client.add_publication("aeron:ipc", 10, exclusive=True)
    ready = client.await_correlated(correlation_id)
    assert ready.type_id == ON_EXCLUSIVE_PUBLICATION_READY
    assert ready.message.registration_id == correlation_id
    assert ready.message.log_file_name != shared.log_file_name
    assert ready.message.session_id != shared.session_id
    with LogBuffers.map(ready.message.log_file_name) as log:
        assert log.metadata.log_type == 1


def test_should_answer_remove_publication_with_operation_success(client: DriverClient) -> None:
    registration_id = client.add_publication("aeron:ipc", 10)
    client.await_correlated(registration_id, ON_PUBLICATION_READY)
    correlation_id = client.remove_publication(registration_id)
    response = client.await_correlated(correlation_id)
    assert response.type_id == ON_OPERATION_SUCCESS
    assert response.message.correlation_id == correlation_id


def test_should_answer_add_and_remove_subscription(client: DriverClient) -> None:
    registration_id = client.add_subscription("aeron:ipc", 10)
    ready = client.await_correlated(registration_id)
    assert ready.type_id == ON_SUBSCRIPTION_READY
    assert ready.message.channel_status_indicator_id == -1
    correlation_id = client.remove_subscription(registration_id)
    assert client.await_correlated(correlation_id).type_id == ON_OPERATION_SUCCESS


def test_should_accept_stream_id_0_as_aerons_driver_does(client: DriverClient) -> None:
    # Aeron 1.53's C driver serves stream id 0 (checked with pyaeron in tests/interop/).
    publication = client.await_correlated(client.add_publication("aeron:ipc", 0))
    assert publication.type_id == ON_PUBLICATION_READY
    assert publication.message.stream_id == 0
    subscription = client.await_correlated(client.add_subscription("aeron:ipc", 0))
    assert subscription.type_id == ON_SUBSCRIPTION_READY
    image = client.await_response(ON_AVAILABLE_IMAGE)
    assert image.message.stream_id == 0


def test_should_refresh_the_heartbeat_on_client_keepalive(client: DriverClient) -> None:
    client.await_correlated(client.add_subscription("aeron:ipc", 10))
    counter_id = client.heartbeat_counter_id()
    client.heartbeat(now_ms=1)
    assert client.counters.get_counter_value(counter_id) == 1
    client.keepalive()
    wait_until(lambda: client.counters.get_counter_value(counter_id) > 1, what="the keepalive")


def test_should_add_a_client_counter_and_remove_it(client: DriverClient) -> None:
    correlation_id = client.add_counter(1001, b"\x01\x02\x03", "my counter")
    ready = client.await_correlated(correlation_id, ON_COUNTER_READY)
    counter_id = ready.message.counter_id
    counters = client.counters
    assert counters.get_counter_state(counter_id) == RECORD_ALLOCATED
    assert counters.get_counter_type_id(counter_id) == 1001
    assert counters.get_counter_label(counter_id) == "my counter"
    assert counters.get_counter_key(counter_id)[:4] == b"\x01\x02\x03\x00"
    assert counters.get_counter_registration_id(counter_id) == correlation_id
    assert counters.get_counter_owner_id(counter_id) == client.client_id

    remove_id = client.remove_counter(correlation_id)
    assert client.await_correlated(remove_id).type_id == ON_OPERATION_SUCCESS
    gone = client.await_response(
        ON_UNAVAILABLE_COUNTER, lambda r: r.message.correlation_id == correlation_id
    )
    assert gone.message.counter_id == counter_id
    assert counters.get_counter_state(counter_id) == RECORD_RECLAIMED


def test_should_remove_a_closing_client_without_counting_a_timeout(
    driver: MediaDriver, client: DriverClient
) -> None:
    publication = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
    subscription_id = client.add_subscription("aeron:ipc", 10)
    image = client.await_response(ON_AVAILABLE_IMAGE).message
    counter = client.await_correlated(client.add_counter(1001, b"", "c")).message
    heartbeat_id = client.heartbeat_counter_id()

    client.client_close()
    unavailable = client.await_response(
        ON_UNAVAILABLE_COUNTER, lambda r: r.message.correlation_id == client.client_id
    )
    assert unavailable.message.counter_id == heartbeat_id
    client.await_response(
        ON_UNAVAILABLE_COUNTER, lambda r: r.message.counter_id == counter.counter_id
    )
    counters = client.counters
    for counter_id in (heartbeat_id, image.subscriber_position_id, counter.counter_id):
        assert counters.get_counter_state(counter_id) == RECORD_RECLAIMED
    wait_until(
        lambda: (
            counters.get_counter_state(publication.position_limit_counter_id) == RECORD_RECLAIMED
        ),
        what="the publication to end after draining and linger",
    )
    wait_until(lambda: not os.path.exists(publication.log_file_name), what="the log to be deleted")
    client.poll()
    assert not client.responses_of(ON_CLIENT_TIMEOUT)
    assert counters.get_counter_value(24) == 0
    assert subscription_id == image.subscriber_registration_id
    assert client.client_id not in driver.conductor.clients


def test_should_take_term_length_and_mtu_from_the_channel(client: DriverClient) -> None:
    message = client.await_correlated(
        client.add_publication("aeron:ipc?term-length=128k|mtu=8k", 20), ON_PUBLICATION_READY
    ).message
    assert os.path.getsize(message.log_file_name) == compute_log_length(128 * 1024, 4096)
    with LogBuffers.map(message.log_file_name) as log:
        assert log.metadata.term_length == 128 * 1024
        assert log.metadata.mtu_length == 8192
        assert log.metadata.publication_window_length == 64 * 1024


def test_should_revoke_a_publication_removed_with_the_revoke_flag(client: DriverClient) -> None:
    message = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
    with LogBuffers.map(message.log_file_name) as log:
        correlation_id = client.remove_publication(
            message.correlation_id, REMOVE_PUBLICATION_FLAG_REVOKE
        )
        assert client.await_correlated(correlation_id).type_id == ON_OPERATION_SUCCESS
        assert is_publication_revoked(log.meta_data_buffer)
    assert client.counters.get_counter_value(40) == 1


def test_should_accept_a_remove_publication_without_flags_from_older_clients(
    client: DriverClient,
) -> None:
    message = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
    correlation_id = client.next_correlation_id()
    client.send_raw(
        REMOVE_PUBLICATION,
        struct.pack("<qqq", client.client_id, correlation_id, message.correlation_id),
    )
    assert client.await_correlated(correlation_id).type_id == ON_OPERATION_SUCCESS
