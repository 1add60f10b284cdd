"""Processes that die or go silent: the driver unblocks, cleans up and tells the others.

The driver process runs with a 1.5 s client liveness timeout and a 2 s publication unblock
timeout (:mod:`tests.system._driver`); clients keep alive every 100 ms.
"""

from __future__ import annotations

import os
import signal
import time

from aeromq.transport.client import CLOSED, Aeron, Image
from aeromq.transport.cnc import CncFile
from aeromq.transport.command import ON_CLIENT_TIMEOUT
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.driver import SystemCounter
from aeromq.transport.driver.stream_counters import (
    CLIENT_HEARTBEAT_TYPE_ID,
    PUBLISHER_LIMIT_TYPE_ID,
    PUBLISHER_POSITION_TYPE_ID,
    SUBSCRIBER_POSITION_TYPE_ID,
)
from aeromq.transport.logbuffer import Header
from aeromq.transport.testing.driver_client import DriverClient
from tests.system import _workers
from tests.system._driver import CLIENT_LIVENESS_TIMEOUT_MS, UNBLOCK_TIMEOUT_MS, DriverProcess
from tests.system._messages import PREFIX, MessageWriter
from tests.system.conftest import Workers, counter_value, wait_for

LENGTH = 100
FRAME = 160
DEADLINE_S = 30.0


def test_should_unblock_a_log_whose_writer_died_mid_claim_so_subscribers_go_on(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    subscription = observer.add_subscription("aeron:ipc", 8)
    publication = observer.add_publication("aeron:ipc", 8)  # shares the writer's log
    reader = observer.counters_reader
    unblocked_before = reader.get_counter_value(SystemCounter.UNBLOCKED_PUBLICATIONS)
    received: list[tuple[int, int]] = []

    def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        received.append((sender, seq))

    workers.start(_workers.claim_and_die, driver.aeron_dir, 8, 5, LENGTH, DEADLINE_S)
    _, claim_position = workers.expect("claimed")
    assert claim_position == 6 * FRAME
    writer = MessageWriter(LENGTH)
    for seq in range(5):  # after the claimed frame, which nobody will commit
        assert publication.offer(writer.write(seq, LENGTH, 2), 0, LENGTH) > 0
    wait_for(lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) == 5)
    assert received == [(1, seq) for seq in range(5)]

    unblocked_s = wait_for(
        lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) == 10,
        timeout_s=15,
        what="the driver to unblock the claimed frame",
    )
    assert received[5:] == [(2, seq) for seq in range(5)]  # the claimed message never shows
    # the driver unblocks the log, then counts it (as Aeron's): the frames can be read first
    wait_for(
        lambda: reader.get_counter_value(SystemCounter.UNBLOCKED_PUBLICATIONS) > unblocked_before,
        what="the unblock to be counted",
    )
    assert reader.get_counter_value(SystemCounter.UNBLOCKED_PUBLICATIONS) == unblocked_before + 1
    assert UNBLOCK_TIMEOUT_MS / 1000 - 0.2 < unblocked_s < UNBLOCK_TIMEOUT_MS / 1000 + 3
    for seq in range(5, 10):  # the stream goes on
        assert publication.offer(writer.write(seq, LENGTH, 2), 0, LENGTH) > 0
    wait_for(lambda: subscription.poll(on_fragment, 100) >= 0 and len(received) == 15)
    assert received[10:] == [(2, seq) for seq in range(5, 10)]
    assert subscription.images[0].position == 16 * FRAME


