"""The producer, consumer and relay of one latency run, whatever system carries the messages:
the steps every system's processes share, and how they talk to the suite.

A run (the suite starts each role in a process of its own, the consumer first):

1. the consumer connects, subscribes and says ``("ready",)``;
2. the producer connects and sends warm-up messages (:func:`~bench._schedule.warm_up_body`)
   every 5 ms until the consumer has had :data:`~bench._schedule.PRIMED_AFTER` in a row (it
   sets ``primed``) and at least :data:`MIN_WARM_UPS` went; a producer alone has ``primed``
   set by the suite;
3. the producer picks ``t0`` 20 ms ahead, says ``("started", t0_ns)`` (the suite starts
   reading every process's CPU), sends the schedule (:class:`~bench._schedule.Pacer`), stores
   how many it sent in ``sent_total`` and says ``("finished",)``;
4. the consumer, once it has every message sent, says ``("done",)`` (the suite stops reading
   CPU and sets ``finish``);
5. on ``finish``, each builds its histograms (after the CPU window: it costs) and reports
   ``("sent", {...})`` or ``("consumed", {...})``, then closes its client.

Each system's roles (:mod:`bench._latency_systems`) give these steps a ``send`` and a
``fetch``; the loops here are written once for blocking clients and once for asyncio ones
(nats-py), the steps around them shared.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Literal, TypeAlias, TypedDict, TypeVar

from bench._latency_stats import encoded
from bench._schedule import Pacer, Plan, Receipts, fine_timer_slack, warm_up_body

if TYPE_CHECKING:
    from ctypes import c_longlong
    from multiprocessing.queues import Queue
    from multiprocessing.synchronize import Event

__all__ = [
    "MIN_WARM_UPS",
    "Consumed",
    "ConsumerRun",
    "LatencyReport",
    "Link",
    "ProducerRun",
    "Sent",
    "consume",
    "consume_async",
    "produce",
    "produce_async",
    "relay",
]

_M = TypeVar("_M")

MIN_WARM_UPS = 32
_WARM_UP_INTERVAL_S = 0.005
_WARM_UP_TIMEOUT_S = 60.0
_START_AHEAD_NS = 20_000_000
_FINISH_TIMEOUT_S = 120.0
_CONSUMER_GRACE_S = 30.0
"""How long past the producer's last chance (``give_up_s``) a consumer waits for messages."""
DUMP_ENV = "AEROMQ_BENCH_LATENCY_DUMP"
"""A directory: each role of a run also writes its every message's figures there, one JSON
file a role and process (:func:`dump`), to find when a run's slow messages came."""


def dump(role: str, columns: dict[str, Sequence[int]]) -> None:
    """With :data:`DUMP_ENV` set, write ``columns`` (equal-length lists of integers, index by
    index one message's) as ``ROLE-PID.json`` in that directory; else nothing."""
    folder = os.environ.get(DUMP_ENV)
    if folder:
        path = os.path.join(folder, f"{role}-{os.getpid()}.json")
        with open(path, "w") as out:
            json.dump({name: list(values) for name, values in columns.items()}, out)


class Sent(TypedDict):
    """The producer's last report, ``("sent", {...})``: how many it sent, whether it gave up or
    fell behind the schedule, its achieved rate, and the encoded histograms
    (:func:`~bench._latency_stats.encoded`) of its send calls' durations and its lags."""

    sent: int
    gave_up: bool
    fell_behind: bool
    achieved_msgs_per_s: float
    send: bytes
    lag: bytes


class Consumed(TypedDict):
    """The consumer's last report, ``("consumed", {...})``: the distinct messages and the
    duplicates it received, when the last one came, and the encoded histogram of the latencies
    of those due after the warm-up."""

    received: int
    duplicates: int
    last_ns: int
    latency: bytes


LatencyReport: TypeAlias = (
    tuple[Literal["ready", "finished", "done"]]
    | tuple[Literal["started"], int]
    | tuple[Literal["sent"], Sent]
    | tuple[Literal["consumed"], Consumed]
)
"""A report a role puts on ``Link.out``: its kind, then its figures (see the module docstring)."""


@dataclass(frozen=True)
class Link:
    """What the suite and a run's roles share (multiprocessing objects, handed over at spawn):
    ``out`` carries the roles' reports, ``primed`` and ``finish`` are events, ``sent_total``
    a shared 64-bit integer (-1 until the producer has sent its last message)."""

    out: Queue[LatencyReport]
    primed: Event
    finish: Event
    sent_total: c_longlong


