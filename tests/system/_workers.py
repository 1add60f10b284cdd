"""Process entry points of the system tests (spawned, so importable by name).

Each worker connects its own :class:`~transport.client.Aeron` client to the driver process,
reports on the ``results`` queue (a ``("ready", ...)`` tuple once set up where a test waits for
it, then its outcome) and bounds every wait by ``deadline_s``. Publishers retry on back
pressure, yielding the CPU; subscribers poll with a large fragment limit. Errors cross the
queue as ``(type name, message)`` pairs: transport errors keep keyword values that do not pickle.
"""

from __future__ import annotations

import os
import signal
import time
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from typing import Any

from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.logbuffer import BufferClaim, FragmentAssembler
from aeromq.transport.logbuffer.handlers import FragmentHandler
from tests.system._messages import (
    PREFIX,
    MessageWriter,
    SenderDispatch,
    StreamChecker,
    message_lengths,
)

__all__ = [
    "claim_and_die",
    "connect",
    "driver_timeout_watcher",
    "hold_publisher",
    "late_subscriber",
    "silent_client",
    "slow_subscriber",
    "stalled_subscriber",
    "stream_publisher",
    "stream_subscriber",
]

MS = 1_000_000


def _backoff() -> BackoffIdleStrategy:
    """How a stream worker waits for the other side: spin and yield a little, then park (up to
    1 ms). Not sched_yield alone: on an oversubscribed machine a yield-spinning publisher and
    subscriber kept the driver process, which moves the publication limit, off the CPU (1M
    messages took over 90 s beside four busy processes, 12 s alone)."""
    return BackoffIdleStrategy(max_spins=10, max_yields=20, max_park_period_ns=1 * MS)


FRAGMENT_LIMIT = 1_000
CHANNEL = "aeron:ipc"


def connect(aeron_dir: str, **overrides: Any) -> Aeron:
    """A client with short timeouts (a dead driver is noticed within 2 s)."""
    values: dict[str, Any] = {
        "aeron_dir": aeron_dir,
        "driver_timeout_ms": 2_000,
        "keep_alive_interval_ns": 100 * MS,
        "idle_sleep_duration_ns": 1 * MS,
        "resource_linger_duration_ns": 100 * MS,
    }
    values.update(overrides)
    return Aeron.connect(AeronContext(**values))


