"""IPC publications: sharing, images in either order, flow control, cleaning, end of stream."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from aeromq.transport.command import (
    ON_AVAILABLE_IMAGE,
    ON_EXCLUSIVE_PUBLICATION_READY,
    ON_PUBLICATION_READY,
    ON_UNAVAILABLE_IMAGE,
    ImageBuffersReady,
    PublicationBuffersReady,
)
from aeromq.transport.concurrent.counters_descriptor import RECORD_ALLOCATED, RECORD_RECLAIMED
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer.header import HeaderWriter
from aeromq.transport.logbuffer.log_buffer_descriptor import default_frame_header, is_connected
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.logbuffer.term_appender import TermAppender
from aeromq.transport.testing.driver_client import DriverClient
from tests.transport.driver.support import TERM_LENGTH, WINDOW, small_context, wait_until


def _publish(
    client: DriverClient, channel: str = "aeron:ipc", stream_id: int = 10
) -> PublicationBuffersReady:
    response = client.await_correlated(client.add_publication(channel, stream_id))
    assert response.type_id == ON_PUBLICATION_READY, response
    message: PublicationBuffersReady = response.message
    return message


def _subscribe(client: DriverClient, channel: str = "aeron:ipc", stream_id: int = 10) -> int:
    registration_id = client.add_subscription(channel, stream_id)
    client.await_correlated(registration_id)
    return registration_id


def _image(client: DriverClient, subscription_id: int, publication_id: int) -> ImageBuffersReady:
    response = client.await_response(
        ON_AVAILABLE_IMAGE,
        lambda r: (
            r.message.subscriber_registration_id == subscription_id
            and r.message.correlation_id == publication_id
        ),
    )
    message: ImageBuffersReady = response.message
    return message


def _append(log_file_name: str, *lengths: int) -> int:
    """Append frames of these payload lengths to the first term; return the new tail offset."""
    with LogBuffers.map(log_file_name) as log:
        meta = log.meta_data_buffer
        header = HeaderWriter(default_frame_header(meta))
        appender = TermAppender(log.term_buffers[0], meta, 0)
        initial_term_id = log.metadata.initial_term_id
        offset = 0
        for length in lengths:
            offset = appender.append_unfragmented_message(
                header, b"\xab" * length, 0, length, None, initial_term_id
            )
            assert offset > 0
        return offset


def _value(client: DriverClient, counter_id: int) -> int:
    return client.counters.get_counter_value(counter_id)


def _set(client: DriverClient, counter_id: int, value: int) -> None:
    client.cnc.counters_values_buffer.put_int64_ordered(counter_id * 128, value)


def test_should_share_a_concurrent_publication_and_count_references(client: DriverClient) -> None:
    first = _publish(client)
    second = _publish(client, "aeron:ipc?alias=other")
    assert second.registration_id == first.registration_id
    assert second.session_id == first.session_id
    assert second.log_file_name == first.log_file_name
    assert second.position_limit_counter_id == first.position_limit_counter_id
    assert second.correlation_id != first.correlation_id

    client.remove_publication(first.correlation_id)
    client.remove_publication(second.correlation_id)
    wait_until(lambda: not os.path.exists(first.log_file_name), what="the shared log to go")


def test_should_keep_a_shared_publication_while_one_link_holds_it(client: DriverClient) -> None:
    first = _publish(client)
    second = _publish(client)
    client.await_correlated(client.remove_publication(first.correlation_id))
    third = _publish(client)
    assert third.registration_id == first.registration_id
    assert os.path.exists(second.log_file_name)


def test_should_give_each_exclusive_publication_its_own_log_and_session(
    client: DriverClient,
) -> None:
    shared = _publish(client)
    exclusives = []
    for _ in range(2):
        response = client.await_correlated(client.add_publication("aeron:ipc", 10, exclusive=True))
        assert response.type_id == ON_EXCLUSIVE_PUBLICATION_READY
        exclusives.append(response.message)
    files = {shared.log_file_name, *(message.log_file_name for message in exclusives)}
    sessions = {shared.session_id, *(message.session_id for message in exclusives)}
    assert len(files) == 3
    assert len(sessions) == 3
    other_stream = _publish(client, stream_id=11)
    assert other_stream.registration_id != shared.registration_id


def test_should_pin_session_id_and_start_position_from_the_channel(client: DriverClient) -> None:
    channel = "aeron:ipc?session-id=4321|init-term-id=100|term-id=102|term-offset=1024"
    message = _publish(client, channel)
    assert message.session_id == 4321
    position = 2 * TERM_LENGTH + 1024
    assert _value(client, message.position_limit_counter_id) == position
    with LogBuffers.map(message.log_file_name) as log:
        meta = log.meta_data_buffer
        assert log.metadata.initial_term_id == 100
        assert meta.get_int32(24) == 2  # active term count
        assert meta.get_int64(2 * 8) == (102 << 32) | 1024
    subscription_id = _subscribe(client, stream_id=10)
    image = _image(client, subscription_id, message.registration_id)
    assert _value(client, image.subscriber_position_id) == position
    assert client.counters.get_counter_label(image.subscriber_position_id).endswith(f"@{position}")


def test_should_announce_an_image_when_the_subscription_comes_second(client: DriverClient) -> None:
    publication = _publish(client)
    subscription_id = _subscribe(client)
    image = _image(client, subscription_id, publication.registration_id)
    assert image.session_id == publication.session_id
    assert image.stream_id == 10
    assert image.log_file_name == publication.log_file_name
    assert image.source_identity == "aeron:ipc"
    counters = client.counters
    assert counters.get_counter_type_id(image.subscriber_position_id) == 4
    assert counters.get_counter_label(image.subscriber_position_id) == (
        f"sub-pos: {subscription_id} {publication.session_id} 10 aeron:ipc @0"
    )
    assert counters.get_counter_owner_id(image.subscriber_position_id) == client.client_id


def test_should_announce_images_when_the_publications_come_second(client: DriverClient) -> None:
    first_subscription = _subscribe(client)
    second_subscription = _subscribe(client, "aeron:ipc?alias=b")
    other_stream = _subscribe(client, stream_id=12)
    publication = _publish(client)
    exclusive = client.await_correlated(client.add_publication("aeron:ipc", 10, exclusive=True))
    for subscription_id in (first_subscription, second_subscription):
        _image(client, subscription_id, publication.registration_id)
        _image(client, subscription_id, exclusive.message.registration_id)
    client.poll()
    images = client.responses_of(ON_AVAILABLE_IMAGE)
    assert len(images) == 4
    assert all(r.message.subscriber_registration_id != other_stream for r in images)


def test_should_link_a_session_pinned_subscription_only_to_that_session(
    client: DriverClient,
) -> None:
    pinned = _subscribe(client, "aeron:ipc?session-id=777")
    _publish(client)
    exclusive = client.await_correlated(
        client.add_publication("aeron:ipc?session-id=777", 10, exclusive=True)
    )
    image = _image(client, pinned, exclusive.message.registration_id)
    assert image.session_id == 777
    client.poll()
    pinned_images = [
        r
        for r in client.responses_of(ON_AVAILABLE_IMAGE)
        if r.message.subscriber_registration_id == pinned
    ]
    assert [r.message.session_id for r in pinned_images] == [777]


def test_should_hold_the_limit_without_subscribers_and_track_the_slowest_one(
    client: DriverClient,
) -> None:
    publication = _publish(client)
    limit_id = publication.position_limit_counter_id
    with LogBuffers.map(publication.log_file_name) as log:
        meta = log.meta_data_buffer
        assert _value(client, limit_id) == 0
        assert not is_connected(meta)

        fast_id = _subscribe(client)
        fast = _image(client, fast_id, publication.registration_id).subscriber_position_id
        wait_until(lambda: _value(client, limit_id) == WINDOW, what="pub-lmt = sub-pos + window")
        assert is_connected(meta)

        slow_id = _subscribe(client)
        slow = _image(client, slow_id, publication.registration_id).subscriber_position_id
        tail = _append(publication.log_file_name, *[1000] * 16)
        _set(client, fast, tail)
        _set(client, slow, 8192)
        wait_until(lambda: _value(client, limit_id) == 8192 + WINDOW, what="the slowest to rule")
        _set(client, slow, tail)
        wait_until(lambda: _value(client, limit_id) == tail + WINDOW, what="the limit to follow")

        client.await_correlated(client.remove_subscription(slow_id))
        client.await_correlated(client.remove_subscription(fast_id))
        assert not is_connected(meta)
        wait_until(lambda: _value(client, limit_id) == tail, what="the limit to fall back")
        assert client.counters.get_counter_state(slow) == RECORD_RECLAIMED


def test_should_clean_what_every_subscriber_has_consumed_one_term_behind(
    client: DriverClient,
) -> None:
    publication = _publish(client)
    subscription_id = _subscribe(client)
    position_id = _image(
        client, subscription_id, publication.registration_id
    ).subscriber_position_id
    limit_id = publication.position_limit_counter_id
    tail = _append(publication.log_file_name, *[2000] * 12)
    with LogBuffers.map(publication.log_file_name) as log:
        term = log.term_buffers[0]
        written = term.get_bytes(0, tail)
        assert written[:4] != b"\x00" * 4
        consumed = 8192 + 4096
        _set(client, position_id, consumed)
        # the limit moves after the cleaning of the same duty cycle: what was read stays
        # until the reader is a term past it
        wait_until(lambda: _value(client, limit_id) == consumed + WINDOW, what="the limit")
        assert term.get_bytes(0, tail) == written
        _set(client, position_id, TERM_LENGTH + consumed)
        wait_until(lambda: term.get_bytes(0, consumed) == bytes(consumed), what="the cleaning")
        assert term.get_bytes(consumed, tail - consumed) == written[consumed:]


def test_should_end_the_stream_drain_linger_then_free_everything(client: DriverClient) -> None:
    publication = _publish(client, "aeron:ipc?linger=100ms")
    subscription_id = _subscribe(client)
    position_id = _image(
        client, subscription_id, publication.registration_id
    ).subscriber_position_id
    tail = _append(publication.log_file_name, 100, 200, 300)
    limit_id = publication.position_limit_counter_id
    with LogBuffers.map(publication.log_file_name) as log:
        meta = log.meta_data_buffer
        client.await_correlated(client.remove_publication(publication.correlation_id))
        assert meta.get_int64_volatile(128) == tail
        assert _value(client, limit_id) == tail
        assert client.poll() == [] or not client.responses_of(ON_UNAVAILABLE_IMAGE)

        _set(client, position_id, tail)
        gone = client.await_response(ON_UNAVAILABLE_IMAGE).message
        assert gone.correlation_id == publication.registration_id
        assert gone.subscription_registration_id == subscription_id
        assert gone.stream_id == 10
        assert gone.channel == "aeron:ipc"
        assert os.path.exists(publication.log_file_name)
        assert client.counters.get_counter_state(limit_id) == RECORD_ALLOCATED
        wait_until(lambda: not os.path.exists(publication.log_file_name), what="the linger")
    counters = client.counters
    assert counters.get_counter_state(limit_id) == RECORD_RECLAIMED
    assert counters.get_counter_state(limit_id - 1) == RECORD_RECLAIMED
    assert counters.get_counter_state(position_id) == RECORD_RECLAIMED


def test_should_join_a_late_subscriber_where_the_others_are(client: DriverClient) -> None:
    publication = _publish(client)
    first_id = _subscribe(client)
    first = _image(client, first_id, publication.registration_id).subscriber_position_id
    tail = _append(publication.log_file_name, *[500] * 10)
    _set(client, first, tail)
    wait_until(lambda: _value(client, publication.position_limit_counter_id) == tail + WINDOW)
    late_id = _subscribe(client, "aeron:ipc?alias=late")
    late = _image(client, late_id, publication.registration_id).subscriber_position_id
    assert _value(client, late) == tail
    assert client.counters.get_counter_label(late).endswith(f" @{tail}")


def test_should_tell_a_lagging_untethered_subscriber_its_image_is_gone_then_rejoin_it(
    shm_dir: Path,
) -> None:
    context = small_context(
        shm_dir / "aeron",
        untethered_window_limit_timeout_ns=50_000_000,
        untethered_resting_timeout_ns=100_000_000,
    )
    with MediaDriver.launch(context) as driver, DriverClient(driver.aeron_dir) as client:
        publication = _publish(client)
        tethered_id = _subscribe(client)
        tethered = _image(client, tethered_id, publication.registration_id).subscriber_position_id
        loose_id = _subscribe(client, "aeron:ipc?tether=false")
        loose = _image(client, loose_id, publication.registration_id).subscriber_position_id
        tail = _append(publication.log_file_name, *[1400] * 20)
        _set(client, tethered, tail)
        gone = client.await_response(
            ON_UNAVAILABLE_IMAGE, lambda r: r.message.subscription_registration_id == loose_id
        )
        assert gone.message.correlation_id == publication.registration_id
        wait_until(
            lambda: _value(client, publication.position_limit_counter_id) == tail + WINDOW,
            what="the resting subscriber to stop holding the publisher back",
        )

        def loose_images() -> list[ImageBuffersReady]:
            client.poll()
            return [
                r.message
                for r in client.responses_of(ON_AVAILABLE_IMAGE)
                if r.message.subscriber_registration_id == loose_id
            ]

        wait_until(lambda: len(loose_images()) == 2, what="the rested subscriber to rejoin")
        back = loose_images()[1]
        assert back.subscriber_position_id == loose
        assert _value(client, loose) == tail
        assert back.session_id == publication.session_id


@pytest.mark.parametrize("exclusive", [False, True])
def test_should_delete_the_log_of_a_publication_nobody_subscribed(
    driver: MediaDriver, client: DriverClient, exclusive: bool
) -> None:
    response = client.await_correlated(client.add_publication("aeron:ipc", 10, exclusive=exclusive))
    message = response.message
    client.await_correlated(client.remove_publication(message.correlation_id))
    wait_until(lambda: not os.path.exists(message.log_file_name), what="the log file to go")
    assert driver.conductor.ipc.publications == []
    assert dataclasses.is_dataclass(message)
