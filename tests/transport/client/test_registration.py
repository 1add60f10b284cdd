"""Registration: each ``add_*`` against the fake driver, its ON_ERROR, timeouts, async adds,
counters, and the sharing and lingering of log buffers."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from aeromq.transport import DriverTimeoutError, RegistrationError, TransportStateError
from aeromq.transport.client import (
    Aeron,
    AeronContext,
    ConcurrentPublication,
    Counter,
    ExclusivePublication,
    Image,
    Subscription,
)
from aeromq.transport.command import (
    ADD_COUNTER,
    ADD_EXCLUSIVE_PUBLICATION,
    ADD_PUBLICATION,
    ADD_SUBSCRIPTION,
    REMOVE_COUNTER,
    REMOVE_PUBLICATION,
    REMOVE_SUBSCRIPTION,
    ErrorCode,
)
from aeromq.transport.testing.fake_driver import FakeDriver

from .conftest import MS, wait_for


def test_should_add_a_publication_with_the_drivers_log_and_limit(
    aeron: Aeron, driver: FakeDriver
) -> None:
    publication = aeron.add_publication("aeron:ipc?term-length=128k|mtu=4096", 1001)
    fake = driver.publication_for(publication.registration_id)

    assert isinstance(publication, ConcurrentPublication)
    assert publication.channel == "aeron:ipc?term-length=128k|mtu=4096"
    assert (publication.stream_id, publication.session_id) == (1001, fake.session_id)
    assert publication.term_buffer_length == 128 * 1024
    assert publication.max_payload_length == 4096 - 32
    assert publication.max_message_length == 128 * 1024 // 8
    assert publication.position_limit_id == fake.limit_counter_id
    assert publication.initial_term_id == fake.log_buffers.metadata.initial_term_id
    assert publication.log_buffers.path == fake.path
    assert not publication.is_connected


def test_should_add_an_exclusive_publication_with_a_log_of_its_own(
    aeron: Aeron, driver: FakeDriver
) -> None:
    first = aeron.add_exclusive_publication("aeron:ipc", 7)
    second = aeron.add_exclusive_publication("aeron:ipc", 7)

    assert isinstance(first, ExclusivePublication)
    assert first.original_registration_id == first.registration_id
    assert first.log_buffers.path != second.log_buffers.path
    assert [t for t in driver.command_types() if t == ADD_EXCLUSIVE_PUBLICATION] == [
        ADD_EXCLUSIVE_PUBLICATION
    ] * 2


def test_should_map_a_shared_log_once_for_publications_of_one_stream(aeron: Aeron) -> None:
    first = aeron.add_publication("aeron:ipc", 9)
    second = aeron.add_publication("aeron:ipc", 9)

    assert first.registration_id != second.registration_id
    assert first.original_registration_id == second.original_registration_id
    assert first.log_buffers is second.log_buffers
    assert aeron.conductor.log_buffers.mapped_count == 1


def test_should_share_the_log_between_a_publication_and_an_image_of_it(aeron: Aeron) -> None:
    publication = aeron.add_publication("aeron:ipc", 9)
    subscription = aeron.add_subscription("aeron:ipc", 9)
    wait_for(lambda: subscription.image_count == 1, what="the image")

    image = subscription.images[0]
    assert image.correlation_id == publication.original_registration_id
    assert image.log_buffers is publication.log_buffers
    assert image.session_id == publication.session_id
    assert image.source_identity == "aeron:ipc"


def test_should_linger_a_released_log_and_then_unmap_it(aeron: Aeron) -> None:
    publication = aeron.add_publication("aeron:ipc", 9)
    registry = aeron.conductor.log_buffers
    log = publication.log_buffers

    publication.close()
    assert publication.is_closed
    assert registry.lingering_count == 1
    assert log.term_buffers[0].capacity > 0  # still mapped during the linger
    wait_for(lambda: registry.lingering_count == 0, what="the linger to end")
    assert log.term_buffers[0].capacity == 0


@pytest.mark.parametrize(
    ("command", "add"),
    [
        (ADD_PUBLICATION, lambda a: a.add_publication("aeron:ipc", 1)),
        (ADD_EXCLUSIVE_PUBLICATION, lambda a: a.add_exclusive_publication("aeron:ipc", 1)),
        (ADD_SUBSCRIPTION, lambda a: a.add_subscription("aeron:ipc", 1)),
        (ADD_COUNTER, lambda a: a.add_counter(1001, b"k", "label")),
    ],
)
def test_should_raise_the_drivers_error_code_and_text(
    aeron: Aeron, driver: FakeDriver, command: int, add: object
) -> None:
    driver.fail_next(command, ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE, "no room at the inn")
    with pytest.raises(RegistrationError, match="no room at the inn") as info:
        add(aeron)  # type: ignore[operator]
    assert info.value.code == ErrorCode.RESOURCE_TEMPORARILY_UNAVAILABLE
    assert info.value.error_code == "RESOURCE_TEMPORARILY_UNAVAILABLE"
    assert not info.value.retriable


def test_should_refuse_a_bad_channel_with_the_drivers_invalid_channel_error(aeron: Aeron) -> None:
    with pytest.raises(RegistrationError, match="invalid-channel") as info:
        aeron.add_publication("invalid-channel", 1)
    assert info.value.code == ErrorCode.INVALID_CHANNEL


def test_should_forget_a_subscription_the_driver_refused(aeron: Aeron, driver: FakeDriver) -> None:
    driver.fail_next(ADD_SUBSCRIPTION, ErrorCode.GENERIC_ERROR, "nope")
    with pytest.raises(RegistrationError):
        aeron.add_subscription("aeron:ipc", 1)
    aeron.add_publication("aeron:ipc", 1)  # no image is offered to the dead subscription
    assert aeron.add_subscription("aeron:ipc", 1).registration_id > 0


def test_should_time_out_a_command_the_driver_never_answers(shm_dir: Path) -> None:
    fake = FakeDriver(shm_dir / "mute", delete_dir_on_close=False)  # never started: never reads
    try:
        ctx = AeronContext(aeron_dir=str(fake.aeron_dir), driver_timeout_ms=300)
        with Aeron.connect(ctx) as aeron:
            started = time.monotonic()
            with pytest.raises(DriverTimeoutError, match="no response") as info:
                aeron.add_publication("aeron:ipc", 1)
            assert info.value.command == "ADD_PUBLICATION"
            assert 0.25 < time.monotonic() - started < 3
    finally:
        fake.close()


def test_should_add_asynchronously_and_hand_over_when_ready(aeron: Aeron) -> None:
    publication_id = aeron.async_add_publication("aeron:ipc", 3)
    exclusive_id = aeron.async_add_exclusive_publication("aeron:ipc", 3)
    subscription_id = aeron.async_add_subscription("aeron:ipc", 3)
    found: dict[str, object] = {}

    def ready() -> bool:
        found["p"] = found.get("p") or aeron.get_publication(publication_id)
        found["e"] = found.get("e") or aeron.get_exclusive_publication(exclusive_id)
        found["s"] = found.get("s") or aeron.get_subscription(subscription_id)
        return all(found.get(k) for k in "pes")

    wait_for(ready, what="async adds")
    assert isinstance(found["p"], ConcurrentPublication)
    assert isinstance(found["e"], ExclusivePublication)
    assert isinstance(found["s"], Subscription)
    assert found["p"].channel == "aeron:ipc"  # type: ignore[union-attr]


def test_should_raise_an_async_add_the_driver_refused_on_get(
    aeron: Aeron, driver: FakeDriver
) -> None:
    driver.fail_next(ADD_PUBLICATION, ErrorCode.INVALID_CHANNEL, "bad one")
    registration_id = aeron.async_add_publication("aeron:ipc", 3)
    deadline = time.monotonic() + 5
    with pytest.raises(RegistrationError, match="bad one"):
        while time.monotonic() < deadline:
            assert aeron.get_publication(registration_id) is None
            time.sleep(0.001)


def test_should_add_a_counter_and_remove_it_on_close(aeron: Aeron, driver: FakeDriver) -> None:
    counter = aeron.add_counter(1001, b"\x01\x02", "my counter")
    assert isinstance(counter, Counter)
    assert aeron.counters_reader.get_counter_label(counter.id) == "my counter"
    assert aeron.counters_reader.get_counter_type_id(counter.id) == 1001
    assert aeron.counters_reader.get_counter_key(counter.id)[:2] == b"\x01\x02"
    assert counter.label == "my counter"

    counter.set_ordered(41)
    assert counter.increment() == 41
    assert driver.counter_value(counter.id) == 42

    counter.close()
    counter.close()
    assert counter.is_closed
    wait_for(lambda: REMOVE_COUNTER in driver.command_types(), what="REMOVE_COUNTER")
    removes = [c for t, c in driver.commands if t == REMOVE_COUNTER]
    assert [c.registration_id for c in removes] == [counter.registration_id]


def test_should_refuse_an_over_long_counter_key_or_label(aeron: Aeron) -> None:
    from aeromq.transport import ConfigurationError

    with pytest.raises(ConfigurationError, match="key too long"):
        aeron.add_counter(1, b"k" * 113, "x")
    with pytest.raises(ConfigurationError, match="label too long"):
        aeron.add_counter(1, b"", "x" * 381)


def test_should_remove_publications_and_subscriptions_on_close(
    aeron: Aeron, driver: FakeDriver
) -> None:
    publication = aeron.add_publication("aeron:ipc", 3)
    subscription = aeron.add_subscription("aeron:ipc", 3)
    publication.close()
    subscription.close()
    subscription.close()
    assert publication.is_closed and subscription.is_closed
    wait_for(
        lambda: {REMOVE_PUBLICATION, REMOVE_SUBSCRIPTION} <= set(driver.command_types()),
        what="the removes",
    )
    removes = {t: c.registration_id for t, c in driver.commands if t in (2, 5)}
    assert removes == {
        REMOVE_PUBLICATION: publication.registration_id,
        REMOVE_SUBSCRIPTION: subscription.registration_id,
    }


def test_should_call_image_handlers_on_the_conductor_and_refuse_reentrant_calls(
    aeron: Aeron, driver: FakeDriver, errors: list[BaseException]
) -> None:
    available: list[Image] = []
    unavailable: list[Image] = []

    def on_available(image: Image) -> None:
        available.append(image)
        aeron.add_publication("aeron:ipc", 99)  # not allowed from a callback

    subscription = aeron.add_subscription("aeron:ipc", 4, on_available, unavailable.append)
    publication = aeron.add_publication("aeron:ipc", 4)
    wait_for(lambda: subscription.image_count == 1, what="the image")
    assert available == list(subscription.images)
    assert any(isinstance(e, TransportStateError) and "reentrant" in str(e) for e in errors)

    driver.make_image_unavailable(publication.original_registration_id)
    wait_for(lambda: subscription.image_count == 0, what="the image to go")
    assert unavailable == available
    assert unavailable[0].is_closed


def test_should_close_everything_with_the_client(aeron: Aeron) -> None:
    publication = aeron.add_publication("aeron:ipc", 5)
    exclusive = aeron.add_exclusive_publication("aeron:ipc", 5)
    subscription = aeron.add_subscription("aeron:ipc", 5)
    counter = aeron.add_counter(1001, b"", "c")
    wait_for(lambda: subscription.image_count == 2, what="two images")
    images = subscription.images

    aeron.close()

    assert publication.is_closed and exclusive.is_closed
    assert subscription.is_closed and counter.is_closed
    assert all(image.is_closed for image in images)
    assert publication.offer(b"x") == -4
    assert subscription.poll(lambda *a: None, 10) == 0
    assert aeron.conductor.log_buffers.mapped_count == 0
    assert aeron.conductor.log_buffers.lingering_count == 0


def test_should_give_unique_correlation_ids(aeron: Aeron) -> None:
    ids = {aeron.next_correlation_id() for _ in range(100)}
    assert len(ids) == 100


def test_should_use_the_contexts_image_handlers_by_default(driver: FakeDriver) -> None:
    seen: list[Image] = []
    ctx = AeronContext(
        aeron_dir=str(driver.aeron_dir),
        available_image_handler=seen.append,
        idle_sleep_duration_ns=1 * MS,
    )
    with Aeron.connect(ctx) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", 6)
        aeron.add_publication("aeron:ipc", 6)
        wait_for(lambda: len(seen) == 1, what="the default handler")
        assert seen[0].subscription is subscription
