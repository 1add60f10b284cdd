"""``SubscriberPosition``: one subscription's sub-pos in one log, and the untethered rules.

Aeron's ``SubscriberPosition`` (``aeron_tetherable_position_t``), shared by every log a
subscription can read: an IPC publication (``transport/driver/ipc/ipc_publication.py``) and a
network image (``transport/driver/udp/publication_image.py``). Both run the same life cycle for
untethered subscribers (``tether=false``), :func:`check_untethered_subscribers`:

- ACTIVE: one that falls behind the window limit for ``window_limit_timeout_ns`` is told its image
  is unavailable (the :class:`ImageListener`) and goes to LINGER;
- LINGER: after another ``window_limit_timeout_ns`` it is RESTING, ignored for flow control;
- RESTING: after ``resting_timeout_ns`` it rejoins at the log's rejoin position with a fresh
  ON_AVAILABLE_IMAGE, ACTIVE again.

A tethered subscriber only has its update time refreshed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import IntEnum
from typing import Protocol, TypeVar

from aeromq.transport.concurrent.position import Position

__all__ = [
    "ImageListener",
    "SubscriberPosition",
    "TetherState",
    "check_untethered_subscribers",
]

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class TetherState(IntEnum):
    ACTIVE = 0
    LINGER = 1
    RESTING = 2


class SubscriberPosition:
    """One subscription's sub-pos in one log (Aeron's tetherable position)."""

    __slots__ = (
        "counter_id",
        "is_tether",
        "position",
        "state",
        "subscription_registration_id",
        "time_of_last_update_ns",
    )

    def __init__(
        self,
        position: Position,
        subscription_registration_id: int,
        is_tether: bool,
        now_ns: int,
    ) -> None:
        self.position = position
        self.counter_id = position.id
        self.subscription_registration_id = subscription_registration_id
        self.is_tether = is_tether
        self.state = TetherState.ACTIVE
        self.time_of_last_update_ns = now_ns


class ImageListener(Protocol[S_contra]):
    """What a log (an IPC publication, a network image) tells the conductor about the images of
    its subscribers."""

    def on_image_unavailable(self, source: S_contra, subscription_id: int, /) -> None: ...

    def on_image_available(self, source: S_contra, subscriber: SubscriberPosition, /) -> None: ...


def check_untethered_subscribers(
    source: S,
    listener: ImageListener[S],
    subscribers: Iterable[SubscriberPosition],
    now_ns: int,
    *,
    window_limit: int,
    window_limit_timeout_ns: int,
    resting_timeout_ns: int,
    rejoin_position: Callable[[], int],
) -> None:
    """Move each untethered subscriber of ``source`` through its life cycle (see module).

    Caller: the conductor's timer, for an IPC publication or a network image. Affects: each
    subscriber's state and update time, and a RESTING one's position (set to
    ``rejoin_position()`` as it rejoins).
    """
    for subscriber in subscribers:
        if subscriber.is_tether:
            subscriber.time_of_last_update_ns = now_ns
            continue
        since_update_ns = now_ns - subscriber.time_of_last_update_ns
        if subscriber.state is TetherState.ACTIVE:
            if subscriber.position.get_volatile() > window_limit:
                subscriber.time_of_last_update_ns = now_ns
            elif since_update_ns > window_limit_timeout_ns:
                listener.on_image_unavailable(source, subscriber.subscription_registration_id)
                subscriber.state = TetherState.LINGER
                subscriber.time_of_last_update_ns = now_ns
        elif subscriber.state is TetherState.LINGER:
            if since_update_ns > window_limit_timeout_ns:
                subscriber.state = TetherState.RESTING
                subscriber.time_of_last_update_ns = now_ns
        elif since_update_ns > resting_timeout_ns:
            subscriber.position.set_ordered(rejoin_position())
            listener.on_image_available(source, subscriber)
            subscriber.state = TetherState.ACTIVE
            subscriber.time_of_last_update_ns = now_ns
