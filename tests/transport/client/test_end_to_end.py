"""The client against the real media driver (``aeromq.transport.driver``): in one process, and with
the driver, publishers and subscribers in separate processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport import DriverTimeoutError
from aeromq.transport.client import BACK_PRESSURED, CLOSED, Aeron, AeronContext
from aeromq.transport.driver import MediaDriver, MediaDriverContext

from . import workers
from .conftest import MS, wait_for

TERM = 64 * 1024
MTU = 1408


def driver_context(aeron_dir: Path) -> MediaDriverContext:
    return MediaDriverContext(
        aeron_dir=str(aeron_dir),
        term_buffer_length=TERM,
        ipc_term_buffer_length=TERM,
        to_driver_buffer_length=64 * 1024 + 768,
        to_clients_buffer_length=64 * 1024 + 128,
        counters_values_buffer_length=64 * 1024,
        error_buffer_length=64 * 1024,
        timer_interval_ns=10 * MS,
        publication_linger_timeout_ns=50 * MS,
        counter_free_to_reuse_timeout_ns=0,
        conductor_idle_strategy="sleep-ms:1",
    )


@pytest.fixture
def media_driver(shm_dir: Path) -> Iterator[MediaDriver]:
    driver = MediaDriver.launch(driver_context(shm_dir / "aeron"))
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def client(media_driver: MediaDriver, errors: list[BaseException]) -> Iterator[Aeron]:
    ctx = AeronContext(
        aeron_dir=media_driver.aeron_dir,
        error_handler=errors.append,
        idle_sleep_duration_ns=1 * MS,
    )
    with Aeron.connect(ctx) as aeron:
        yield aeron


def test_should_move_messages_of_random_sizes_through_term_rotations_in_one_process(
    client: Aeron, errors: list[BaseException]
) -> None:
    subscription = client.add_subscription("aeron:ipc", 10)
    publication = client.add_exclusive_publication("aeron:ipc", 10)
    wait_for(lambda: publication.is_connected and subscription.image_count == 1, what="link")
    checker = workers.Checker()
    assembler = workers.FragmentAssembler(checker)
    lengths = workers.sizes(7, 1500, 2 * MTU)
    for sequence, length in enumerate(lengths):
        payload = workers.message(0, sequence, length)
        deadline = time.monotonic() + 10
        while publication.offer(payload) < 0:
            subscription.poll(assembler, 64)
            assert time.monotonic() < deadline, f"stuck at {sequence}"
    wait_for(lambda: subscription.poll(assembler, 256) >= 0 and checker.count == 1500, what="all")
    assert checker.errors == [] and errors == []
    assert publication.position > 10 * TERM  # many rotations


def test_should_back_pressure_a_publisher_ahead_of_its_subscriber(client: Aeron) -> None:
    subscription = client.add_subscription("aeron:ipc", 11)
    publication = client.add_publication("aeron:ipc", 11)
    wait_for(lambda: publication.is_connected, what="the connection")
    wait_for(lambda: publication.position_limit > 0, what="a limit")
    results = [publication.offer(b"x" * 1000) for _ in range(40)]
    assert BACK_PRESSURED in results
    assert publication.position_limit == TERM // 2
    wait_for(
        lambda: subscription.poll(lambda *a: None, 100) >= 0 and publication.offer(b"y") > 0,
        what="the limit to move",
    )


def test_should_end_the_stream_when_the_publication_closes(client: Aeron) -> None:
    subscription = client.add_subscription("aeron:ipc", 12)
    publication = client.add_publication("aeron:ipc", 12)
    wait_for(lambda: subscription.image_count == 1 and publication.is_connected, what="link")
    image = subscription.images[0]
    publication.offer(b"bye")
    publication.close()
    wait_for(
        lambda: subscription.poll(lambda *a: None, 10) >= 0 and image.is_end_of_stream,
        what="end of stream",
    )
    wait_for(lambda: subscription.image_count == 0, what="the image to go")


def _spawn(target: Any, *args: Any) -> multiprocessing.process.BaseProcess:
    process = multiprocessing.get_context("spawn").Process(target=target, args=args, daemon=True)
    process.start()
    return process


def _results(queue: Any, count: int, timeout_s: float = 60.0) -> list[tuple[Any, ...]]:
    got = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"only {got} of {count} results"
        got.append(queue.get(timeout=remaining))
    return got


def test_should_carry_messages_between_publisher_and_subscriber_processes(
    media_driver: MediaDriver,
) -> None:
    queue = multiprocessing.get_context("spawn").Queue()
    count = 4000
    subscriber = _spawn(workers.subscribe, media_driver.aeron_dir, "aeron:ipc", 20, count, queue)
    publisher = None
    try:
        assert _results(queue, 1)[0][:2] == ("subscriber", "ready")
        publisher = _spawn(
            workers.publish, media_driver.aeron_dir, "aeron:ipc", 20, 1, count, 2 * MTU, True, queue
        )
        results = {r[0]: r for r in _results(queue, 2)}
        assert isinstance(results["publisher"][2], int), results
        _, received, problems, per_sender = results["subscriber"]
        assert (received, problems, per_sender) == (count, [], {1: count})
    finally:
        for process in (subscriber, publisher):
            if process is not None:
                process.join(20)
                if process.is_alive():
                    process.kill()


def test_should_merge_concurrent_publications_from_several_processes(
    media_driver: MediaDriver, errors: list[BaseException]
) -> None:
    queue = multiprocessing.get_context("spawn").Queue()
    count = 1500
    ctx = AeronContext(aeron_dir=media_driver.aeron_dir, error_handler=errors.append)
    with Aeron.connect(ctx) as aeron:
        subscription = aeron.add_subscription("aeron:ipc", 21)
        publishers = [
            _spawn(
                workers.publish,
                media_driver.aeron_dir,
                "aeron:ipc",
                21,
                sender,
                count,
                600,
                False,
                queue,
            )
            for sender in (1, 2)
        ]
        try:
            checker = workers.Checker()
            assembler = workers.FragmentAssembler(checker)
            wait_for(
                lambda: subscription.poll(assembler, 256) >= 0 and checker.count == 2 * count,
                timeout_s=60,
                what="every message of both publishers",
            )
            assert checker.errors == []
            assert checker.next_sequence == {1: count, 2: count}
            assert subscription.image_count == 1  # one shared log, one session
            assert [r[0] for r in _results(queue, 2)] == ["publisher", "publisher"]
        finally:
            for process in publishers:
                process.join(20)
                if process.is_alive():
                    process.kill()
    assert errors == []


def test_should_report_a_killed_driver_as_a_driver_timeout(
    shm_dir: Path, errors: list[BaseException]
) -> None:
    aeron_dir = shm_dir / "doomed"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "aeromq",
            "driver",
            "--dir",
            str(aeron_dir),
            "--ipc-term-length",
            "64k",
            "--idle-strategy",
            "sleep-ms:1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("media driver ready")
        ctx = AeronContext(
            aeron_dir=str(aeron_dir),
            error_handler=errors.append,
            driver_timeout_ms=500,
            keep_alive_interval_ns=20 * MS,
            idle_sleep_duration_ns=1 * MS,
        )
        with Aeron.connect(ctx) as aeron:
            publication = aeron.add_publication("aeron:ipc", 30)
            process.send_signal(signal.SIGKILL)
            process.wait(10)
            wait_for(
                lambda: aeron.is_closed and len(errors) > 0,
                timeout_s=10,
                what="the dead driver to be noticed",
            )
            assert len(errors) == 1 and isinstance(errors[0], DriverTimeoutError)
            assert errors[0].aeron_dir == str(aeron_dir)  # type: ignore[attr-defined]
            assert publication.offer(b"x") == CLOSED
            with pytest.raises(DriverTimeoutError):
                aeron.add_subscription("aeron:ipc", 30)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
