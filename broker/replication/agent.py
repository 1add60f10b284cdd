"""The replication agent: one thread per member that owns its replication endpoint, its epoch
file and its role (leader or follower), and runs the role's duty cycle.

It subscribes to its own replication endpoint (UDP ``host:port``) on both streams: 1001
carries APPEND and HEARTBEAT from a leader (to the follower's :class:`ReplicaFetcher`), 1002
FETCH and ACK from followers (to the leader's :class:`LeaderReplicator`). The controller's
snapshots come through a queue (the agent's only cross-thread input) and decide the role:

- ``snapshot.lead`` (this process won ``state.epoch``): stop following, append ``(epoch,
  LEO)`` to the epoch file durably, arm the fence, and lead (``store.start_leading``): sends
  are taken from then on;
- ``state`` names another live leader: follow it (a fetcher per (leader, epoch));
- while leading, a snapshot that no longer says ``lead``, or the fence firing (the lease not
  surely valid), ends the term at once: sends are refused (``NOT_LEADER``), those waiting for
  the high watermark fail (``store.stop_leading``: outcome unknown), and the controller is
  told.

Every role change logs one line (``group role: ...``). The send path asks
:meth:`ReplicationAgent.write_refusal` (any thread) before it appends.

**Where it runs** (:attr:`ReplicationAgent.driver_thread`): when its media driver runs in this
process on a thread that runs both the sender and the receiver (a broker's embedded driver,
``SHARED`` mode: ``MediaDriver.host_agent``), on that thread, between the receiver and the
sender in each duty cycle: a frame received is taken, and a frame offered sent, in one cycle,
with no hand-off between threads (``docs/history/replication-log.md``, round six). Every
source of its work then rings its doorbell's word and ends the driver's park
(``MediaDriver.wake_network``): the store when a put starts waiting for the commit
(``on_commit_wait``), the controller's snapshots, the handshake's answer; the receiver rings the
word after taking frames. A cycle runs the agent only when the word moved, the last cycle
worked or left work that rings no one (a follower's back pressure, a publication the driver has
yet to add: :meth:`ReplicationAgent.rung_only`), or :data:`_TICK_NS` passed (the clock's duties);
the others cost a read of the word. There a follower fsyncs in the cycle that appended and ACKs
in it (applying the frames' high watermark only once its sender sent that ACK;
``ReplicationSettings.follower_fsync_inline``), and a leader fsyncs in the same cycle once
its sender sent all the frames it could (the sender runs again first while it sends:
:meth:`ReplicationAgent.after_send_due`, :meth:`ReplicationAgent.after_send`;
``ReplicationSettings.leader_fsync_inline``, the default): no fsync thread. With
``leader_fsync_inline`` False the leader asks its fsync thread for that fsync instead, and the
driver's thread goes on sending, receiving and taking ACKs while the disk works; the fsync
thread rings the agent only when its fsync may move the high watermark.

**On a thread of its own** otherwise (``ReplicationSettings.on_driver_thread`` False, a
``DEDICATED`` or external driver; :attr:`ReplicationAgent.doorbell`,
:attr:`ReplicationAgent.all_rung`): the agent owns the member's fsync thread
(:mod:`~aeromq.broker.replication.log_flusher`), and when its media driver runs in this process
it sleeps on the driver's data doorbell, which every source of its work rings (as above, and
the fsync thread after an fsync: a follower's sends the ACK itself and rings only when it could
not; a leader's rings only when its fsync may move the high watermark). After a cycle that
offered frames it ends the driver's network park (``MediaDriver.wake_network``), so the frames
go out at once. Without an in-process driver the agent keeps the timed parks of its runner's
idle strategy.

Caller: the broker's group member (``broker.replication.group_member``) builds it and runs it
on its driver's thread or an ``AgentRunner``; the controller's listener is :meth:`on_group`.
Affects: the store through the roles, the epoch file, the publications of replication.
"""

from __future__ import annotations