class ProducerRun:
    """The producer's steps around its send loop (see the module docstring).

    Caller: a system's producer role. Affects: ``link`` (reports, ``sent_total``)."""

    def __init__(self, plan: Plan, link: Link) -> None:
        self.plan = plan
        self.link = link
        fine_timer_slack()

    def warm_ups(self) -> Iterator[bytes]:
        """Warm-up bodies, every 5 ms, until the consumer is primed; raises ``TimeoutError``
        when it is not within a minute."""
        deadline = time.monotonic() + _WARM_UP_TIMEOUT_S
        index = 0
        while index < MIN_WARM_UPS or not self.link.primed.is_set():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the consumer had none of {index} warm-up messages in a row")
            yield warm_up_body(index)
            index += 1
            time.sleep(_WARM_UP_INTERVAL_S)

    def start(self) -> Pacer:
        """The schedule, starting 20 ms from now (the suite told)."""
        t0_ns = time.monotonic_ns() + _START_AHEAD_NS
        self.link.out.put(("started", t0_ns))
        return Pacer(self.plan, t0_ns)

    def end(self, pacer: Pacer) -> None:
        """Tell how many went; on ``finish``, report the send durations and lags."""
        self.link.sent_total.value = pacer.sequence
        self.link.out.put(("finished",))
        self.link.finish.wait(_FINISH_TIMEOUT_S)
        skip = self.plan.warm_up_count
        dump(
            "producer",
            {"send_ns": pacer.durations_ns[skip:], "lag_ns": pacer.lags_ns[skip:]},
        )
        self.link.out.put(
            (
                "sent",
                Sent(
                    sent=pacer.sequence,
                    gave_up=pacer.gave_up,
                    fell_behind=pacer.fell_behind(),
                    achieved_msgs_per_s=pacer.achieved_msgs_per_s(),
                    send=encoded(pacer.durations_ns[skip:]),
                    lag=encoded(pacer.lags_ns[skip:]),
                ),
            )
        )


class ConsumerRun:
    """The consumer's steps around its fetch loop (see the module docstring).

    Caller: a system's consumer role. Affects: ``link`` (reports, ``primed``)."""

    def __init__(self, plan: Plan, link: Link) -> None:
        self.plan = plan
        self.link = link
        self.receipts = Receipts(plan.count)
        self._deadline = time.monotonic() + _WARM_UP_TIMEOUT_S + plan.give_up_s
        self._deadline += _CONSUMER_GRACE_S
        link.out.put(("ready",))

    def more(self) -> bool:
        """Whether to fetch again: not every message sent has come, and there is time."""
        if self.receipts.complete(self.link.sent_total.value):
            return False
        return time.monotonic() < self._deadline

    def take(self, now_ns: int, bodies: list[bytes]) -> None:
        """The bodies one fetch returned at ``now_ns``."""
        self.receipts.take(bodies, now_ns)
        if self.receipts.primed and not self.link.primed.is_set():
            self.link.primed.set()

    def end(self) -> None:
        """Say done; on ``finish``, report the latencies of the messages due after warm-up."""
        self.link.out.put(("done",))
        self.link.finish.wait(_FINISH_TIMEOUT_S)
        receipts = self.receipts
        dump("consumer", {"sequence": receipts.sequences, "latency_ns": receipts.latencies_ns})
        self.link.out.put(
            (
                "consumed",
                Consumed(
                    received=receipts.distinct,
                    duplicates=receipts.duplicates,
                    last_ns=receipts.last_ns,
                    latency=encoded(receipts.measured(self.plan.warm_up_count)),
                ),
            )
        )


def produce(
    plan: Plan, link: Link, send: Callable[[_M], object], wrap: Callable[[bytes], _M]
) -> None:
    """A blocking producer's run: ``send(wrap(body))`` one message at a time, the send call
    alone timed (``wrap`` makes the client's message of a body)."""
    run = ProducerRun(plan, link)
    for warm_up in run.warm_ups():
        send(wrap(warm_up))
    pacer = run.start()
    clock = time.monotonic_ns
    while (body := pacer.next()) is not None:
        message = wrap(body)
        started_ns = clock()
        send(message)
        pacer.sent(started_ns, clock())
    run.end(pacer)


async def produce_async(plan: Plan, link: Link, send: Callable[[bytes], Awaitable[object]]) -> None:
    """:func:`produce` for an asyncio client sending bodies as they are: each ``await
    send(body)`` done before the next (the waits for a due time block the loop: nothing else
    is in flight then)."""
    run = ProducerRun(plan, link)
    for warm_up in run.warm_ups():
        await send(warm_up)
    pacer = run.start()
    clock = time.monotonic_ns
    while (body := pacer.next()) is not None:
        started_ns = clock()
        await send(body)
        pacer.sent(started_ns, clock())
    run.end(pacer)


def consume(plan: Plan, link: Link, fetch: Callable[[], tuple[int, list[bytes]]]) -> None:
    """A blocking consumer's run: ``fetch()`` returns when its read returned, and the bodies."""
    run = ConsumerRun(plan, link)
    while run.more():
        run.take(*fetch())
    run.end()


async def consume_async(
    plan: Plan, link: Link, fetch: Callable[[], Awaitable[tuple[int, list[bytes]]]]
) -> None:
    """:func:`consume` for an asyncio client."""
    run = ConsumerRun(plan, link)
    while run.more():
        run.take(*await fetch())
    run.end()


def relay(source: Connection, sink: Connection) -> None:
    """The floor's middle process: each message read from ``source`` written to ``sink``, one
    wake-up per message, until ``source`` is closed (then ``sink`` is closed too)."""
    receive, forward = source.recv_bytes, sink.send_bytes
    try:
        while True:
            forward(receive())
    except EOFError:
        pass
    finally:
        sink.close()
