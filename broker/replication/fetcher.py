"""The follower's side of replication: the truncation handshake with a new leader, FETCH, the
leader's APPEND frames checked and appended, group-commit fsync, ACKs with the fsynced offset.

Following the leader of ``epoch`` (:meth:`ReplicaFetcher.do_work`, on the agent's thread):

1. **handshake**: ``ReplicaEpochEnd`` over gRPC (a future, polled) until the truncation point
   is known (:mod:`~aeromq.broker.replication.handshake`); a point below the log end is
   truncated to durably (``store.truncate_to``: intent, log, state, this member's epoch file,
   intent cleared); then a publication to the leader's replication endpoint (added without
   waiting for the driver, taken on a later cycle: ``pending_publication``) and a FETCH from
   the log end;
2. **APPEND** (of this leader epoch only: older ones are a deposed leader's and are dropped,
   counted): bytes at the expected offset are appended (``store.append_replicated``), after
   the epoch file learns a new epoch (before any byte of it); bytes already held are skipped;
   a gap (a lost image, a restart of the leader's stream) asks again with a FETCH from the log
   end; the frames' high watermark is applied (capped at the log end) once the cycle's fsync
   and ACK are done (on the driver's thread once its sender sent the ACK: the agent's
   ``after_send``): raising it dispatches the batches it passes to the consume queues (about
   0.13 ms for a round's 256 messages, traced), which the leader's commit does not wait for.
   While APPENDs keep coming it is applied at most every ``follower_hw_interval_ms`` (20 ms;
   a follower serves no reads), at once after a cycle that took none (the leader's HEARTBEAT
   brings the last one when the stream stops), and before the fetcher closes
   (:meth:`ReplicaFetcher.close`: the member may lead next);
3. once a cycle has appended, the log is fsynced once (group commit) and an ACK sent with the
   fsynced offset and the LEO: the fsync by the member's fsync thread (``request_flush``,
   :mod:`~aeromq.broker.replication.log_flusher`) while this thread goes on receiving and
   appending, the ACK by that thread as soon as the fsync returned (:meth:`ReplicaFetcher.ack_flushed`:
   one ACK an fsync, covering all it made durable, without waking the agent for it); by the
   agent's next duty cycle when that ACK could not go (back pressure, no publication);
   inline when no flusher is given (tests). A HEARTBEAT is answered with an ACK too (the
   leader's liveness view), and a FETCH goes again when the leader has more than this
   follower and nothing came for ``fetch_retry_ms``.

The publication to the leader is offered from two threads (the agent's FETCHes and ACKs, the
fsync thread's ACKs), under one lock; the ACK reads the fsynced offset under it, and the
publication exists only while fetching (after any truncation), so an ACK never carries an
offset from before a truncation into the epoch.

Caller: the replication agent. Affects: the store (appends, flushes, truncation, committed
offset), the epoch file.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import grpc

from aeromq.broker.replication.epoch_file import EpochFile
from aeromq.broker.replication.frame_codec import (
    AppendFrame,
    HeartbeatFrame,
    encode_ack,
    encode_fetch,
)
from aeromq.broker.replication.frame_descriptor import FOLLOWER_STREAM_ID
from aeromq.broker.replication.handshake import EpochEnd, TruncationHandshake
from aeromq.broker.replication.membership import MemberInfo
from aeromq.broker.replication.pending_publication import PendingPublication, PublicationReaper
from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.broker.replication.replicator import ReplicationSettings, replication_channel
from aeromq.common import ResponseCode
from aeromq.proto import replication_pb2, replication_pb2_grpc
from aeromq.transport.client import Aeron, ExclusivePublication

__all__ = ["FetcherCounters", "FetcherPhase", "ReplicaFetcher"]

_log = logging.getLogger(__name__)

_RETRY_NS: Final = 100_000_000
"""A failed handshake call is tried again after this long."""


@dataclass(slots=True)
class FetcherCounters:
    """What a member's fetchers did, over every leader it followed (the agent keeps one)."""

    appended_bytes: int = 0
    truncated_bytes: int = 0
    stale_frames: int = 0
    gaps: int = 0


class FetcherPhase:
    """Where the fetcher is: asking the leader, or streaming from it."""

    HANDSHAKE: Final = "handshake"
    FETCHING: Final = "fetching"


