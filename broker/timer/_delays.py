"""When a timer message is due: RocketMQ's property names, its 18 delay levels and the broker's
maximum delay. Pure functions, no I/O.

A message says when it is due with one of three properties (RocketMQ's ``MessageConst``):

- ``TIMER_DELIVER_MS``: an absolute time, epoch milliseconds (RocketMQ 5's timer message);
- ``TIMER_DELAY_SEC``: seconds after it is stored;
- ``DELAY``: one of RocketMQ 4's delay levels (1..18, :data:`DELAY_LEVELS_MS`) after it is
  stored; a level above 18 is 18 and a level of 0 or less is no delay, as RocketMQ's
  ``ScheduleMessageService`` treats them.

A due time in the past is delivered at once; one more than the broker's maximum delay after
the store time is refused (RocketMQ's ``timerMaxDelaySec``, three days by default).

Caller: the store hook (``_redirect``), the send processor's check and the RocketMQ 5 endpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from aeromq.common import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC

__all__ = [
    "DEFAULT_MAX_DELAY_MS",
    "DELAY_LEVELS_MS",
    "PROPERTY_DELAY",
    "PROPERTY_REAL_QUEUE_ID",
    "PROPERTY_REAL_TOPIC",
    "PROPERTY_TIMER_DELAY_SEC",
    "PROPERTY_TIMER_DELIVER_MS",
    "PROPERTY_TIMER_OUT_MS",
    "TIMER_PROPERTIES",
    "TIMER_QUEUE_ID",
    "TIMER_TOPIC",
    "DueTime",
    "due_time",
    "level_delay_ms",
]

TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
"""The system topic a timer message is stored under until it is due (RocketMQ 5's name)."""
TIMER_QUEUE_ID: Final = 0
"""Its one queue: the timer service reads it in store order."""

PROPERTY_DELAY: Final = "DELAY"
PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
"""Set on a delivered message: the time it was due (RocketMQ 5 sets it on its re-put)."""
TIMER_PROPERTIES: Final = (PROPERTY_TIMER_DELIVER_MS, PROPERTY_TIMER_DELAY_SEC, PROPERTY_DELAY)
"""The properties that make a message a timer message, in the order they are read."""

_SECOND: Final = 1_000
_MINUTE: Final = 60 * _SECOND
DELAY_LEVELS_MS: Final = (
    1 * _SECOND, 5 * _SECOND, 10 * _SECOND, 30 * _SECOND,
    1 * _MINUTE, 2 * _MINUTE, 3 * _MINUTE, 4 * _MINUTE, 5 * _MINUTE, 6 * _MINUTE,
    7 * _MINUTE, 8 * _MINUTE, 9 * _MINUTE, 10 * _MINUTE, 20 * _MINUTE, 30 * _MINUTE,
    60 * _MINUTE, 120 * _MINUTE,
)  # fmt: skip
"""RocketMQ 4's ``messageDelayLevel`` (``1s 5s 10s 30s 1m ... 1h 2h``): level ``n`` is
``DELAY_LEVELS_MS[n - 1]``."""
DEFAULT_MAX_DELAY_MS: Final = 3 * 24 * 3_600_000
"""RocketMQ's default ``timerMaxDelaySec``: three days."""


class DueTime:
    """What a message's properties say about its due time: ``due_ms`` (None: not a timer
    message), or ``problem`` (a text: the values are not numbers, or too far ahead)."""

    __slots__ = ("due_ms", "problem")

    def __init__(self, due_ms: int | None, problem: str | None = None) -> None:
        self.due_ms = due_ms
        self.problem = problem


def level_delay_ms(level: int) -> int:
    """The delay of RocketMQ 4's delay ``level``: 0 for a level of 0 or less, level 18's for
    one above 18."""
    if level <= 0:
        return 0
    return DELAY_LEVELS_MS[min(level, len(DELAY_LEVELS_MS)) - 1]


def due_time(properties: Mapping[str, str], store_ms: int, max_delay_ms: int) -> DueTime:
    """When a message with ``properties`` stored at ``store_ms`` is due (see module)."""
    for name in TIMER_PROPERTIES:
        text = properties.get(name)
        if text is not None:
            break
    else:
        return DueTime(None)
    try:
        value = int(text)
    except ValueError:
        return DueTime(None, f"not a number: {name}={text!r}")
    if name == PROPERTY_TIMER_DELIVER_MS:
        due_ms = value
    elif name == PROPERTY_TIMER_DELAY_SEC:
        due_ms = store_ms + value * _SECOND
    else:
        due_ms = store_ms + level_delay_ms(value)
    if due_ms - store_ms > max_delay_ms:
        return DueTime(
            None,
            f"delivery time beyond the broker's max delay: {name}={text} "
            f"delay_ms={due_ms - store_ms} max_delay_ms={max_delay_ms}",
        )
    return DueTime(due_ms)