def _wait_connected(publication: Any, deadline: float) -> bool:
    while not publication.is_connected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def stream_publisher(
    aeron_dir: str,
    stream_id: int,
    sender: int,
    count: int,
    max_length: int,
    min_length: int,
    exclusive: bool,
    mode: str,
    halfway: Event | None,
    deadline_s: float,
    results: Queue[Any],
) -> None:
    """Offer ``count`` checked messages (lengths seeded by ``sender``) by ``mode``: one
    ``offer`` at a time, one ``try_claim`` at a time (lengths up to the max payload), or 64 at
    a time by ``offer_batch``; report ``("published", sender, sent, final position or why it
    stopped, refused offers)``. With a ``halfway`` event: report ``("halfway", position)``
    after the first half and wait for the event before the second."""
    deadline = time.monotonic() + deadline_s
    with connect(aeron_dir) as aeron:
        if exclusive:
            publication: Any = aeron.add_exclusive_publication(CHANNEL, stream_id)
        else:
            publication = aeron.add_publication(CHANNEL, stream_id)
        if not _wait_connected(publication, deadline):
            results.put(("published", sender, 0, "never connected", 0))
            return
        lengths = message_lengths(sender, count, max_length, min_length)
        halves = (lengths[: count // 2], lengths[count // 2 :]) if halfway else (lengths,)
        sent, refused = 0, 0
        for half in halves:
            if sent and halfway is not None:
                results.put(("halfway", publication.position))
                halfway.wait(max(0.0, deadline - time.monotonic()))
            if mode == "offer_batch":
                done, more = _publish_batches(publication, half, sender, sent, deadline)
            else:
                done, more = _publish_one_by_one(publication, half, sender, sent, deadline, mode)
            sent, refused = sent + done, refused + more
            if done < len(half):
                break
        position = publication.position if sent == count else "deadline passed"
        results.put(("published", sender, sent, position, refused))
        while publication.position_limit < publication.position and time.monotonic() < deadline:
            time.sleep(0.001)  # the subscribers read the rest before the stream ends


def _publish_one_by_one(
    publication: Any, lengths: list[int], sender: int, first: int, deadline: float, mode: str
) -> tuple[int, int]:
    """Messages ``first``, ``first + 1``, ... of the given lengths; (sent, refusals)."""
    writer = MessageWriter(max(lengths, default=0))
    write, offer, try_claim = writer.write, publication.offer, publication.try_claim
    backoff = _backoff()
    wait, now = backoff.idle, time.monotonic
    claim = BufferClaim()
    by_claim = mode == "try_claim"
    refused = 0
    for seq, length in enumerate(lengths, first):
        scratch = write(seq, length, sender)
        while (try_claim(length, claim) if by_claim else offer(scratch, 0, length)) < 0:
            refused += 1
            if not refused & 0xFF and now() > deadline:
                return seq - first, refused
            wait(0)
        wait(1)  # sent: the next refusal starts the backoff afresh
        if by_claim:
            claim.put_bytes(scratch, 0, length)
            claim.commit()
    return len(lengths), refused


def _publish_batches(
    publication: Any, lengths: list[int], sender: int, first: int, deadline: float
) -> tuple[int, int]:
    """As :func:`_publish_one_by_one`, 64 messages per ``offer_batch``."""
    writer = MessageWriter(max(lengths, default=0))
    backoff = _backoff()
    refused = 0
    for base in range(0, len(lengths), 64):
        batch = [
            writer.message(first + base + i, n, sender)
            for i, n in enumerate(lengths[base : base + 64])
        ]
        done = 0
        while done < len(batch):
            taken = publication.offer_batch(batch, done)
            if taken > 0:
                done += taken
                backoff.idle(taken)
                continue
            refused += 1
            if not refused & 0xFF and time.monotonic() > deadline:
                return base + done, refused
            backoff.idle(0)
    return len(lengths), refused


def stream_subscriber(
    aeron_dir: str,
    stream_id: int,
    senders: list[int],
    count: int,
    max_length: int,
    min_length: int,
    deadline_s: float,
    results: Queue[Any],
) -> None:
    """Receive ``count`` messages from each sender and check them (several senders: routed by
    the sender in the prefix); report ``("received", {sender: (received, error count,
    errors)}, unknown, elapsed_s)``."""
    deadline = time.monotonic() + deadline_s
    with connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, stream_id)
        results.put(("ready", subscription.registration_id))
        checkers = {
            s: StreamChecker(message_lengths(s, count, max_length, min_length), s) for s in senders
        }
        dispatch = SenderDispatch(checkers)
        handler: FragmentHandler = checkers[senders[0]] if len(senders) == 1 else dispatch
        assembler = FragmentAssembler(handler)
        poll, wait, now = subscription.poll, _backoff().idle, time.monotonic
        total = count * len(senders)
        received = 0
        start = 0.0
        idle = 0
        while received < total:
            fragments = poll(assembler, FRAGMENT_LIMIT)
            if fragments == 0:
                idle += 1
                if not idle & 0xFF:
                    if now() > deadline:
                        break
                    received = sum(c.received for c in checkers.values()) + dispatch.unknown
                wait(0)
            else:
                wait(fragments)
                if not start:
                    start = now()
                received = sum(c.received for c in checkers.values()) + dispatch.unknown
        results.put(
            (
                "received",
                {s: (c.received, c.error_count, c.errors) for s, c in checkers.items()},
                dispatch.unknown,
                now() - start,
            )
        )


def hold_publisher(
    aeron_dir: str,
    stream_id: int,
    sender: int,
    lengths: list[int],
    exclusive: bool,
    release: Event,
    deadline_s: float,
    results: Queue[Any],
) -> None:
    """Offer one checked message per length (retrying), report ``("published", sender,
    position, registration id, session id)``, then keep the publication until ``release``."""
    deadline = time.monotonic() + deadline_s
    with connect(aeron_dir) as aeron:
        if exclusive:
            publication: Any = aeron.add_exclusive_publication(CHANNEL, stream_id)
        else:
            publication = aeron.add_publication(CHANNEL, stream_id)
        if not _wait_connected(publication, deadline):
            results.put(("published", sender, "never connected", 0, 0))
            return
        writer = MessageWriter(max(lengths, default=0))
        for seq, length in enumerate(lengths):
            while publication.offer(writer.write(seq, length, sender), 0, length) < 0:
                if time.monotonic() > deadline:
                    results.put(("published", sender, f"stuck at {seq}", 0, 0))
                    return
                time.sleep(0.0005)
        results.put(
            (
                "published",
                sender,
                publication.position,
                publication.registration_id,
                publication.session_id,
            )
        )
        release.wait(max(0.0, deadline - time.monotonic()))


def stalled_subscriber(
    aeron_dir: str, stream_id: int, deadline_s: float, results: Queue[Any]
) -> None:
    """Subscribe, report ``("ready", registration id, client id)``, and never poll: a live client
    whose subscriber position holds the publisher back until the process dies."""
    with connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, stream_id)
        results.put(("ready", subscription.registration_id, aeron.client_id))
        time.sleep(deadline_s)