class ReplicaFetcher:
    """Member ``member_id`` following ``leader`` in ``epoch`` (see module)."""

    def __init__(
        self,
        aeron: Aeron,
        log: ReplicatedLog,
        epochs: EpochFile,
        *,
        group: str,
        member_id: int,
        leader: MemberInfo,
        epoch: int,
        settings: ReplicationSettings,
        counters: FetcherCounters | None = None,
        channel_factory: Callable[[str], grpc.Channel] = grpc.insecure_channel,
        request_flush: Callable[[], None] | None = None,
        wake: Callable[[], object] | None = None,
        reaper: PublicationReaper | None = None,
        high_watermark_after_send: bool = False,
        quiet_offers: bool = False,
    ) -> None:
        self._aeron = aeron
        self._quiet_offers = quiet_offers
        """The publication to the leader wakes no driver (``pending_publication``, ``quiet``):
        the agent offers on the driver's network thread; an ACK from the fsync thread wakes it
        through the agent (:meth:`ack_flushed`'s caller)."""
        self._reaper = reaper or PublicationReaper()
        """Closes a publication let go of before the driver answered (``pending_publication``)."""
        self._pending: PendingPublication | None = None
        """The publication to the leader being added (``pending_publication``): it becomes
        :attr:`_publication` on a later duty cycle."""
        self._request_flush = request_flush
        self._wake = wake
        self._acked_flushed = -1
        self._offer_lock = threading.Lock()
        """Held to offer on (or replace) the publication, and for :attr:`_acked_flushed`."""
        self.offers = 0
        """Frames offered by the agent (ACKs, FETCHes): the agent wakes the driver when it
        moved."""
        self.flush_acks = 0
        """ACKs offered by the fsync thread (:meth:`ack_flushed`)."""
        self._log = log
        self._epochs = epochs
        self.group = group
        self.member_id = member_id
        self.leader = leader
        self.epoch = epoch
        self._settings = settings
        self.phase = FetcherPhase.HANDSHAKE
        self._channel = channel_factory(leader.grpc)
        self._stub = replication_pb2_grpc.GroupReplicationStub(self._channel)
        self._handshake: TruncationHandshake | None = None
        self._call: grpc.Future[replication_pb2.ReplicaEpochEndResponse] | None = None
        self._retry_at_ns = 0
        self._publication: ExclusivePublication | None = None
        self._next_offset = 0  # where the next byte from the leader goes
        self._fetch_due = False
        self._last_fetch_ns = 0
        self._last_progress_ns = 0
        self._leader_leo = 0
        self._dirty = False
        self._ack_due = False
        self.high_watermark_after_send = high_watermark_after_send
        """The agent applies the frames' high watermark after the driver's sender sent the
        cycle's ACK (:meth:`apply_high_watermark`), not :meth:`do_work`: on the driver's thread."""
        self._hw_due = 0
        """The highest high watermark the frames carried and not yet applied: after the
        cycle's fsync and ACK, at most every ``follower_hw_interval_ms`` while APPENDs come
        (see module)."""
        self._hw_applied_ns = 0
        self._hw_streaming = False
        """An APPEND came since the last :meth:`apply_high_watermark`."""
        self.counters = counters or FetcherCounters()

    def close(self) -> None:
        """Stop following: apply the high watermark still due (the member may lead next), cancel
        a call in flight, close the publication and the channel."""
        if self._hw_due:
            self._hw_streaming = False
            self.apply_high_watermark(0)
        if self._call is not None:
            self._call.cancel()
            self._call = None
        self._close_publication()
        self._channel.close()

    def _close_publication(self) -> None:
        with self._offer_lock:
            self._publication = None
        pending, self._pending = self._pending, None
        if pending is not None:
            self._reaper.release(pending)

    @property
    def adding_publication(self) -> bool:
        """Whether the publication to the leader waits for the driver's answer (nothing rings
        the agent when it comes: it must poll)."""
        return self._pending is not None and self._publication is None

    def _take_publication(self) -> bool:
        """Whether the publication to the leader is there (taken once the driver answered)."""
        if self._publication is not None:
            return True
        pending = self._pending
        publication = None if pending is None else pending.poll()
        if publication is None:
            return False
        with self._offer_lock:
            self._publication = publication
            self._acked_flushed = -1  # the first cycle acks (a truncation may have lowered it)
        return True

    # -- frames in -----------------------------------------------------------------------------

    def on_append(self, frame: AppendFrame, now_ns: int) -> None:
        """An APPEND from a leader (any: the stale are dropped here)."""
        if frame.leader_epoch != self.epoch or self.phase != FetcherPhase.FETCHING:
            self.counters.stale_frames += 1
            return
        offset, payload = frame.offset, frame.payload
        expected = self._next_offset
        if offset > expected:
            self.counters.gaps += 1
            self._fetch_due = True
            return
        if offset < expected:
            skip = expected - offset
            if skip >= len(payload):
                return  # held already
            payload, offset = payload[skip:], expected
        last = self._epochs.last
        if last is not None and frame.epoch < last.epoch:
            self._restart(now_ns, f"bytes of epoch {frame.epoch} after epoch {last.epoch}")
            return
        if last is None or frame.epoch > last.epoch:
            self._epochs.append(frame.epoch, frame.epoch_start_offset)
        try:
            self._log.append_replicated(offset, payload)
        except Exception as exc:  # the log is not where the leader's stream is: ask again
            self._restart(now_ns, f"append refused: {exc}")
            return
        self._next_offset = offset + len(payload)
        self.counters.appended_bytes += len(payload)
        self._dirty = True
        self._hw_streaming = True
        self._last_progress_ns = now_ns
        if frame.high_watermark > self._hw_due:
            self._hw_due = frame.high_watermark  # applied once the cycle's ACK went

    def on_heartbeat(self, frame: HeartbeatFrame, now_ns: int) -> None:
        """A HEARTBEAT from a leader (any: the stale are dropped here)."""
        if frame.epoch != self.epoch or self.phase != FetcherPhase.FETCHING:
            self.counters.stale_frames += 1
            return
        self._leader_leo = frame.leader_leo
        self._ack_due = True
        if frame.leader_leo <= self._next_offset:
            self._last_progress_ns = now_ns
        if frame.high_watermark > self._hw_due:
            self._hw_due = frame.high_watermark

    def apply_high_watermark(self, now_ns: int) -> int:
        """Apply the high watermark the frames carried (see module): at once after a cycle that
        took no APPEND, else once ``follower_hw_interval_ms`` passed since the last time; 1
        when applied, else 0. Caller: :meth:`do_work`, or with
        :attr:`high_watermark_after_send` the agent once the driver's sender sent the cycle's
        ACK."""
        high_watermark = self._hw_due
        if not high_watermark:
            return 0
        if self._hw_streaming:
            self._hw_streaming = False
            if now_ns - self._hw_applied_ns < self._settings.follower_hw_interval_ns:
                return 0
        self._hw_due = 0
        self._hw_applied_ns = now_ns
        self._apply_high_watermark(high_watermark)
        return 1

    def _apply_high_watermark(self, high_watermark: int) -> None:
        log = self._log
        capped = min(high_watermark, log.max_physical_offset)
        if capped > log.committed_offset:
            log.set_high_watermark(capped)

    # -- the duty cycle --------------------------------------------------------------------------

    def do_work(self, now_ns: int) -> int:
        """One duty cycle (see module); returns the work done."""
        if self.phase == FetcherPhase.HANDSHAKE:
            return self._shake_hands(now_ns)
        if not self._take_publication():
            return 0 if self.high_watermark_after_send else self.apply_high_watermark(now_ns)
        work = 0
        request_flush = self._request_flush
        if request_flush is None:
            if self._dirty:
                self._dirty = False
                self._log.flush()
                work += self._send_ack()
            elif self._ack_due:
                work += self._send_ack()
        else:
            if self._dirty:
                self._dirty = False
                request_flush()
            if self._ack_due or self._log.flushed_physical_offset > self._acked_flushed:
                work += self._send_ack()
        if not self.high_watermark_after_send:
            self.apply_high_watermark(now_ns)
        stalled = now_ns - self._last_progress_ns >= self._settings.fetch_retry_ns
        if self._leader_leo > self._next_offset and stalled:
            self._fetch_due = True
        if self._fetch_due and now_ns - self._last_fetch_ns >= self._settings.fetch_retry_ns // 4:
            work += self._send_fetch(now_ns)
        return work

    def ack_flushed(self) -> bool:
        """ACK what the fsync that just returned made durable, if no ACK covered it yet;
        returns False when the agent has to (no publication: not fetching; back pressure).
        Caller: the member's fsync thread, after each fsync (it wakes the driver, not the
        agent, when this returns True)."""
        with self._offer_lock:
            publication = self._publication
            if publication is None:
                return False
            log = self._log
            leo = log.max_physical_offset
            fsynced = min(log.flushed_physical_offset, leo)
            if fsynced <= self._acked_flushed:
                return True
            if publication.offer(encode_ack(self.member_id, self.epoch, fsynced, leo)) > 0:
                self._acked_flushed = fsynced
                self.flush_acks += 1
                return True
            return False

    def _send_ack(self) -> int:
        with self._offer_lock:
            publication = self._publication
            if publication is None:
                return 0
            log = self._log
            leo = log.max_physical_offset
            self._ack_due = False
            fsynced = min(log.flushed_physical_offset, leo)
            if publication.offer(encode_ack(self.member_id, self.epoch, fsynced, leo)) > 0:
                self._acked_flushed = max(self._acked_flushed, fsynced)
                self.offers += 1
                return 1
            return 0

    def _send_fetch(self, now_ns: int) -> int:
        with self._offer_lock:
            publication = self._publication
            if publication is None:
                return 0
            self._next_offset = self._log.max_physical_offset
            self._last_fetch_ns = now_ns
            self._last_progress_ns = now_ns
            frame = encode_fetch(self.member_id, self.epoch, self._next_offset)
            if publication.offer(frame) > 0:
                self._fetch_due = False
                self.offers += 1
                return 1
            return 0

    # -- the handshake -------------------------------------------------------------------------

    def _shake_hands(self, now_ns: int) -> int:
        call = self._call
        if call is None:
            if now_ns < self._retry_at_ns:
                return 0
            if self._handshake is None:
                self._handshake = TruncationHandshake(self._epochs, self._log.max_physical_offset)
            self._ask(self._handshake.question)
            return 1
        if not call.done():
            return 0
        self._call = None
        handshake = self._handshake
        assert handshake is not None
        try:
            response: replication_pb2.ReplicaEpochEndResponse = call.result()
        except (grpc.RpcError, grpc.FutureCancelledError) as exc:
            self._retry(now_ns, f"call failed: {exc}")
            return 1
        if response.status.code != ResponseCode.SUCCESS:
            self._retry(now_ns, f"code={response.status.code} {response.status.message}")
            return 1
        point = handshake.answer(EpochEnd(response.epoch, response.end_offset))
        if point is None:
            self._ask(handshake.question)
            return 1
        self._truncate(point)
        self._start_fetching(now_ns)
        return 1

    def _restart(self, now_ns: int, why: str) -> None:
        """Start over with a handshake (the log and the leader's stream disagree)."""
        _log.warning(
            "replication: handshake again with the leader: leader=%d epoch=%d %s",
            self.leader.id,
            self.epoch,
            why,
        )
        self._close_publication()
        self.phase = FetcherPhase.HANDSHAKE
        self._handshake = None
        self._retry_at_ns = now_ns
        self._hw_due = 0

    def _ask(self, epoch: int) -> None:
        request = replication_pb2.ReplicaEpochEndRequest(
            group=self.group, member_id=self.member_id, leader_epoch=self.epoch, epoch=epoch
        )
        call = self._stub.ReplicaEpochEnd.future(
            request, timeout=self._settings.handshake_timeout_ms / 1000
        )
        wake = self._wake
        if wake is not None:  # the answer wakes the agent (it polls the call)

            def answered(_: object) -> None:
                wake()

            call.add_done_callback(answered)
        self._call = call

    def _retry(self, now_ns: int, why: str) -> None:
        _log.info(
            "replication handshake with the leader failed, retrying: leader=%d epoch=%d %s",
            self.leader.id,
            self.epoch,
            why,
        )
        self._handshake = None
        self._retry_at_ns = now_ns + _RETRY_NS

    def _truncate(self, point: int) -> None:
        """Truncate the log durably to ``point`` if it ends past it (the store's steps: intent,
        log, state, this epoch file, intent cleared)."""
        log = self._log
        leo = log.max_physical_offset
        if point < leo:
            log.truncate_to(point, epochs=self._epochs)
            self.counters.truncated_bytes += leo - point
            _log.warning(
                "replication: divergent log tail truncated: leader=%d epoch=%d from=%d to=%d",
                self.leader.id,
                self.epoch,
                leo,
                point,
            )
        else:  # epochs starting at the point hold no byte here: the leader's bytes follow
            self._epochs.truncate_from(point)

    def _start_fetching(self, now_ns: int) -> None:
        channel = replication_channel(self.leader.replication_endpoint)
        self._pending = PendingPublication(
            self._aeron, channel, FOLLOWER_STREAM_ID, quiet=self._quiet_offers
        )
        self.phase = FetcherPhase.FETCHING
        self._next_offset = self._log.max_physical_offset
        self._fetch_due = True
        self._last_fetch_ns = 0
        self._last_progress_ns = now_ns
        _log.info(
            "replication: following leader=%d epoch=%d from=%d",
            self.leader.id,
            self.epoch,
            self._next_offset,
        )
