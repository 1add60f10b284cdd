"""A real driver against forged SETUPs from a real UDP peer (``transport.testing.hostile_peer``):
a term over the cap makes nothing, a subscription raises its own cap, one source address holds a
bounded number of images, a large log is made off the conductor's duty cycle, and a log stops
counting against the room for new ones as soon as its writer let go."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport._errors import RegistrationError
from aeromq.transport.client import Aeron, AeronContext, Subscription
from aeromq.transport.command import ErrorCode
from aeromq.transport.driver import (
    MediaDriver,
    MediaDriverContext,
    SystemCounter,
    UdpSettings,
    log_allocator,
)
from aeromq.transport.logbuffer.log_buffers import LogBuffers
from aeromq.transport.testing.hostile_peer import HostilePeer, free_udp_port
from tests.system._tmpfs import small_tmpfs
from tests.transport.driver.support import small_context, wait_until

STREAM = 10
MIB = 1 << 20
GIB = 1 << 30


@pytest.fixture
def port() -> int:
    return free_udp_port()


def _launch(shm_dir: Path, **udp: Any) -> tuple[MediaDriver, Aeron]:
    context = small_context(shm_dir / "aeron", udp=UdpSettings(**udp))
    driver = MediaDriver.launch(context)
    return driver, Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir))


@pytest.fixture
def running(shm_dir: Path) -> Iterator[tuple[MediaDriver, Aeron]]:
    driver, aeron = _launch(shm_dir, max_images_per_source=2)
    try:
        yield driver, aeron
    finally:
        aeron.close()
        driver.close()


def _sessions(subscription: Subscription) -> set[int]:
    return {image.session_id for image in subscription.images}


def _rejected(aeron: Aeron) -> int:
    return aeron.counters_reader.get_counter_value(SystemCounter.IMAGES_REJECTED)


def _image_files(driver: MediaDriver) -> list[str]:
    return os.listdir(os.path.join(driver.aeron_dir, "images"))


def test_should_make_nothing_for_a_setup_over_the_term_cap_and_count_it(
    running: tuple[MediaDriver, Aeron], port: int
) -> None:
    driver, aeron = running
    subscription = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", STREAM)
    with HostilePeer(("127.0.0.1", port)) as peer:
        # Each of the five is refused; a repeat that arrives while its first is being decided
        # is ignored, one that arrives after is asked about (and refused) again: 5 to 10.
        peer.setup_flood(STREAM, GIB, 5, rounds=2)
        # The cap itself is admitted. Its SETUP follows the flood through the same socket,
        # receiver and conductor queue, so once its image exists every refusal is counted.
        peer.setup(7, STREAM, 64 * MIB)
        wait_until(lambda: _sessions(subscription) == {7}, 10.0, "the image at the cap")
        refused = _rejected(aeron)
        assert 5 <= refused <= 10
        assert len(_image_files(driver)) == 1
        peer.setup(8, STREAM, GIB)
        wait_until(lambda: _rejected(aeron) == refused + 1, 10.0, "one more refusal counted")
        assert len(_image_files(driver)) == 1 and _sessions(subscription) == {7}


def test_should_let_a_subscription_raise_the_cap_for_its_own_channel(
    shm_dir: Path, port: int
) -> None:
    driver, aeron = _launch(shm_dir, image_max_term_length=64 * 1024)
    other_port = free_udp_port()
    try:
        raised = aeron.add_subscription(
            f"aeron:udp?endpoint=127.0.0.1:{port}|max-term-length=1m", STREAM
        )
        plain = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{other_port}", STREAM)
        with (
            HostilePeer(("127.0.0.1", port)) as to_raised,
            HostilePeer(("127.0.0.1", other_port)) as to_plain,
        ):
            to_raised.setup(1, STREAM, MIB)
            to_plain.setup(2, STREAM, MIB)
            wait_until(lambda: _sessions(raised) == {1}, 10.0, "the image under the raised cap")
            wait_until(lambda: _rejected(aeron) == 1, 10.0, "the plain channel's refusal")
            assert _sessions(plain) == set()
    finally:
        aeron.close()
        driver.close()


def test_should_bound_the_images_one_source_address_holds(
    running: tuple[MediaDriver, Aeron], port: int
) -> None:
    _, aeron = running
    subscription = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", STREAM)
    with (
        HostilePeer(("127.0.0.1", port)) as first,
        HostilePeer(("127.0.0.1", port)) as second_port,
        HostilePeer(("127.0.0.1", port), bind=("127.0.0.2", 0)) as other_host,
    ):
        first.setup(1, STREAM, 64 * 1024)
        second_port.setup(2, STREAM, 64 * 1024)
        wait_until(lambda: _sessions(subscription) == {1, 2}, 10.0, "two images of one source")
        first.setup(3, STREAM, 64 * 1024)  # the source's third: refused, whatever its port
        wait_until(lambda: _rejected(aeron) == 1, 10.0, "the third refused")
        other_host.setup(4, STREAM, 64 * 1024)
        wait_until(lambda: _sessions(subscription) == {1, 2, 4}, 10.0, "another source's image")


def test_should_make_a_large_reserved_log_off_the_conductors_duty_cycle(
    shm_dir: Path, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real_create = log_allocator.create_log

    def slow_create(*args: Any) -> LogBuffers:
        started.set()
        release.wait(30)
        return real_create(*args)

    monkeypatch.setattr(log_allocator, "create_log", slow_create)
    driver, aeron = _launch(shm_dir)  # logs allocated up front: small_context is not sparse
    try:
        subscription = aeron.add_subscription(f"aeron:udp?endpoint=127.0.0.1:{port}", STREAM)
        with HostilePeer(("127.0.0.1", port)) as peer:
            peer.setup(1, STREAM, 4 * MIB)  # a 12 MiB log: the allocator's
            assert started.wait(10), "the allocator never started the log"
            # the conductor goes on meanwhile: it answers commands and stamps its heartbeat
            counter = aeron.add_counter(1_000, label="while the log is made")
            heartbeat = aeron.cnc.driver_heartbeat_ms()
            wait_until(lambda: aeron.cnc.driver_heartbeat_ms() > heartbeat, 5.0, "a heartbeat")
            assert _sessions(subscription) == set()
            release.set()
            wait_until(lambda: _sessions(subscription) == {1}, 10.0, "the image once made")
            counter.close()
    finally:
        release.set()
        aeron.close()
        driver.close()


def test_should_stop_counting_a_log_once_its_writer_let_go_not_after_the_linger(
    tmp_path: Path,
) -> None:
    with small_tmpfs(tmp_path / "shm", 24) as shm:
        context = dataclasses.replace(
            small_context(shm / "aeron", term_buffer_sparse_file=True),
            publication_linger_timeout_ns=60_000_000_000,
        )
        with (
            MediaDriver.launch(context) as driver,
            Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir)) as aeron,
        ):
            channel = "aeron:ipc?term-length=4m"  # a 12 MiB sparse log: two do not fit
            first = aeron.add_exclusive_publication(channel, STREAM)
            with pytest.raises(RegistrationError) as refused:
                aeron.add_exclusive_publication(channel, STREAM)
            assert refused.value.code == ErrorCode.STORAGE_SPACE
            first.close()  # its log lingers a minute, but nobody writes it any more
            wait_until(lambda: _fits(aeron, channel), 10.0, "room once the writer let go")


def _fits(aeron: Aeron, channel: str) -> bool:
    try:
        aeron.add_exclusive_publication(channel, STREAM).close()
    except RegistrationError:
        return False
    return True


def test_should_accept_the_new_settings_from_the_environment(tmp_path: Path) -> None:
    context = MediaDriverContext.from_env(
        {
            "AEROMQ_IMAGE_MAX_TERM_LENGTH": "1g",
            "AEROMQ_MAX_IMAGES_PER_SOURCE": "8",
            "AEROMQ_MAX_IMAGE_BYTES_PER_SOURCE": "2g",
        },
        aeron_dir=str(tmp_path),
    )
    assert context.udp.image_max_term_length == GIB
    assert context.udp.max_images_per_source == 8
    assert context.udp.max_image_bytes_per_source == 2 * GIB