import enum
import logging
import queue
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from aeromq.broker.replication.controller import GroupSnapshot
from aeromq.broker.replication.epoch_file import EpochFile
from aeromq.broker.replication.fencing import SelfFence
from aeromq.broker.replication.fetcher import FetcherCounters, ReplicaFetcher
from aeromq.broker.replication.frame_codec import (
    AckFrame,
    AppendFrame,
    FetchFrame,
    Frame,
    HeartbeatFrame,
    decode_or_none,
)
from aeromq.broker.replication.frame_descriptor import FOLLOWER_STREAM_ID, LEADER_STREAM_ID
from aeromq.broker.replication.handshake import EpochEnd, epoch_end
from aeromq.broker.replication.log_flusher import LogFlusher
from aeromq.broker.replication.pending_publication import PublicationReaper
from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.broker.replication.replicator import (
    LeaderReplicator,
    ReplicationSettings,
    replication_channel,
)
from aeromq.common import ResponseCode
from aeromq.transport.client import Aeron, Subscription
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.driver import MediaDriver
from aeromq.transport.logbuffer import FragmentAssembler, Header

__all__ = ["ReplicationAgent", "Role"]

_log = logging.getLogger(__name__)

_FRAGMENT_LIMIT: Final = 64
_TICK_NS: Final = 10_000_000
"""On the driver's thread, the longest a cycle is skipped while nothing rings: how late the
clock's duties may run (the fence's check, HEARTBEATs, the ISR review, a FETCH retry), as the
agent's own thread's 50 ms park bounded them."""


class Role(enum.Enum):
    """A member's role in its group."""

    FOLLOWER = "follower"
    LEADER = "leader"