def test_should_time_out_a_silent_client_and_free_everything_it_held(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    reader = observer.counters_reader
    timeouts_before = reader.get_counter_value(SystemCounter.CLIENT_TIMEOUTS)
    resume = workers.event()
    workers.start(_workers.silent_client, driver.aeron_dir, 9, resume, DEADLINE_S)
    _, client_id, publication_id, subscription_id, counter_id = workers.expect("ready")
    log_file = os.path.join(driver.aeron_dir, "publications", f"{publication_id}.logbuffer")
    held = [
        (CLIENT_HEARTBEAT_TYPE_ID, client_id),
        (PUBLISHER_LIMIT_TYPE_ID, publication_id),
        (PUBLISHER_POSITION_TYPE_ID, publication_id),
        (SUBSCRIBER_POSITION_TYPE_ID, subscription_id),
        (1001, counter_id),
    ]
    assert all(counter_value(reader, *key) is not None for key in held)
    assert os.path.exists(log_file)

    with DriverClient(driver.aeron_dir) as listener:  # reads the broadcast, sends no command
        listener.await_response(
            ON_CLIENT_TIMEOUT,
            lambda response: response.message.client_id == client_id,
            timeout_s=CLIENT_LIVENESS_TIMEOUT_MS / 1000 + 3.0,
        )
    assert reader.get_counter_value(SystemCounter.CLIENT_TIMEOUTS) == timeouts_before + 1
    wait_for(
        lambda: all(counter_value(reader, *key) is None for key in held),
        what="its counters to be freed",
    )
    wait_for(lambda: not os.path.exists(log_file), what="its publication's log to be deleted")

    resume.set()
    _, handler_errors, call_errors, publication_closed, client_closed = workers.expect("resumed")
    # It learns of it from ON_CLIENT_TIMEOUT, or first from its heartbeat counter being freed.
    assert [name for name, _ in handler_errors] == ["ClientTimeoutError"]
    assert f"client_id={client_id}" in handler_errors[0][1]
    assert [name for name, _ in call_errors] == ["ClientTimeoutError"]
    assert "client closed: it was timed out" in call_errors[0][1]
    assert publication_closed and client_closed
    workers.join()


def test_should_give_clients_of_a_killed_driver_a_driver_timeout_error(
    driver: DriverProcess, workers: Workers
) -> None:
    workers.start(_workers.driver_timeout_watcher, driver.aeron_dir, 10, 1_000, DEADLINE_S)
    workers.expect("ready")
    with CncFile.map(driver.aeron_dir, timeout_ms=1_000) as cnc:
        # Its last heartbeat (epoch ms), read before the kill: at most the one clients time out.
        last_heartbeat_ms = cnc.driver_heartbeat_ms()
    killed_at = time.time()
    driver.kill()
    _, handler_errors, offer_result, failures, closed_at = workers.expect("timed out")

    assert len(handler_errors) == 1
    name, message = handler_errors[0]
    assert name == "DriverTimeoutError"
    assert message.startswith("the media driver's heartbeat is older than the driver timeout:")
    assert f"aeron_dir={driver.aeron_dir!r}" in message and "driver_timeout_ms=1000" in message
    # Not before the driver timeout, counted from the driver's last heartbeat (a loaded machine
    # may have starved the driver well before the kill); within it and a keepalive of the kill.
    assert closed_at * 1000 - last_heartbeat_ms > 1_000, (closed_at, last_heartbeat_ms)
    assert closed_at - killed_at < 5.0
    assert offer_result == CLOSED
    (call_name, call_message), (connect_name, connect_message) = failures
    assert call_name == connect_name == "DriverTimeoutError"
    assert call_message.startswith("client closed: the media driver timed out:")
    assert connect_message.startswith("no live media driver:")
    assert f"driver_pid={driver.pid}" in connect_message
    workers.join()


def test_should_end_the_stream_of_a_killed_publisher_once_its_subscriber_read_it_all(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    gone: list[Image] = []
    subscription = observer.add_subscription("aeron:ipc", 11, None, gone.append)
    release = workers.event()
    publisher = workers.start(
        _workers.hold_publisher, driver.aeron_dir, 11, 3, [LENGTH] * 20, False, release, DEADLINE_S
    )
    _, _, position, _, _ = workers.expect("published")
    assert position == 20 * FRAME and publisher.pid is not None
    os.kill(publisher.pid, signal.SIGKILL)
    received: list[tuple[int, int]] = []

    def on_fragment(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        seq, sender, _ = PREFIX.unpack_from(buffer, offset)
        received.append((sender, seq))

    wait_for(
        lambda: subscription.poll(on_fragment, 100) >= 0 and len(gone) == 1,
        timeout_s=CLIENT_LIVENESS_TIMEOUT_MS / 1000 + 5,
        what="the image of the dead publisher to go",
    )
    assert received == [(3, seq) for seq in range(20)]
    (image,) = gone
    assert image.is_closed and image.is_end_of_stream  # both kept from when it closed
    assert image.position == position
    assert subscription.image_count == 0