def claim_and_die(
    aeron_dir: str, stream_id: int, count: int, length: int, deadline_s: float, results: Queue[Any]
) -> None:
    """On the stream's concurrent publication: offer ``count`` checked messages (sender 1),
    claim a frame for the next, report ``("claimed", claim position)`` and SIGKILL this
    process before committing it."""
    deadline = time.monotonic() + deadline_s
    aeron = connect(aeron_dir)
    publication = aeron.add_publication(CHANNEL, stream_id)
    if not _wait_connected(publication, deadline):
        results.put(("claimed", "never connected"))
        return
    writer = MessageWriter(length)
    for seq in range(count):
        while publication.offer(writer.write(seq, length, 1), 0, length) < 0:
            if time.monotonic() > deadline:
                results.put(("claimed", f"stuck at {seq}"))
                return
            time.sleep(0.0005)
    claim = BufferClaim()
    while (position := publication.try_claim(length, claim)) < 0:
        if time.monotonic() > deadline:
            results.put(("claimed", f"claim refused: {position}"))
            return
        time.sleep(0.0005)
    claim.put_bytes(writer.write(count, length, 1), 0, length)
    results.put(("claimed", position))
    results.close()
    results.join_thread()  # the report is in the pipe before the process dies
    os.kill(os.getpid(), signal.SIGKILL)


def silent_client(
    aeron_dir: str, stream_id: int, resume: Event, deadline_s: float, results: Queue[Any]
) -> None:
    """A client that stops heartbeating: its conductor runs only when invoked. It adds a
    publication, a subscription and a counter, reports ``("ready", client id, publication,
    subscription and counter registration ids)``, stops invoking until ``resume``, then runs
    one duty cycle and one more call and reports ``("resumed", errors its handler got, the
    call's error, publication closed, client closed)``."""
    errors: list[BaseException] = []
    aeron = connect(
        aeron_dir,
        use_conductor_agent_invoker=True,
        inter_service_timeout_ns=60_000 * MS,  # so the driver's timeout is what it meets
        error_handler=errors.append,
    )
    invoker = aeron.conductor_agent_invoker
    publication = aeron.add_publication(CHANNEL, stream_id)
    subscription = aeron.add_subscription(CHANNEL, stream_id)
    counter = aeron.add_counter(1001, b"silent", "silent client counter")
    results.put(
        (
            "ready",
            aeron.client_id,
            publication.registration_id,
            subscription.registration_id,
            counter.registration_id,
        )
    )
    resume.wait(deadline_s)
    invoker.invoke()
    call_errors: list[tuple[str, str]] = []
    try:
        aeron.add_subscription(CHANNEL, stream_id)
    except Exception as error:
        call_errors.append((type(error).__name__, str(error)))
    results.put(
        (
            "resumed",
            [(type(e).__name__, str(e)) for e in errors],
            call_errors,
            publication.is_closed,
            aeron.is_closed,
        )
    )
    aeron.close()