class ReplicationAgent:
    """Member ``member_id`` of ``group``'s replication (see module)."""

    def __init__(
        self,
        aeron: Aeron,
        log: ReplicatedLog,
        data_dir: Path,
        *,
        group: str,
        member_id: int,
        endpoint: str,
        fence: SelfFence,
        settings: ReplicationSettings,
        request_isr: Callable[[int, Sequence[int]], None],
        fenced: Callable[[int], None],
    ) -> None:
        self._aeron = aeron
        self._log = log
        self._data_dir = data_dir
        self.group = group
        self.member_id = member_id
        self.endpoint = endpoint
        self.epochs = EpochFile(data_dir)
        self._fence = fence
        self._settings = settings
        self._request_isr = request_isr
        self._fenced = fenced
        self._commands: queue.SimpleQueue[GroupSnapshot] = queue.SimpleQueue()
        channel = replication_channel(endpoint)
        self._from_leader: Subscription = aeron.add_subscription(channel, LEADER_STREAM_ID)
        self._from_followers: Subscription = aeron.add_subscription(channel, FOLLOWER_STREAM_ID)
        self._assembler = FragmentAssembler(self._on_leader_frame)
        self.role = Role.FOLLOWER
        self.epoch = 0
        """The epoch of the leader this member leads or follows (0: none yet)."""
        self.replicator: LeaderReplicator | None = None
        self.fetcher: ReplicaFetcher | None = None
        self.malformed_frames = 0
        self.terms_led = 0
        self.fetched = FetcherCounters()
        """What this member's fetchers did, over every leader it followed."""
        self._now_ns = time.monotonic_ns()
        driver = MediaDriver.in_process(aeron.context.aeron_dir)
        bell = None if driver is None else driver.data_doorbell
        self._driver = driver if bell is not None else None
        self.doorbell: Doorbell = bell if bell is not None else Doorbell.allocate()
        """What the agent sleeps on on a thread of its own (see module): rung by every source
        of its work when :attr:`all_rung`."""
        self.driver_thread: MediaDriver | None = (
            driver
            if settings.on_driver_thread and driver is not None and driver.hosts_agents
            else None
        )
        """The driver whose network thread runs this agent (see module), else None: the agent
        has a thread of its own (``GroupMember`` decides by this)."""
        self.all_rung = bell is not None or self.driver_thread is not None
        """Whether every source of work wakes the agent (the driver runs in this process):
        then a park may be long, a wake ends it."""
        self._wake: Callable[[], object] = (
            self.doorbell.ring if self.driver_thread is None else self._ring_and_wake_driver
        )
        """What every source of the agent's work calls: its doorbell's ring, and on the
        driver's thread the end of that thread's park too."""
        self._fsync_inline = self.driver_thread is not None and settings.follower_fsync_inline
        """A follower fsyncs on the driver's thread, in the cycle that appended, and ACKs in
        it (see module)."""
        self._leader_fsync_inline = self.driver_thread is not None and settings.leader_fsync_inline
        """A leader fsyncs on the driver's thread, once its sender sent the cycle's frames;
        otherwise on the fsync thread (asked for then, on the driver's thread)."""
        self._seen_ring = -1
        """On the driver's thread: the doorbell's word as the last cycle that worked began."""
        self._tick_due_ns = 0
        """On the driver's thread: when a cycle runs though nothing rang (the clock's duties)."""
        self._must_poll = True
        """On the driver's thread: the last cycle left work that rings no one (see module)."""
        self._left = False
        """On the driver's thread: the last working cycle left work that rings no one."""
        self._flusher: LogFlusher | None = None
        self._reaper = PublicationReaper()
        """Closes the publications a role let go of before the driver answered."""
        self._offers = 0
        log.on_commit_wait(self._wake)

    # -- cross-thread ------------------------------------------------------------------------------

    def on_group(self, snapshot: GroupSnapshot) -> None:
        """The controller's listener: take ``snapshot`` on the agent's thread."""
        self._commands.put(snapshot)
        self._wake()

    def rung_only(self) -> bool:
        """Whether the agent may sleep until rung (its idle strategy's ``all_rung``): every
        source of its work rings, and it is not waiting for a follower's back pressure to clear
        (which rings no one). From the agent's thread."""
        if not self.all_rung:
            return False
        replicator = self.replicator
        if replicator is not None:
            return not replicator.sending
        fetcher = self.fetcher
        return fetcher is None or not fetcher.adding_publication

    def write_refusal(self) -> int:
        """0 when this member takes sends now, else the code to refuse them with:
        ``NOT_LEADER`` (not the leader, or its lease not surely valid) or
        ``NOT_ENOUGH_REPLICAS`` (a committed ISR below ``min_isr``). From any thread."""
        replicator = self.replicator
        if self.role is not Role.LEADER or replicator is None or not self._fence.may_act():
            return ResponseCode.NOT_LEADER
        if not replicator.isr.enough:
            return ResponseCode.NOT_ENOUGH_REPLICAS
        return 0

    def epoch_end(self, leader_epoch: int, asked: int) -> EpochEnd | None:
        """The answer to a follower's ``ReplicaEpochEnd(asked)`` if this member leads
        ``leader_epoch`` now (None otherwise). From any thread."""
        if self.role is not Role.LEADER or self.epoch != leader_epoch:
            return None
        return epoch_end(self.epochs, self._log.max_physical_offset, asked)

    # -- the agent ---------------------------------------------------------------------------------

    @property
    def role_name(self) -> str:
        """The agent's thread name."""
        return f"aeromq-replication-{self.group}"

    def on_start(self) -> None:
        """Start the member's fsync thread, unless both roles fsync on the driver's thread."""
        if not (self._fsync_inline and self._leader_fsync_inline):
            self._flusher = LogFlusher(self._log, self._on_flushed, f"replica-fsync-{self.group}")

    def _on_flushed(self) -> None:
        """After each fsync, on the fsync thread: a follower ACKs from here and wakes its
        driver (one hand-off fewer a commit than ringing the agent to ACK); a leader's agent is
        rung only when the fsync may move the high watermark; otherwise, or when the ACK could
        not go, the agent is rung."""
        replicator = self.replicator
        if replicator is not None:
            if replicator.flush_may_commit():
                self._wake()
            return
        fetcher = self.fetcher
        if fetcher is not None and fetcher.ack_flushed():
            driver = self._driver
            if driver is not None:
                driver.wake_network()
            return
        self._wake()

    def _request_flush(self) -> None:
        flusher = self._flusher
        if flusher is None:  # no fsync thread (before on_start in tests, or none needed): inline
            self._log.flush()
            self._wake()
        else:
            flusher.request()

    def _ring_and_wake_driver(self) -> None:
        """A source of work on the driver's thread: the doorbell's word moves (the next cycle
        runs, see :meth:`do_work`) and the thread's park ends."""
        self.doorbell.ring()
        driver = self.driver_thread
        assert driver is not None
        driver.wake_network()

    def do_work(self) -> int:
        """One duty cycle: the controller's snapshots, the frames in, the role's work. On the
        driver's thread, a cycle that nothing rang for returns at once (see module)."""
        work = 0
        now_ns = self._now_ns = time.monotonic_ns()
        if self.driver_thread is not None:
            ring = self.doorbell.prepare()  # before the work: a ring during it runs the next
            if ring == self._seen_ring and now_ns < self._tick_due_ns and not self._must_poll:
                return 0
            self._seen_ring = ring
            self._tick_due_ns = now_ns + _TICK_NS
            work = self._do_work(now_ns)
            self._must_poll = work > 0 or not self.rung_only()  # as an idle strategy resets
            return work
        return self._do_work(now_ns)

    def left_work(self) -> bool:
        """After a cycle on the driver's thread that worked: whether it left work that rings no
        one (frames past the fragment limit, the HW an fsync may move, back pressure)."""
        return self._left or bool(self._reaper.pending) or not self.rung_only()

    def after_send_due(self) -> bool:
        """Whether :meth:`after_send` will fsync (or ask for it) in this cycle: the driver's
        thread has its sender send all it can first (``DynamicCompositeAgent``), so the
        followers have the whole frame while the leader fsyncs. Caller: the driver's thread."""
        replicator = self.replicator
        return replicator is not None and replicator.flush_due

    def after_send(self) -> int:
        """On the driver's thread, after its sender ran in this cycle: a leader's fsync of what
        this cycle replicated (its frames are out), asked of the fsync thread or run here
        (``leader_fsync_inline``); a follower's high watermark from this cycle's frames (its
        ACK is out). Caller: the driver's thread."""
        replicator = self.replicator
        if replicator is None:
            fetcher = self.fetcher
            return 0 if fetcher is None else fetcher.apply_high_watermark(self._now_ns)
        if not replicator.flush_after_send():
            return 0
        self._must_poll = True  # the next cycle moves the HW by this fsync
        self._left = self._left or replicator.flush_may_commit()  # the followers' ACKs came first
        return 1

    def _do_work(self, now_ns: int) -> int:
        work = 0
        commands = self._commands
        while not commands.empty():  # this thread alone takes: not empty stays so until taken
            self._on_snapshot(commands.get_nowait(), now_ns)
            work += 1
        taken = self._from_leader.poll(self._assembler, _FRAGMENT_LIMIT)
        answers = self._from_followers.poll(self._on_follower_frame, _FRAGMENT_LIMIT)
        self._left = taken >= _FRAGMENT_LIMIT or answers >= _FRAGMENT_LIMIT
        work += taken + answers
        if self._reaper.pending:
            work += self._reaper.do_work()
        replicator = self.replicator
        if replicator is not None:
            if self._fence.check():
                self._resign("its lease is not surely valid (fenced)")
                self._fenced(replicator.epoch)
                return work + 1
            work += replicator.do_work(now_ns)
            offers = replicator.offers
        else:
            fetcher = self.fetcher
            if fetcher is None:
                return work
            work += fetcher.do_work(now_ns)
            offers = fetcher.offers
        if offers != self._offers:
            self._offers = offers
            if self._driver is not None and self.driver_thread is None:
                self._driver.wake_network()  # on the driver's thread its sender runs next
        return work

    def on_close(self) -> None:
        """Leave the role, stop the fsync thread and close the subscriptions."""
        if self.replicator is not None:
            self._resign("the broker stops")
        self._stop_following()
        self._log.on_commit_wait(None)
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.close()
        self._reaper.close()
        self._from_leader.close()
        self._from_followers.close()

    # -- frames ------------------------------------------------------------------------------------

    def _on_leader_frame(
        self, buffer: AtomicBuffer, offset: int, length: int, header: Header
    ) -> None:
        frame = self._frame(buffer, offset, length)
        fetcher = self.fetcher
        if fetcher is None or frame is None:
            return
        if isinstance(frame, AppendFrame):
            fetcher.on_append(frame, self._now_ns)
        elif isinstance(frame, HeartbeatFrame):
            fetcher.on_heartbeat(frame, self._now_ns)
        else:
            self.malformed_frames += 1  # a follower's frame on the leader's stream

    def _on_follower_frame(
        self, buffer: AtomicBuffer, offset: int, length: int, header: Header
    ) -> None:
        frame = self._frame(buffer, offset, length)
        replicator = self.replicator
        if replicator is None or frame is None:
            return
        now_ns = self._now_ns
        if isinstance(frame, FetchFrame):
            replicator.on_fetch(frame.member_id, frame.epoch, frame.from_offset, now_ns)
        elif isinstance(frame, AckFrame):
            replicator.on_ack(frame.member_id, frame.epoch, frame.fsynced_offset, frame.leo, now_ns)
        else:
            self.malformed_frames += 1  # a leader's frame on the followers' stream

    def _frame(self, buffer: AtomicBuffer, offset: int, length: int) -> Frame | None:
        """The frame in the message, or None (counted) when it is malformed."""
        frame = decode_or_none(buffer.get_bytes(offset, length))
        if frame is None:
            self.malformed_frames += 1
        return frame

    # -- roles -------------------------------------------------------------------------------------

    def _on_snapshot(self, snapshot: GroupSnapshot, now_ns: int) -> None:
        state = snapshot.state
        if state is None:
            return
        replicator = self.replicator
        if replicator is not None:
            if snapshot.lead and state.epoch == replicator.epoch:
                replicator.on_members(snapshot.members, state.isr)
                return
            self._resign(f"the group's state is now {state.describe()}")
        if snapshot.lead:
            self._lead(snapshot, now_ns)
            return
        leader = snapshot.leader
        if leader is None or leader.id == self.member_id:
            return
        fetcher = self.fetcher
        if fetcher is not None and fetcher.epoch == state.epoch and fetcher.leader == leader:
            return
        self._stop_following()
        self.fetcher = ReplicaFetcher(
            self._aeron,
            self._log,
            self.epochs,
            group=self.group,
            member_id=self.member_id,
            leader=leader,
            epoch=state.epoch,
            settings=self._settings,
            counters=self.fetched,
            request_flush=None if self._fsync_inline else self._request_flush,
            wake=self._wake,
            reaper=self._reaper,
            high_watermark_after_send=self.driver_thread is not None,
            quiet_offers=self.driver_thread is not None,
        )
        self._offers = 0
        self.epoch = state.epoch
        self.role = Role.FOLLOWER
        _log.info(
            "group role: group=%s member=%d role=follower epoch=%d leader=%d leader_grpc=%s",
            self.group,
            self.member_id,
            state.epoch,
            leader.id,
            leader.grpc,
        )

    def _lead(self, snapshot: GroupSnapshot, now_ns: int) -> None:
        state = snapshot.state
        assert state is not None
        self._stop_following()
        leo = self._log.max_physical_offset
        last = self.epochs.last
        if last is None or last.epoch < state.epoch:
            self.epochs.append(state.epoch, leo)  # durable before any byte of the epoch
        self._fence.arm()
        self._log.start_leading()
        replicator = LeaderReplicator(
            self._aeron,
            self._log,
            self.epochs.entries,
            member_id=self.member_id,
            epoch=state.epoch,
            isr=state.isr,
            min_isr=state.min_isr,
            fence=self._fence,
            request_isr=self._request_isr,
            settings=self._settings,
            now_ns=now_ns,
            request_flush=None if self._leader_fsync_inline else self._request_flush,
            reaper=self._reaper,
            flush_after_send=self.driver_thread is not None,
            quiet_offers=self.driver_thread is not None,
        )
        self._offers = 0
        replicator.on_members(snapshot.members, state.isr)
        self.epoch = state.epoch
        self.replicator = replicator
        self.role = Role.LEADER
        self.terms_led += 1
        _log.info(
            "group role: group=%s member=%d role=leader epoch=%d start_offset=%d %s",
            self.group,
            self.member_id,
            state.epoch,
            leo,
            state.describe(),
        )

    def _resign(self, why: str) -> None:
        replicator, self.replicator = self.replicator, None
        self.role = Role.FOLLOWER
        if replicator is None:
            return
        replicator.close()
        failed = self._log.stop_leading()
        _log.warning(
            "group role: group=%s member=%d role=follower epoch=%d: stopped leading, %s "
            "(sends failed, outcome unknown: %d)",
            self.group,
            self.member_id,
            replicator.epoch,
            why,
            failed,
        )

    def _stop_following(self) -> None:
        fetcher, self.fetcher = self.fetcher, None
        if fetcher is not None:
            fetcher.close()
