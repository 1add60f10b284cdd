"""Timer messages: a message due at a later time (RocketMQ 5's timer message, RocketMQ 4's
delay levels), held by the broker until then.

The store's put path hands a batch marked ``TIMER_FLAG`` to :class:`TimerRedirector`, which
rewrites it into the system topic :data:`TIMER_TOPIC` (real topic and queue in ``REAL_TOPIC``
and ``REAL_QID``, the due time in ``TIMER_DELIVER_MS``); :class:`TimerService` puts each message
back to its real queue when it is due, from an index by due time rebuilt from the log and a
checkpoint at start. Due times and the delay levels: :func:`due_time`, :data:`DELAY_LEVELS_MS`.

Modules: ``_delays`` (names, levels, the due time), ``_redirect`` (the store hook),
``_records`` (a held record's property string), ``_queue_io`` (the timer queue's reads and the
put-backs, as record batches), ``_index`` (the heap by due time), ``_ledger`` (delivered marks),
``_checkpoint`` (their file), ``_checkpoint_writer`` (its thread), ``_dedupe`` (put-backs after
the checkpoint), ``_service`` (the thread).
"""

from aeromq.broker.timer._checkpoint import TimerCheckpoint
from aeromq.broker.timer._delays import (
    DEFAULT_MAX_DELAY_MS,
    DELAY_LEVELS_MS,
    PROPERTY_DELAY,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TIMER_DELAY_SEC,
    PROPERTY_TIMER_DELIVER_MS,
    PROPERTY_TIMER_OUT_MS,
    TIMER_PROPERTIES,
    TIMER_QUEUE_ID,
    TIMER_TOPIC,
    DueTime,
    due_time,
    level_delay_ms,
)
from aeromq.broker.timer._redirect import TimerRedirector, timer_problem
from aeromq.broker.timer._service import TIMER_THREAD_NAME, TimerService

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
    "TIMER_THREAD_NAME",
    "TIMER_TOPIC",
    "DueTime",
    "TimerCheckpoint",
    "TimerRedirector",
    "TimerService",
    "due_time",
    "level_delay_ms",
    "timer_problem",
]
