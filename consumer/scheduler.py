"""The consumer's scheduler: :class:`~client.scheduler.TaskScheduler` (one thread that runs
delayed actions in due order: every pull task, and the periodic jobs' ticks) and the
:class:`~client.scheduler.Scheduler` Protocol the pull tasks see, defined in ``client`` (the
producer's failover waits on one too) and re-exported here."""

from __future__ import annotations

from aeromq.client.scheduler import Scheduler, TaskScheduler

__all__ = ["Scheduler", "TaskScheduler"]
