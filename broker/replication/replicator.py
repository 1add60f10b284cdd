"""The leader's side of replication: one UDP publication per follower, APPEND frames of the
commit log from each follower's FETCH offset, HEARTBEATs when idle, ACKs in, and the high
watermark over the ISR.

Per duty cycle (:meth:`LeaderReplicator.do_work`, on the replication agent's thread):

1. FETCH and ACK frames polled by the agent come in through :meth:`on_fetch` and
   :meth:`on_ack` (only those of this leader's epoch count);
2. each follower that has FETCHed is sent the log from its send offset: ``store.read_log``
   bytes, at most ``max_frame_bytes`` a frame (a larger batch spans frames: the log is read
   from its start again for each piece, ``read_log`` taking unit boundaries only), never across an
   epoch boundary (the bytes of one frame are of one epoch, RocketMQ's rule), until its
   publication back-pressures; a follower sent nothing for ``heartbeat_interval_ms`` gets a
   HEARTBEAT (epoch, LEO, HW);
3. the leader's own log is fsynced when it has grown (group commit: one fsync covers every send
   appended since the last), so its flushed offset takes part in the ack rule: by the member's
   fsync thread (``request_flush``, :mod:`~aeromq.broker.replication.log_flusher`) while this
   thread goes on sending and taking ACKs (the followers may receive bytes the leader has not
   fsynced yet: the HW is the minimum over the ISR, the leader's fsynced offset included), or
   inline when no flusher is given (``leader_fsync_inline``, tests); on the driver's thread it
   is asked for (or run) once the driver's sender sent the cycle's frames
   (:meth:`LeaderReplicator.flush_after_send`), so the fsync thread's wake does not hold them
   up; after its fsync that thread wakes the agent only when the fsync may move the HW
   (:meth:`LeaderReplicator.flush_may_commit`), which it seldom does: the followers' ACKs
   usually come later. A slow fsync (tens of milliseconds under other disk I/O) holds only the
   HW, as the ack rule says: the driver's thread goes on receiving, sending and taking ACKs;
4. the high watermark (:mod:`~aeromq.broker.replication.isr`) is computed over the counted ISR
   and handed to ``store.set_high_watermark`` (sends complete, consumers see), only while the
   fence allows and the committed ISR has ``min_isr`` members;
5. every ``isr_check_interval`` the ISR is reviewed and a change asked of the controller.

Caller: the replication agent. Affects: the publications to the followers, the store's
committed offset, the controller's ISR requests.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from aeromq.broker.replication.epoch_file import EpochEntry
from aeromq.broker.replication.fencing import SelfFence
from aeromq.broker.replication.frame_codec import encode_append, encode_heartbeat
from aeromq.broker.replication.frame_descriptor import APPEND_HEADER_LENGTH, LEADER_STREAM_ID
from aeromq.broker.replication.isr import FollowerProgress, IsrTracker
from aeromq.broker.replication.membership import MemberInfo
from aeromq.broker.replication.pending_publication import PendingPublication, PublicationReaper
from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.transport import RegistrationError
from aeromq.transport.client import Aeron

__all__ = ["LeaderReplicator", "ReplicationSettings", "epoch_span", "replication_channel"]

_log = logging.getLogger(__name__)

_MAX_FRAMES_PER_FOLLOWER: Final = 64
"""Frames sent to one follower per duty cycle at most (the others get their turn)."""
_ISR_CHECK_INTERVAL_NS: Final = 100_000_000
_NO_FLOOR: Final = 1 << 63
"""The followers' floor when the counted ISR has no follower (a group of one)."""


def replication_channel(endpoint: str) -> str:
    """The channel of a member's replication endpoint (``host:port``): UDP, with terms of 4 MiB
    (frames up to 512 KiB; the files are sparse), datagrams of up to :data:`REPLICATION_MTU`
    bytes, and a receiver window (and socket receive buffer) of 256 KiB.

    A receiver sends a status message each time it has read a quarter of its window: with the
    driver's default of 128 KiB, a follower sent one nearly every commit round of the bench's
    46 KiB frames, and each woke the leader's network thread for a cycle of its own. At 256 KiB
    the leader's thread ran 2.98 cycles a round rather than 3.27 (0.33 of them empty rather
    than 0.63), took 1.96 socket wakes a round rather than 2.22, and spent 9% less CPU a round
    (traced); the group's end-to-end rate rose 2.8% over 11 alternating pairs, faster in 10
    (``bench/results/2026-11-30f/round.md``). A round of 1,024 messages (about 180 KiB) fits
    the window too. Where ``net.core.rmem_max`` is below 256 KiB (Linux's default is 208 KiB)
    the kernel grants that, doubled: still more than the window."""
    return (
        f"aeron:udp?endpoint={endpoint}|term-length=4m|mtu={REPLICATION_MTU}"
        "|rcv-wnd=256k|so-rcvbuf=256k"
    )