def driver_timeout_watcher(
    aeron_dir: str, stream_id: int, driver_timeout_ms: int, deadline_s: float, results: Queue[Any]
) -> None:
    """Connect with a short driver timeout, publish, report ``("ready",)``; once the driver
    is killed, report ``("timed out", handler errors, offer result, next call's error, a new
    connect's error, the wall clock time the client found itself closed)``."""
    errors: list[BaseException] = []
    aeron = connect(aeron_dir, driver_timeout_ms=driver_timeout_ms, error_handler=errors.append)
    publication = aeron.add_publication(CHANNEL, stream_id)
    results.put(("ready",))
    deadline = time.monotonic() + deadline_s
    payload = bytes(PREFIX.size)
    while not aeron.is_closed and time.monotonic() < deadline:
        publication.offer(payload)
        time.sleep(0.001)
    closed_at = time.time()
    offer_result = publication.offer(payload)
    failures: list[tuple[str, str]] = []
    try:
        aeron.add_subscription(CHANNEL, stream_id)
    except Exception as error:
        failures.append((type(error).__name__, str(error)))
    try:
        connect(aeron_dir, driver_timeout_ms=driver_timeout_ms).close()
    except Exception as error:
        failures.append((type(error).__name__, str(error)))
    aeron.close()
    results.put(
        (
            "timed out",
            [(type(e).__name__, str(e)) for e in errors],
            offer_result,
            failures,
            closed_at,
        )
    )


def slow_subscriber(
    aeron_dir: str,
    stream_id: int,
    sender: int,
    lengths: list[int],
    pause_after: int,
    resume: Event,
    deadline_s: float,
    results: Queue[Any],
) -> None:
    """Read one fragment every 2 ms until ``pause_after`` messages, report ``("paused",
    registration id, position)``, wait for ``resume``, then read the rest at full speed and
    report ``("slow received", received, error count, errors)``."""
    deadline = time.monotonic() + deadline_s
    with connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, stream_id)
        results.put(("slow ready", subscription.registration_id))
        checker = StreamChecker(lengths, sender)
        assembler = FragmentAssembler(checker)
        while checker.received < pause_after and time.monotonic() < deadline:
            subscription.poll(assembler, 1)
            time.sleep(0.002)
        results.put(("paused", subscription.registration_id, subscription.images[0].position))
        resume.wait(max(0.0, deadline - time.monotonic()))
        while checker.received < len(lengths) and time.monotonic() < deadline:
            if subscription.poll(assembler, FRAGMENT_LIMIT) == 0:
                os.sched_yield()
        results.put(("slow received", checker.received, checker.error_count, checker.errors))


def late_subscriber(
    aeron_dir: str,
    stream_id: int,
    sender: int,
    lengths: list[int],
    deadline_s: float,
    results: Queue[Any],
) -> None:
    """Join a running stream, report ``("joined", join position)``, read the stream to its
    last message and report ``("late received", first sequence, received, error count, errors,
    join position)``."""
    deadline = time.monotonic() + deadline_s
    with connect(aeron_dir) as aeron:
        subscription = aeron.add_subscription(CHANNEL, stream_id)
        checker = StreamChecker(lengths, sender, late=True)
        assembler = FragmentAssembler(checker)
        while subscription.image_count == 0 and time.monotonic() < deadline:
            time.sleep(0.0005)
        join_position = subscription.images[0].join_position if subscription.images else -1
        results.put(("joined", join_position))
        while checker.next_seq < len(lengths) and time.monotonic() < deadline:
            if subscription.poll(assembler, FRAGMENT_LIMIT) == 0:
                os.sched_yield()
        results.put(
            (
                "late received",
                checker.first_seq,
                checker.received,
                checker.error_count,
                checker.errors,
                join_position,
            )
        )
