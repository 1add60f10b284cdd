"""Liveness: clients that stop heartbeating, writers that die mid-claim, stuck commands."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.transport.command import (
    ADD_PUBLICATION,
    ON_AVAILABLE_IMAGE,
    ON_CLIENT_TIMEOUT,
    ON_COUNTER_READY,
    ON_PUBLICATION_READY,
    ON_UNAVAILABLE_COUNTER,
    ON_UNAVAILABLE_IMAGE,
    ImageBuffersReady,
)
from aeromq.transport.concurrent.counters_descriptor import RECORD_RECLAIMED
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer.frame_descriptor import HDR_TYPE_PAD, frame_type
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import default_frame_header
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_appender import TermAppender
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import WINDOW, small_context, wait_until

CLIENT_TIMEOUTS = 24
UNBLOCKED_PUBLICATIONS = 19
UNBLOCKED_COMMANDS = 20


@pytest.fixture
def short_lived(shm_dir: Path) -> Iterator[MediaDriver]:
    # 1 s, not less: a test sets up its "silent" client's resources after the client's last
    # keepalive, and heartbeats its "alive" client from the test thread, which shares the GIL with
    # the embedded driver's threads. With 200 ms a loaded machine timed out the alive client too
    # (CLIENT_TIMEOUTS read 2, not 1) or the silent one before its set-up was done.
    context = small_context(
        shm_dir / "aeron",
        client_liveness_timeout_ns=1_000_000_000,
        publication_unblock_timeout_ns=1_500_000_000,  # must exceed the liveness timeout
    )
    with MediaDriver.launch(context) as driver:
        yield driver


def _image(client: DriverClient, subscription_id: int) -> ImageBuffersReady:
    response = client.await_response(
        ON_AVAILABLE_IMAGE, lambda r: r.message.subscriber_registration_id == subscription_id
    )
    message: ImageBuffersReady = response.message
    return message


def _set(client: DriverClient, counter_id: int, value: int) -> None:
    client.cnc.counters_values_buffer.put_int64_ordered(counter_id * 128, value)


def test_should_remove_a_silent_client_with_everything_it_held(short_lived: MediaDriver) -> None:
    with (
        DriverClient(short_lived.aeron_dir) as silent,
        DriverClient(short_lived.aeron_dir, auto_heartbeat=True) as alive,
    ):
        publication = silent.await_correlated(silent.add_publication("aeron:ipc", 10)).message
        own_subscription = silent.add_subscription("aeron:ipc", 10)
        own_image = _image(silent, own_subscription)
        counter = silent.await_correlated(silent.add_counter(2000, b"k", "silent's")).message
        heartbeat_id = silent.heartbeat_counter_id()

        watcher_subscription = alive.add_subscription("aeron:ipc", 10)
        _image(alive, watcher_subscription)

        def alive_heartbeats() -> bool:
            alive.heartbeat()
            alive.poll()
            return bool(alive.responses_of(ON_CLIENT_TIMEOUT))

        wait_until(alive_heartbeats, what="the silent client's timeout")
        timeout = alive.responses_of(ON_CLIENT_TIMEOUT)[0].message
        assert timeout.client_id == silent.client_id
        assert alive.counters.get_counter_value(CLIENT_TIMEOUTS) == 1
        alive.await_response(ON_UNAVAILABLE_COUNTER, lambda r: r.message.counter_id == heartbeat_id)
        alive.await_response(
            ON_UNAVAILABLE_COUNTER, lambda r: r.message.correlation_id == counter.correlation_id
        )
        counters = alive.counters
        for counter_id in (heartbeat_id, counter.counter_id, own_image.subscriber_position_id):
            assert counters.get_counter_state(counter_id) == RECORD_RECLAIMED

        gone = alive.await_response(
            ON_UNAVAILABLE_IMAGE,
            lambda r: r.message.subscription_registration_id == watcher_subscription,
        )
        assert gone.message.correlation_id == publication.registration_id

        def log_deleted() -> bool:
            alive.heartbeat()
            return not os.path.exists(publication.log_file_name)

        wait_until(log_deleted, what="the silent client's publication to be freed")
        assert silent.client_id not in short_lived.conductor.clients
        assert alive.client_id in short_lived.conductor.clients


def test_should_stop_a_dead_subscriber_holding_the_publisher_back(short_lived: MediaDriver) -> None:
    with (
        DriverClient(short_lived.aeron_dir, auto_heartbeat=True) as publisher,
        DriverClient(short_lived.aeron_dir) as dying,
    ):
        publication = publisher.await_correlated(publisher.add_publication("aeron:ipc", 10)).message
        fast_id = publisher.add_subscription("aeron:ipc", 10)
        fast = _image(publisher, fast_id).subscriber_position_id
        _image(dying, dying.add_subscription("aeron:ipc", 10))
        _set(publisher, fast, 8192)
        limit_id = publication.position_limit_counter_id
        assert publisher.counters.get_counter_value(limit_id) == WINDOW

        def limit_released() -> bool:
            publisher.heartbeat()
            return publisher.counters.get_counter_value(limit_id) == 8192 + WINDOW

        wait_until(limit_released, what="the dead subscriber's sub-pos to be dropped")


def _claim_and_die(log_file_name: str, stuck: str) -> tuple[int, int]:
    """Append a frame, leave a claimed frame unpublished, append another; (blocked, tail)."""
    with LogBuffers.map(log_file_name) as log:
        meta = log.meta_data_buffer
        term = log.term_buffers[0]
        header = HeaderWriter(default_frame_header(meta))
        appender = TermAppender(term, meta, 0)
        initial_term_id = log.metadata.initial_term_id
        blocked = appender.append_unfragmented_message(
            header, b"a" * 100, 0, 100, None, initial_term_id
        )
        claimed = meta.get_and_add_int64(0, 256)
        assert claimed & 0xFFFF_FFFF == blocked
        if stuck == "negative":
            term.put_int32_ordered(blocked, -256)
        tail = appender.append_unfragmented_message(
            header, b"b" * 100, 0, 100, None, initial_term_id
        )
        return blocked, tail


@pytest.mark.parametrize("stuck", ["negative", "zero"])
def test_should_unblock_a_frame_a_dead_writer_left_unpublished(
    short_lived: MediaDriver, stuck: str
) -> None:
    with DriverClient(short_lived.aeron_dir, auto_heartbeat=True) as client:
        publication = client.await_correlated(client.add_publication("aeron:ipc", 10)).message
        position_id = _image(
            client, client.add_subscription("aeron:ipc", 10)
        ).subscriber_position_id
        blocked, tail = _claim_and_die(publication.log_file_name, stuck)
        _set(client, position_id, blocked)
        with LogBuffers.map(publication.log_file_name) as log:
            term = log.term_buffers[0]

            def unblocked() -> bool:
                client.heartbeat()
                return term.get_int32_volatile(blocked) > 0

            wait_until(unblocked, what="the unblock timeout")
            assert term.get_int32(blocked) == 256
            assert frame_type(term, blocked) == HDR_TYPE_PAD
            assert term.get_int32(blocked + 256) > 0
            assert blocked + 256 + 160 == tail
        assert client.counters.get_counter_value(UNBLOCKED_PUBLICATIONS) == 1


def test_should_unblock_a_command_a_dead_client_left_half_written(short_lived: MediaDriver) -> None:
    with DriverClient(short_lived.aeron_dir) as client:
        client.to_driver.try_claim(ADD_PUBLICATION, 64)
        correlation_id = client.add_publication("aeron:ipc", 10)
        response = client.await_correlated(correlation_id, timeout_s=5)
        assert response.type_id == ON_PUBLICATION_READY
        assert client.counters.get_counter_value(UNBLOCKED_COMMANDS) == 1


def test_should_keep_a_client_that_heartbeats_alive(short_lived: MediaDriver) -> None:
    with DriverClient(short_lived.aeron_dir) as client:
        client.await_correlated(client.add_subscription("aeron:ipc", 10))
        client.await_response(ON_COUNTER_READY)
        for _ in range(40):  # >= 2 s of 50 ms beats: twice the liveness timeout
            client.heartbeat()
            client.keepalive()
            wait_until(lambda: client.to_driver.size() == 0)
            client.poll()
            time.sleep(0.05)
        assert not client.responses_of(ON_CLIENT_TIMEOUT)
        assert client.client_id in short_lived.conductor.clients