REPLICATION_MTU: Final = 65504
"""The replication channel's MTU: the largest Aeron takes (a UDP payload less headers, frame
aligned), so a commit round's APPEND (a window of 256 messages, 30-46 KiB) is one datagram to
each follower. Each datagram costs the sender's and the receiver's Python and a system call
whatever its length (about 60 us a ``send`` and 45 us a ``recvfrom_into`` on the leader's
driver thread, profiled): at Aeron's default 1,408 bytes a round's frame took 5 to 30
datagrams, at 8 KiB 4 to 6 (12 sends a round on the leader, received in pieces, a follower
often woken by the first before the last was sent). Larger than a link's MTU, a datagram is
fragmented by IP (a lost fragment loses the datagram, which Aeron's NAK repairs); loopback's
MTU is 64 KiB. Measured: ``bench/results/2026-11-29f/round.md``."""


def epoch_span(entries: Sequence[EpochEntry], offset: int, leo: int) -> tuple[int, int, int]:
    """``(epoch, start, end)`` of the epoch that holds the byte at ``offset``: the newest epoch
    starting at or before it (epoch 0 from offset 0 before the first), ending where the next
    epoch starts or at ``leo``."""
    epoch, start, end = 0, 0, leo
    for entry in entries:
        if entry.start_offset <= offset:
            epoch, start = entry.epoch, entry.start_offset
        else:
            end = entry.start_offset
            break
    return epoch, start, end


