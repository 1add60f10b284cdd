"""RocketMQ's consume-retry names and rules: the retry and dead-letter topics of a consumer
group, the properties a sent-back message carries, and the back-off schedule.

A message a consumer failed to consume is *sent back* (RocketMQ's ``CONSUMER_SEND_MSG_BACK``):
the broker writes a copy to the group's retry topic ``%RETRY%<group>`` with the ``DELAY`` level
``3 + reconsume times`` (level 3 is 10 s, then 30 s, 1 min, 2 min ... up to 2 h at level 18),
or, once the message was reconsumed ``max_reconsume_times`` times (16 by default), to the
group's dead-letter topic ``%DLQ%<group>``, which nobody consumes until an admin re-sends it.
The copy keeps where it first came from in ``RETRY_TOPIC`` and ``ORIGIN_MESSAGE_ID``.

Used by the broker's send-back processor, the RocketMQ 5 endpoint's dead letters, and the
consumers (their retry subscription and the original topic they restore). No I/O here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFAULT_MAX_RECONSUME_TIMES",
    "DELAY_LEVEL_DELAYS_MS",
    "DLQ_TOPIC_PREFIX",
    "PROPERTY_DELAY_TIME_LEVEL",
    "PROPERTY_MAX_RECONSUME_TIMES",
    "PROPERTY_ORIGIN_MESSAGE_ID",
    "PROPERTY_RECONSUME_TIME",
    "PROPERTY_RETRY_TOPIC",
    "RETRY_TOPIC_PREFIX",
    "back_off_delay_level",
    "dlq_topic",
    "is_retry_topic",
    "retry_topic",
]

RETRY_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_TOPIC_PREFIX: Final = "%DLQ%"
DEFAULT_MAX_RECONSUME_TIMES: Final = 16
"""RocketMQ's ``maxReconsumeTimes`` default: the 17th failure goes to the dead-letter queue."""

PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
"""The topic a retried or dead-lettered message first came from."""
PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
"""The offset message id of the first stored copy."""
PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
"""How many times the message was consumed and sent back (RocketMQ 5's pop sets it too)."""
PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
"""The consumer's maximum when the copy was made."""
PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
"""RocketMQ 4's delay level (1-18): the broker holds the message back that long."""

DELAY_LEVEL_DELAYS_MS: Final = (
    1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000,
    420_000, 480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000,
)  # fmt: skip
"""RocketMQ's ``messageDelayLevel`` ("1s 5s 10s 30s 1m 2m ... 1h 2h"): level n waits item n-1."""

_FIRST_RETRY_LEVEL: Final = 3


def retry_topic(group: str) -> str:
    """The retry topic of a consumer group: ``%RETRY%<group>``."""
    return f"{RETRY_TOPIC_PREFIX}{group}"


def dlq_topic(group: str) -> str:
    """The dead-letter topic of a consumer group: ``%DLQ%<group>``."""
    return f"{DLQ_TOPIC_PREFIX}{group}"


def is_retry_topic(topic: str) -> bool:
    """Whether ``topic`` is a group's retry topic."""
    return topic.startswith(RETRY_TOPIC_PREFIX)


def back_off_delay_level(reconsume_times: int) -> int:
    """RocketMQ's back-off: the delay level of a message sent back after ``reconsume_times``
    earlier send-backs (``3 + reconsume_times``, at most the last level)."""
    return min(_FIRST_RETRY_LEVEL + reconsume_times, len(DELAY_LEVEL_DELAYS_MS))
