"""Flow control across processes: the slowest subscription holds the publisher, a dead one not.

The publisher runs in the test's process (so it sees every offer result); the driver and the
subscribers run in their own. pub-lmt is the slowest sub-pos plus the term window (half the
64 KiB term), moved in steps of at least the trip gain (an eighth of the window).
"""

from __future__ import annotations

import os
import signal
import time

from aeromq.transport.client import ADMIN_ACTION, BACK_PRESSURED, Aeron
from aeromq.transport.client.heartbeat_timestamp import (
    HEARTBEAT_TYPE_ID,
    find_counter_id_by_registration_id,
)
from aeromq.transport.client.publication import Publication
from aeromq.transport.driver import SystemCounter
from aeromq.transport.driver.stream_counters import SUBSCRIBER_POSITION_TYPE_ID
from tests.system import _workers
from tests.system._driver import CLIENT_LIVENESS_TIMEOUT_MS, TERM_LENGTH, DriverProcess
from tests.system._messages import MessageWriter, message_lengths
from tests.system.conftest import Workers, counter_value, wait_for

WINDOW = TERM_LENGTH // 2
TRIP_GAIN = WINDOW // 8
LENGTH = 1000
FRAME = 1056  # 1000 + 32 bytes of header, aligned to 32
FRAMES_PER_TERM = TERM_LENGTH // FRAME  # and padding to the end of the term
DEADLINE_S = 60.0


def _position_after(messages: int) -> int:
    return messages // FRAMES_PER_TERM * TERM_LENGTH + messages % FRAMES_PER_TERM * FRAME


def _offer_until_held(
    publication: Publication, writer: MessageWriter, first: int, count: int, hold_s: float
) -> tuple[int, list[int]]:
    """Offer messages ``first``, ``first + 1``, ... until all ``count`` went or the offers were
    refused for ``hold_s`` in a row (ADMIN_ACTION, a rotation, is no refusal); return the next
    to send and every refusal code."""
    refusals: list[int] = []
    seq = first
    held_since = None
    deadline = time.monotonic() + DEADLINE_S
    while seq < count and time.monotonic() < deadline:
        result = publication.offer(writer.write(seq, LENGTH, 5), 0, LENGTH)
        if result > 0:
            seq += 1
            held_since = None
            continue
        refusals.append(result)
        if result == ADMIN_ACTION:  # the log rotated: try again at once
            continue
        now = time.monotonic()
        if held_since is None:
            held_since = now
        elif now - held_since > hold_s:
            break
        time.sleep(0.0002)
    return seq, refusals


def test_should_hold_the_publisher_at_the_slow_subscription_plus_the_term_window(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    count = 200
    pause_after = 40
    lengths = message_lengths(5, count, LENGTH, LENGTH)
    resume = workers.event()
    workers.start(
        _workers.stream_subscriber, driver.aeron_dir, 3, [5], count, LENGTH, LENGTH, DEADLINE_S
    )
    (_, fast_id) = workers.expect("ready")
    workers.start(
        _workers.slow_subscriber, driver.aeron_dir, 3, 5, lengths, pause_after, resume, DEADLINE_S
    )
    workers.expect("slow ready")
    publication = observer.add_publication("aeron:ipc", 3)
    reader = observer.counters_reader
    wait_for(lambda: publication.is_connected, what="the subscribers")
    writer = MessageWriter(LENGTH)

    sent, refusals = _offer_until_held(publication, writer, 0, count, hold_s=0.3)
    _, slow_id, paused_position = workers.expect("paused")
    sent, more = _offer_until_held(publication, writer, sent, count, hold_s=0.3)
    refusals += more  # held now, whatever the slow one's pace was before it paused

    position, limit = publication.position, publication.position_limit
    slow_position = counter_value(reader, SUBSCRIBER_POSITION_TYPE_ID, slow_id)
    assert paused_position == slow_position == _position_after(pause_after)
    assert refusals[-1] == BACK_PRESSURED and set(refusals) <= {BACK_PRESSURED, ADMIN_ACTION}
    assert slow_position + WINDOW - TRIP_GAIN <= limit <= slow_position + WINDOW
    assert limit <= position < limit + FRAME
    assert position == _position_after(sent)
    assert sent < count
    wait_for(
        lambda: counter_value(reader, SUBSCRIBER_POSITION_TYPE_ID, fast_id) == position,
        what="the fast subscriber to read all that was sent",
    )
    assert publication.position_limit == limit  # the fast one does not move it

    resume.set()
    sent, refusals = _offer_until_held(publication, writer, sent, count, hold_s=5.0)
    assert sent == count, refusals[-5:]
    assert workers.expect("received")[1] == {5: (count, 0, [])}
    assert workers.expect("slow received")[1:] == (count, 0, [])
    workers.join()


def test_should_stop_holding_the_publisher_once_a_killed_subscriber_times_out(
    driver: DriverProcess, workers: Workers, observer: Aeron
) -> None:
    count = 100
    workers.start(
        _workers.stream_subscriber, driver.aeron_dir, 4, [5], count, LENGTH, LENGTH, DEADLINE_S
    )
    workers.expect("ready")
    stalled = workers.start(_workers.stalled_subscriber, driver.aeron_dir, 4, DEADLINE_S)
    _, _, stalled_client_id = workers.expect("ready")
    publication = observer.add_publication("aeron:ipc", 4)
    wait_for(lambda: publication.is_connected, what="the subscribers")
    writer = MessageWriter(LENGTH)
    reader = observer.counters_reader
    timeouts_before = reader.get_counter_value(SystemCounter.CLIENT_TIMEOUTS)

    # Held for longer than the liveness timeout: a live subscriber that does not read holds on.
    hold_s = 2 * CLIENT_LIVENESS_TIMEOUT_MS / 1000
    sent, refusals = _offer_until_held(publication, writer, 0, count, hold_s=hold_s)
    assert refusals[-1] == BACK_PRESSURED and set(refusals) <= {BACK_PRESSURED, ADMIN_ACTION}
    assert publication.position_limit == WINDOW  # the stalled one never moved from 0
    assert sent == -(-WINDOW // FRAME)

    assert stalled.pid is not None
    heartbeat_id = find_counter_id_by_registration_id(reader, HEARTBEAT_TYPE_ID, stalled_client_id)
    assert heartbeat_id >= 0
    # Its last keepalive (epoch ms), read before the kill: at most the one the driver times out.
    last_heartbeat_ms = reader.get_counter_value(heartbeat_id)
    os.kill(stalled.pid, signal.SIGKILL)
    killed_at = time.monotonic()
    released_s = wait_for(
        lambda: publication.offer(writer.write(sent, LENGTH, 5), 0, LENGTH) > 0,
        timeout_s=10,
        what="the dead subscriber to be timed out",
    )
    silent_ms = time.time_ns() // 1_000_000 - last_heartbeat_ms
    sent += 1
    sent, refusals = _offer_until_held(publication, writer, sent, count, hold_s=5.0)
    assert sent == count, refusals[-5:]
    assert workers.expect("received")[1] == {5: (count, 0, [])}
    assert reader.get_counter_value(SystemCounter.CLIENT_TIMEOUTS) == timeouts_before + 1
    # Released by the liveness timeout: not before it, counted from the dead client's last
    # keepalive (which a loaded machine may have delayed well before the kill), not long after.
    assert silent_ms > CLIENT_LIVENESS_TIMEOUT_MS, (silent_ms, released_s)
    assert released_s < 5.0, released_s
    assert time.monotonic() - killed_at < 10
    workers.join()
