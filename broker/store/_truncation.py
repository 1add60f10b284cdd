"""A broker group's follower cutting its log back to where it agrees with the new leader,
durably (KIP-101/KIP-279; RocketMQ's epoch handshake; RocketMQ #10666 reset positions in memory
only and left the stale tail valid on disk).

The replication layer finds the truncation point (the epoch handshake, ``EpochFile``); the store
owns the log and does the rest, in steps a crash may stop anywhere:

a. ``truncate.intent`` written (durably) with the point (``write_truncate_intent``);
b. the commit log's tail zeroed from the point (later segments deleted; files never shrink)
   and flushed, consume-queue entries at or past it dropped, the per-queue counters and the
   producer state rebuilt from the log before it, the bytes held of an incomplete unit
   dropped;
c. the epoch file's epochs that start at or past the point dropped
   (``EpochFile.truncate_from``);
d. the intent removed (durably).

A start that finds the intent (``MessageStore.start``) does b to d again before anything else
(each is idempotent), so the log never keeps a tail the group does not have. Who calls what:
the replication layer calls :meth:`TruncationPath.truncate_to`, passing its ``EpochFile`` (the
store truncates that very object in step c, so the layer's view stays true), and opens its
epoch file after ``MessageStore.start`` (which may have truncated the file).

Caller: the follower's fetcher, before it fetches from the point; the store's start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from aeromq.broker._errors import BrokerStateError, InvalidArgumentError
from aeromq.broker.store._commit_log import LogCheck
from aeromq.broker.store._store_services import StoreServices

if TYPE_CHECKING:
    from aeromq.broker.replication import EpochFile

__all__ = ["TRUNCATION_STEPS", "TruncationPath"]

_log = logging.getLogger(__name__)

TRUNCATION_STEPS: Final = (
    "intent-written",
    "log-truncated",
    "state-rebuilt",
    "epochs-truncated",
    "intent-cleared",
)
"""The steps of :meth:`TruncationPath.truncate_to`, in order, as its ``on_step`` sees them."""


def _no_step(_: str) -> None:
    pass


class TruncationPath(StoreServices):
    """A follower's durable truncation, for ``MessageStore`` (see module)."""

    def truncate_to(
        self,
        offset: int,
        *,
        epochs: EpochFile | None = None,
        on_step: Callable[[str], None] = _no_step,
    ) -> int:
        """Cut the log back to ``offset`` durably (steps a to d, see module): a batch boundary
        at or above the committed offset and at most the log's end. ``epochs`` is the epoch file
        to truncate in step c (the store opens the data directory's when None); ``on_step``
        sees each step's name as it completes (:data:`TRUNCATION_STEPS`, a test seam). Returns
        the bytes dropped. Raises :class:`InvalidArgumentError` for another offset,
        :class:`BrokerStateError` on a leader or a store not running. Caller: the follower's
        fetcher."""
        from aeromq.broker.replication import clear_truncate_intent, write_truncate_intent

        self._require_group()
        self._require_running()
        data_dir = self.config.data_dir
        with self._put_lock:
            if self._leading:
                raise BrokerStateError("a leader does not truncate its log", offset=offset)
            self._check_truncation_point(offset)
            write_truncate_intent(data_dir, offset)
            on_step(TRUNCATION_STEPS[0])
            dropped = self._truncate_log(offset)
            on_step(TRUNCATION_STEPS[1])
            self._rebuild_after_truncation()
            on_step(TRUNCATION_STEPS[2])
            _epoch_file(data_dir, epochs).truncate_from(offset)
            on_step(TRUNCATION_STEPS[3])
            clear_truncate_intent(data_dir)
            on_step(TRUNCATION_STEPS[4])
        _log.warning("log truncated: offset=%d dropped_bytes=%d", offset, dropped)
        return dropped

    def _check_truncation_point(self, offset: int) -> None:
        committed = self._commits.committed_offset
        end = self.commit_log.max_offset
        if offset < committed or offset > end:
            raise InvalidArgumentError(
                "a truncation point lies between the committed offset and the log's end",
                offset=offset,
                committed_offset=committed,
                log_end=end,
            )
        if offset < end and self.commit_log.check(offset)[0] not in (LogCheck.OK, LogCheck.BLANK):
            raise InvalidArgumentError("a truncation point must be a batch boundary", offset=offset)

    def _truncate_log(self, offset: int) -> int:
        """Step b's files: the log's tail zeroed and flushed, queue entries past it dropped."""
        self._pending.clear()
        dropped = self.commit_log.truncate_durably(offset)
        for queue in self.queues:
            queue.truncate_physical(offset)
            queue.flush()
        self._index_from = min(self._index_from, offset - 1)
        return dropped

    def _rebuild_after_truncation(self) -> None:
        """Step b's state: counters and producer state of the log before the point."""
        self._restore_log_state(None, None)

    def _redo_truncation(self) -> int | None:
        """At start, before recovery: an unfinished truncation's log step again; returns its
        point (None when there was none). :meth:`_finish_truncation` does c and d after the
        store's state is rebuilt."""
        from aeromq.broker.replication import read_truncate_intent

        offset = read_truncate_intent(self.config.data_dir)
        if offset is None:
            return None
        files = self.commit_log.files
        files.truncate(offset)  # the log's end is recovery's to find: at the point or before
        if files.last is not None:
            files.last.flush()
        _log.warning("an unfinished truncation done again: offset=%d", offset)
        return offset

    def _finish_truncation(self, offset: int) -> None:
        """At start: steps c and d of the truncation :meth:`_redo_truncation` found."""
        from aeromq.broker.replication import clear_truncate_intent

        data_dir = self.config.data_dir
        _epoch_file(data_dir, None).truncate_from(offset)
        clear_truncate_intent(data_dir)


def _epoch_file(data_dir: Path, epochs: EpochFile | None) -> EpochFile:
    """``epochs``, or the epoch file of ``data_dir`` opened now. (The replication package is
    imported when needed, not with the store: it builds on the store.)"""
    if epochs is not None:
        return epochs
    from aeromq.broker.replication import EpochFile

    return EpochFile(data_dir)