class ReplicationSettings:
    """The timing and sizes of replication (see ``BrokerConfig``'s group options)."""

    def __init__(
        self,
        *,
        replica_lag_max_ms: int = 1000,
        heartbeat_interval_ms: int = 250,
        max_frame_bytes: int = 256 * 1024,
        fetch_retry_ms: int = 200,
        handshake_timeout_ms: int = 1000,
        on_driver_thread: bool = True,
        follower_fsync_inline: bool = True,
        leader_fsync_inline: bool = True,
        follower_hw_interval_ms: int = 20,
    ) -> None:
        self.replica_lag_max_ns = replica_lag_max_ms * 1_000_000
        self.heartbeat_interval_ns = min(heartbeat_interval_ms, replica_lag_max_ms // 4) * 1_000_000
        """A HEARTBEAT (and its ACK) at most a quarter of ``replica_lag_max`` apart, so an idle
        follower stays caught up; 250 ms by default (each one wakes the driver's thread and the
        agent of both members: at 100 ms an idle group member used 3-4% of a core, most of it
        these wake-ups)."""
        self.max_frame_bytes = max_frame_bytes
        self.fetch_retry_ns = fetch_retry_ms * 1_000_000
        self.handshake_timeout_ms = handshake_timeout_ms
        self.on_driver_thread = on_driver_thread
        """Run the replication agent on the embedded media driver's network thread when the
        broker has one (``broker.replication.agent``): a frame received is taken, and one
        offered is sent, in the same duty cycle; False: on a thread of its own."""
        self.follower_fsync_inline = follower_fsync_inline
        """On the driver's thread, a follower fsyncs in the duty cycle that appended and ACKs in
        it (no hand-off to the fsync thread and back); False: on the member's fsync thread."""
        self.leader_fsync_inline = leader_fsync_inline
        """On the driver's thread, the leader fsyncs in the duty cycle that replicated, once the
        driver's sender sent its frames (the followers receive while it fsyncs, but that thread
        sends, receives and takes ACKs only after it; the default: with one request in flight
        nothing else waits meanwhile, and the hand-off costs about three wake-ups a round);
        False: on the member's fsync thread, asked for once the cycle's frames are sent, the
        driver's thread going on meanwhile (for rounds that overlap:
        ``docs/history/replication-log.md``, "The leader's fsync off the driver's thread"; a
        producer with one window outstanding sends it as one request a round whatever its
        requests in flight, "More requests in flight, with the fsync thread"). The broker option
        ``leader_fsync_inline``."""
        self.follower_hw_interval_ns = follower_hw_interval_ms * 1_000_000
        """While the leader's APPENDs keep coming, a follower applies the high watermark they
        carry (its dispatch to the consume queues) at most this often, not after every one: a
        follower serves no reads, and each apply cost it about a fifth of its CPU a round,
        right when the leader needs the cores to take the ACKs (the group's end-to-end rate
        +4.9% in six pairs, ``bench/results/2026-11-30f/round.md``); a cycle that took no
        APPEND applies what is due at once, and so does a member that stops following (it may
        lead next). 0: after every cycle."""


class _Follower:
    """One follower as the leader serves it: its publication and progress, and where the unit
    (batch or blank filler) being sent in pieces starts."""

    __slots__ = ("info", "pending", "progress", "unit_start")

    def __init__(self, info: MemberInfo, pending: PendingPublication) -> None:
        self.info = info
        self.pending = pending
        """The publication to the follower, added without waiting for the driver."""
        self.progress = FollowerProgress(info.id)
        self.unit_start: int | None = None
        """The start of the unit larger than a frame whose first pieces were sent (the send
        offset is inside it: the log is read from a unit's start only); None: the send offset
        is a unit's start."""


class LeaderReplicator:
    """The leader of ``epoch`` (member ``member_id``) replicating ``log`` (see module)."""

    def __init__(
        self,
        aeron: Aeron,
        log: ReplicatedLog,
        epochs: Sequence[EpochEntry],
        *,
        member_id: int,
        epoch: int,
        isr: Sequence[int],
        min_isr: int,
        fence: SelfFence,
        request_isr: Callable[[int, Sequence[int]], None],
        settings: ReplicationSettings,
        now_ns: int,
        request_flush: Callable[[], None] | None = None,
        reaper: PublicationReaper | None = None,
        flush_after_send: bool = False,
        quiet_offers: bool = False,
    ) -> None:
        self._aeron = aeron
        self._quiet_offers = quiet_offers
        """The followers' publications wake no driver (``pending_publication``, ``quiet``):
        this replicator offers on the driver's network thread."""
        self._flush_after_send = flush_after_send
        """Ask for the fsync (or, without ``request_flush``, run it) in
        :meth:`flush_after_send`, which the agent on the driver's thread calls after that
        thread's sender sent this cycle's frames."""
        self._flush_armed = False
        self._reaper = reaper or PublicationReaper()
        """Closes the publications of followers gone (see ``pending_publication``)."""
        self._request_flush = request_flush
        self._flush_asked = -1
        """The log end the fsync thread was last asked to fsync (-1: none, or no fsync thread)."""
        self._log = log
        self._epochs = tuple(epochs)
        self.member_id = member_id
        self.epoch = epoch
        self._fence = fence
        self._request_isr = request_isr
        self._settings = settings
        self.isr = IsrTracker(member_id, isr, min_isr)
        self._followers: dict[int, _Follower] = {}
        self._progress: dict[int, FollowerProgress] = {}
        """Each follower's progress by member id (kept with ``_followers``): read by every duty
        cycle's HW, not rebuilt for it."""
        self._live: frozenset[int] = frozenset()
        self._started_ns = now_ns
        self._next_isr_check_ns = now_ns + _ISR_CHECK_INTERVAL_NS
        self.high_watermark = log.committed_offset
        self.followers_floor = 0
        """The HW the counted ISR's followers allow (the lowest fsynced offset they acked), as
        of the agent's last duty cycle: read by the fsync thread (:meth:`flush_may_commit`)."""
        self.frames_sent = 0
        self.offers = 0
        """Frames offered (APPENDs and HEARTBEATs): the agent wakes the driver when it moved."""
        self.bytes_sent = 0
        self.stale_frames = 0
        self._frames: dict[tuple[int, int, int], tuple[bytes, int, int]] = {}
        """The APPENDs made in this duty cycle by (offset, unit start, payload limit): the
        followers at the same offset (most, most of the time) are sent one frame, encoded
        once (about 50 us of the leader's driver thread a follower a round, traced)."""

    # -- the group -----------------------------------------------------------------------------

    def on_members(self, members: Mapping[int, MemberInfo], isr: Sequence[int]) -> None:
        """The live members and the committed ISR as etcd holds them now: open publications to
        new followers, close those of gone ones, count the committed ISR."""
        self._live = frozenset(members)
        for member_id in list(self._followers):
            follower = self._followers[member_id]
            info = members.get(member_id)
            if info is None or info.replication_endpoint != follower.info.replication_endpoint:
                self._reaper.release(follower.pending)
                del self._followers[member_id]
                del self._progress[member_id]
        for member_id, info in members.items():
            if member_id == self.member_id or member_id in self._followers:
                continue
            channel = replication_channel(info.replication_endpoint)
            pending = PendingPublication(
                self._aeron, channel, LEADER_STREAM_ID, quiet=self._quiet_offers
            )
            follower = _Follower(info, pending)
            follower.progress.caught_up_ns = self._started_ns  # a grace of replica_lag_max
            self._followers[member_id] = follower
            self._progress[member_id] = follower.progress
        self.isr.commit(isr)

    def close(self) -> None:
        """Close every publication (leadership ends)."""
        for follower in self._followers.values():
            self._reaper.release(follower.pending)
        self._followers.clear()
        self._progress.clear()

    @property
    def sending(self) -> bool:
        """Whether a follower that FETCHed has bytes not yet sent (its publication was back
        pressured), or a publication waits for the driver's answer: nothing rings the agent
        when that clears, so it must poll."""
        leo = self._log.max_physical_offset
        for follower in self._followers.values():
            if follower.pending.publication is None:
                return True
            offset = follower.progress.send_offset
            if offset is not None and offset < leo:
                return True
        return False

    @property
    def followers(self) -> dict[int, FollowerProgress]:
        """Each follower's progress (for stats and the admin view; a copy)."""
        return dict(self._progress)

    # -- frames in -----------------------------------------------------------------------------

    def on_fetch(self, member_id: int, epoch: int, from_offset: int, now_ns: int) -> None:
        """A follower asks to be streamed from ``from_offset``."""
        follower = self._followers.get(member_id)
        if follower is None or epoch != self.epoch:
            self.stale_frames += 1
            return
        leo = self._log.max_physical_offset
        if from_offset > leo:
            _log.warning(
                "replication FETCH past the log end ignored: member=%d from_offset=%d leo=%d",
                member_id,
                from_offset,
                leo,
            )
            return
        progress = follower.progress
        progress.send_offset = from_offset
        follower.unit_start = None  # a follower's log ends at a unit's end
        progress.last_heard_ns = now_ns

    def on_ack(self, member_id: int, epoch: int, fsynced: int, leo: int, now_ns: int) -> None:
        """A follower's ACK."""
        follower = self._followers.get(member_id)
        if follower is None or epoch != self.epoch:
            self.stale_frames += 1
            return
        follower.progress.on_ack(fsynced, leo, self._log.max_physical_offset, now_ns)

    # -- the duty cycle --------------------------------------------------------------------------

    def do_work(self, now_ns: int) -> int:
        """One duty cycle (see module); returns the work done (frames sent, HW moves)."""
        log = self._log
        leo = log.max_physical_offset
        work = 0
        for follower in list(self._followers.values()):
            try:
                work += self._send(follower, leo, now_ns)
            except RegistrationError as error:  # the next snapshot adds it again
                _log.warning("replication publication refused: %s", error)
                del self._followers[follower.info.id]
                del self._progress[follower.info.id]
        self._frames.clear()
        # not fsynced and not yet asked for (an fsync thread asked for it covers it: while it
        # runs, no cycle arms the step after the send again, nor the sender's drain before it)
        if log.flushed_physical_offset < leo and leo > self._flush_asked:
            if self._flush_after_send:
                self._flush_armed = True  # this cycle's frames go out first
            elif self._request_flush is None:
                log.flush()
                work += 1
            else:
                self._ask_flush(leo)
        work += self._advance_high_watermark()
        if now_ns >= self._next_isr_check_ns:
            self._next_isr_check_ns = now_ns + _ISR_CHECK_INTERVAL_NS
            self._review_isr(now_ns)
        return work

    def _send(self, follower: _Follower, leo: int, now_ns: int) -> int:
        progress = follower.progress
        publication = follower.pending.publication
        if publication is None:
            publication = follower.pending.poll()
        if publication is None:
            return 0  # the driver has yet to answer: the agent does not sleep (``sending``)
        offset = progress.send_offset
        sent = 0
        if offset is not None:
            max_payload = min(
                self._settings.max_frame_bytes,
                publication.max_message_length - APPEND_HEADER_LENGTH,
            )
            frames = self._frames
            while offset < leo and sent < _MAX_FRAMES_PER_FOLLOWER:
                base = offset if follower.unit_start is None else follower.unit_start
                key = (offset, base, max_payload)
                made = frames.get(key)
                if made is None:
                    made = frames[key] = self._frame(offset, base, max_payload, leo)
                frame, length, unit_end = made
                if publication.offer(frame) < 0:
                    break
                offset += length
                # a unit larger than a frame goes in pieces: read it from its start again
                follower.unit_start = base if offset < unit_end else None
                sent += 1
                self.bytes_sent += length
            progress.send_offset = offset
        if sent:
            progress.last_sent_ns = now_ns
            self.frames_sent += sent
            self.offers += sent
        elif now_ns - progress.last_sent_ns >= self._settings.heartbeat_interval_ns:
            frame = encode_heartbeat(self.epoch, leo, self.high_watermark)
            if publication.offer(frame) > 0:
                progress.last_sent_ns = now_ns
                self.offers += 1
                sent = 1
        return sent

    @property
    def flush_due(self) -> bool:
        """Whether :meth:`flush_after_send` will fsync (a duty cycle asked for it)."""
        return self._flush_armed

    def _frame(self, offset: int, base: int, max_payload: int, leo: int) -> tuple[bytes, int, int]:
        """The APPEND of the log from ``offset`` (in the unit starting at ``base``), its
        payload's length, and where the unit (or the epoch) it stops in ends."""
        epoch, start, end = epoch_span(self._epochs, offset, leo)
        data = self._log.read_log(base, max_payload)  # whole units, at least one
        skip = offset - base
        payload = memoryview(data)[skip : skip + min(max_payload, end - offset)]
        frame = encode_append(
            epoch, start, offset, self.high_watermark, payload, leader_epoch=self.epoch
        )
        return frame, len(payload), min(base + len(data), end)

    def flush_after_send(self) -> int:
        """The leader's fsync a duty cycle asked for (``flush_after_send``), once the driver's
        sender has sent that cycle's frames: asked of the fsync thread (``request_flush``),
        which runs it while this thread goes on sending and taking ACKs, and wakes the agent
        when it may move the HW (0); or inline without one, the followers receiving while it
        runs (1: the next cycle moves the HW). Caller: the agent, on the driver's thread."""
        if not self._flush_armed:
            return 0
        self._flush_armed = False
        if self._request_flush is not None:
            self._ask_flush(self._log.max_physical_offset)
            return 0
        self._log.flush()
        return 1

    def _ask_flush(self, leo: int) -> None:
        """Ask the fsync thread for an fsync up to ``leo`` at least, once per log end."""
        if leo > self._flush_asked:
            self._flush_asked = leo
            request = self._request_flush
            assert request is not None
            request()

    def flush_may_commit(self) -> bool:
        """Whether the leader's flushed offset may now move the HW: the followers' floor (as
        of the agent's last cycle) is above the HW, so the leader's own fsync was what held it.
        Caller: the fsync thread, after each fsync; the agent is woken only then (the
        followers' ACKs, which come later, usually move the HW). The agent stores the floor
        before it reads the flushed offset, the fsync thread stores the flushed offset before
        it reads the floor (each one attribute, in program order under the GIL), so one of the
        two sees both: a move is never missed."""
        log = self._log
        return min(log.flushed_physical_offset, self.followers_floor) > self.high_watermark

    def _advance_high_watermark(self) -> int:
        isr = self.isr
        if not isr.enough:
            return 0
        log = self._log
        floor = self.followers_floor = isr.high_watermark(_NO_FLOOR, self._progress)
        own = min(log.flushed_physical_offset, log.max_physical_offset)
        hw = min(own, floor)
        if hw <= self.high_watermark or not self._fence.may_act():
            return 0
        log.set_high_watermark(hw)
        self.high_watermark = hw
        return 1

    def _review_isr(self, now_ns: int) -> None:
        wanted = self.isr.wanted(
            self._progress,
            self._live,
            self.high_watermark,
            now_ns,
            self._settings.replica_lag_max_ns,
        )
        if wanted is None:
            return
        ordered = (self.member_id, *sorted(wanted - {self.member_id}))
        _log.info(
            "group ISR change asked: epoch=%d from=%s to=%s",
            self.epoch,
            ",".join(map(str, sorted(self.isr.committed))),
            ",".join(map(str, ordered)),
        )
        self.isr.request(ordered)
        self._request_isr(self.epoch, ordered)
