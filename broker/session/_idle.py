"""How the session agent waits for work: its idle strategy, and the doorbell it may sleep on.

A ``doorbell[:...]`` strategy (``transport/concurrent/doorbell_idle_strategy.py``) gets a
doorbell in a counter of the broker's media driver, which IPC clients map too: they ring it
after each request, and the agent's park ends at once. Any other strategy gets no doorbell, and clients are told none
(they would ring a bell nobody sleeps on). While every source of work rings, a park lasts until
the agent's next sweep (:data:`RUNG_PARK_NS`), but for a while after a client connects
(:func:`new_image_handler`). The polls of its spin windows yield the CPU
(``DoorbellIdleStrategy.yield_while_polling``): a client woken onto the CPU where the agent polls
runs at once rather than after the agent's time slice (``docs/latency.md``, "Polls that give the
CPU away").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from aeromq.transport.client import Aeron, Image, ImageHandler
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import (
    DoorbellIdleStrategy,
    idle_strategy_with_doorbell,
)
from aeromq.transport.concurrent.idle_strategy import IdleStrategy

if TYPE_CHECKING:
    from aeromq.broker.session._agent import SessionAgent

__all__ = [
    "EMPTY_PARK_NS",
    "NEW_IMAGE_SHORT_PARKS_NS",
    "RUNG_PARK_NS",
    "new_image_handler",
    "park_until_due",
    "session_idle_strategy",
]

RUNG_PARK_NS: Final = 100_000_000
"""While every source of its work rings (``SessionAgent.all_rung``), the agent sleeps this long
unless rung: until its next sweep (every 100 ms), not the idle strategy's deep park (25 ms).
A session that rings nothing (an IPC client without doorbells; a UDP client's requests ring
it through the embedded driver's receiver) keeps the backoff's parks while it lives."""
EMPTY_PARK_NS: Final = 1_000_000_000
"""The same with no live session: nothing to sweep but the closed sessions' tombstones (kept
for seconds), so once a second."""
NEW_IMAGE_SHORT_PARKS_NS: Final = 1_000_000_000
"""After a new image on the ingress (a client connecting), the agent parks no longer than its
backoff (25 ms) for this long, though every session rings: the client's CONNECT rings nothing
(it learns the doorbell from the answer)."""


def session_idle_strategy(
    aeron: Aeron, name: str, broker_name: str
) -> tuple[IdleStrategy, Doorbell | None]:
    """The session agent's idle strategy named ``name`` and, for a doorbell strategy, its
    doorbell (a counter ``aeron`` allocates, freed when ``aeron`` closes)."""
    idle = idle_strategy_with_doorbell(name, None)
    if not isinstance(idle, DoorbellIdleStrategy):
        return idle, None
    counter = aeron.add_counter(DOORBELL_TYPE_ID, label=f"doorbell: broker-sessions {broker_name}")
    doorbell = Doorbell.for_counter(aeron.counters_reader, counter.id)
    idle.doorbell = doorbell
    idle.rung_park_ns = RUNG_PARK_NS  # park_until_due tells it when
    idle.yield_while_polling = True  # (see module)
    return idle, doorbell


def new_image_handler(idle: IdleStrategy) -> ImageHandler | None:
    """For the ingress subscriptions: a new image (a client connecting) wakes the agent and
    holds its parks to the backoff's for :data:`NEW_IMAGE_SHORT_PARKS_NS`, so its CONNECT,
    which rings nothing, waits no longer than before (a doorbell strategy; else None)."""
    if not isinstance(idle, DoorbellIdleStrategy):
        return None
    strategy = idle

    def on_image(image: Image) -> None:
        strategy.wake_for_unrung(NEW_IMAGE_SHORT_PARKS_NS)

    return on_image


def park_until_due(idle: IdleStrategy, agent: SessionAgent) -> None:
    """Let a doorbell strategy sleep until rung while every source of ``agent``'s work rings
    (``SessionAgent.all_rung``), until its next sweep: :data:`RUNG_PARK_NS`, or
    :data:`EMPTY_PARK_NS` while it has no live session; and park right after a cycle that
    settled (``SessionAgent.settled``). Other strategies are left as they are."""
    if not isinstance(idle, DoorbellIdleStrategy):
        return
    table = agent.table
    idle.all_rung = agent.all_rung
    idle.settling = agent
    idle.rung_park_for = lambda: RUNG_PARK_NS if table.live_count else EMPTY_PARK_NS
