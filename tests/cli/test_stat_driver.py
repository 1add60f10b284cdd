"""``stat --once`` against a real media driver with a real publication and subscription."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.client.publication import Publication
from aeromq.transport.client.subscription import Subscription
from aeromq.transport.driver import MediaDriver, MediaDriverContext
from aeromq.transport.driver.stream_counters import (
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
)

from ._cnc_files import run_stat

MS = 1_000_000
TERM = 64 * 1024
WINDOW = TERM // 2
STREAM_ID = 1001
MESSAGES = 300
PAYLOAD = b"m" * 100  # 132-byte frames, 160 aligned: 48,000 bytes, well past a trip gain


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.001)


@pytest.fixture
def media_driver(shm_dir: Path) -> Iterator[MediaDriver]:
    driver = MediaDriver.launch(
        MediaDriverContext(
            aeron_dir=str(shm_dir / "aeron"),
            term_buffer_length=TERM,
            ipc_term_buffer_length=TERM,
            to_driver_buffer_length=64 * 1024 + 768,
            to_clients_buffer_length=64 * 1024 + 128,
            counters_values_buffer_length=64 * 1024,
            error_buffer_length=64 * 1024,
            timer_interval_ns=10 * MS,
            conductor_idle_strategy="sleep-ms:1",
        )
    )
    try:
        yield driver
    finally:
        driver.close()


def _exchange(publication: Publication, subscription: Subscription) -> int:
    """Offer every message, polling while back-pressured; how many arrived."""
    received = [0]

    def on_fragment(*args: object) -> None:
        received[0] += 1

    deadline = time.monotonic() + 10
    sent = 0
    while received[0] < MESSAGES:
        if sent < MESSAGES and publication.offer(PAYLOAD) > 0:
            sent += 1
        elif subscription.poll(on_fragment, 100) == 0:
            assert time.monotonic() < deadline, f"stuck: sent={sent} received={received[0]}"
            time.sleep(0.0005)
    return received[0]


def test_should_show_the_positions_a_publication_and_subscription_reached(
    media_driver: MediaDriver,
) -> None:
    context = AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    with Aeron.connect(context) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", STREAM_ID)
        publication = aeron.add_publication("aeron:ipc", STREAM_ID)
        wait_for(lambda: publication.is_connected and subscription.image_count == 1, "the link")
        assert _exchange(publication, subscription) == MESSAGES
        position = publication.position
        assert position == MESSAGES * 160
        counters = aeron.counters_reader

        def value(type_id: int, registration_id: int) -> int:
            counter_id = counters.find_by_type_id_and_registration_id(type_id, registration_id)
            return counters.get_counter_value(counter_id) if counter_id >= 0 else -1

        reg, sub_reg = publication.registration_id, subscription.registration_id
        wait_for(
            lambda: (
                value(PUBLISHER_POSITION_TYPE_ID, reg) == position
                and value(PUBLISHER_LIMIT_TYPE_ID, reg) == position + WINDOW
                and value(SUBSCRIBER_POSITION_TYPE_ID, sub_reg) == position
            ),
            "the driver to sample the positions",
        )
        ids = {
            type_id: counters.find_by_type_id_and_registration_id(type_id, registration_id)
            for type_id, registration_id in (
                (PUBLISHER_POSITION_TYPE_ID, reg),
                (PUBLISHER_LIMIT_TYPE_ID, reg),
                (SUBSCRIBER_POSITION_TYPE_ID, sub_reg),
            )
        }
        result = run_stat("--dir", media_driver.aeron_dir, "--once", "--stream", str(STREAM_ID))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f", pid {os.getpid()}, heartbeat age " in lines[0]  # the driver runs here
    session = publication.session_id
    stream = f"{session} {STREAM_ID} aeron:ipc"
    expected = {
        ids[PUBLISHER_POSITION_TYPE_ID]: f"{position:>20,} - pub-pos (concurrent): {reg} {stream}",
        ids[PUBLISHER_LIMIT_TYPE_ID]: f"{position + WINDOW:>20,} - pub-lmt: {reg} {stream}",
        ids[SUBSCRIBER_POSITION_TYPE_ID]: f"{position:>20,} - sub-pos: {sub_reg} {stream} @0",
    }
    assert lines[2:] == [*(f"{key:3d}: {expected[key]}" for key in sorted(expected)), "--"]
