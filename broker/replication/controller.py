"""The group controller: one member's link to etcd. It keeps the member's lease and key, watches
the group's keys, runs the election (:mod:`~aeromq.broker.replication.election`) and the
leader's ISR changes as compare-and-swaps of ``state``, and tells the replication agent what it
is now (a :class:`GroupSnapshot` per change).

Its thread takes every input from one queue (watch events, a lost lease, the agent's ISR
requests and fencing) and waits on it until the election's next deadline; etcd calls block
only this thread. What it decides:

- **lead** only an epoch this process won by its own compare-and-swap (``snapshot.lead``); a
  state that names this member for an epoch it did not win in this run (a restart, a lost
  lease, a fence) is given up first by a compare-and-swap to ``leader: null``, before the
  member's key is put again: a restarted member always comes back as a follower;
- **follow** the leader ``state`` names while its key exists; a member key whose process is
  provably gone (on this host: :mod:`~aeromq.broker.replication.member_process`) has its lease
  revoked (by a member that does not lead), so that a killed leader's key, or a dead member's
  counted as live in an election, goes at once rather than a TTL later;
- **ISR changes** come from the leader's agent and are written only while ``state`` still
  names this member for the agent's epoch; the agent counts the new set once the write is
  seen (the snapshot), the union until then.

Caller: the broker (construction, :meth:`start`, :meth:`stop`); the agent (through
:meth:`request_isr`, :meth:`fenced`); the processors read :attr:`snapshot`. Affects: keys of the
group in etcd.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from aeromq.broker.etcd import (
    EtcdClient,
    EtcdError,
    EventType,
    KeyValue,
    PrefixWatcher,
    WatchEvent,
)
from aeromq.broker.replication.election import (
    Election,
    ElectionConfig,
    GroupView,
    ProposeState,
    PutPosition,
)
from aeromq.broker.replication.group_state import (
    GroupKeys,
    GroupState,
    GroupStateStore,
    VersionedState,
    versioned,
)
from aeromq.broker.replication.membership import MemberInfo, Membership, Position

__all__ = ["GroupController", "GroupListener", "GroupSnapshot"]

_log = logging.getLogger(__name__)

_TICK_S: Final = 0.1
"""The controller looks at its duties at least this often (retries after etcd errors)."""
_START_TIMEOUT_S: Final = 30.0


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """The group as this member knows it: ``state`` (None before it is read), the live
    ``members`` and whether this process leads ``state.epoch`` (``lead``: it won that
    election and has not given it up)."""

    state: GroupState | None = None
    members: Mapping[int, MemberInfo] = field(default_factory=dict)
    lead: bool = False

    @property
    def leader(self) -> MemberInfo | None:
        """The leader's member key, when the state names one and its key exists."""
        state = self.state
        if state is None or state.leader is None:
            return None
        return self.members.get(state.leader)


class GroupListener(Protocol):
    """Who the controller tells about each new snapshot (the replication agent's proxy)."""

    def on_group(self, snapshot: GroupSnapshot) -> None:
        """Called on the controller's thread with every new snapshot."""


PositionSource = Callable[[], tuple[int, int]]
"""``() -> (last epoch of the epoch file, LEO)``: this member's log, for elections."""


class GroupController:
    """Member ``info.id`` of ``group`` (see module)."""

    def __init__(
        self,
        client: EtcdClient,
        group: str,
        info: MemberInfo,
        *,
        group_size: int,
        min_isr: int,
        lease_ttl_ms: int,
        position: PositionSource,
        listener: GroupListener,
        election: ElectionConfig | None = None,
    ) -> None:
        self._client = client
        self.keys = GroupKeys(group)
        self.info = info
        self.member_id = info.id
        self._initial = GroupState.initial(group_size, min_isr)
        self._store = GroupStateStore(client, self.keys)
        self.membership = Membership(client, self.keys, info.id, lease_ttl_ms, self._lease_lost)
        self._position = position
        self._listener = listener
        self.election = Election(election or ElectionConfig(info.id))
        self._events: queue.SimpleQueue[tuple[str, object]] = queue.SimpleQueue()
        self._state: VersionedState | None = None
        self._members: dict[int, MemberInfo] = {}
        self._member_keys: dict[int, KeyValue] = {}
        """Each member's key as last read (its lease among the rest)."""
        self._gone_checked_s = 0.0
        self._positions: dict[int, Position] = {}
        self._won_epoch = -1  # the epoch this process leads (-1: none)
        self._joined = False
        self._isr_request: tuple[int, tuple[int, ...]] | None = None
        self._watcher_revision = 0
        self._watcher: PrefixWatcher | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._last_error_s = 0.0
        self.snapshot = GroupSnapshot()
        """The latest snapshot (read from any thread)."""
        self._changed = threading.Condition()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Create the group's state if it has none, give up a leadership this member held in
        an earlier run, put this member's key on a new lease, and start watching and
        electing."""
        deadline_s = time.monotonic() + _START_TIMEOUT_S
        while True:
            try:
                self._state = self._store.create_once(self._initial)
                self._give_up_leadership()
                self.membership.join(self.info)
                self._joined = True
                self._read_all()
                break
            except EtcdError as exc:
                if time.monotonic() > deadline_s:
                    raise
                _log.warning("group controller: etcd not ready, retrying: %s", exc)
                time.sleep(0.2)
        self._running = True
        self._start_watch()
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-group-{self.keys.group}", daemon=True
        )
        self._thread.start()
        self._events.put(("tick", None))

    def stop(self) -> None:
        """Stop the thread and the watch, and leave the group (the lease is revoked: the others
        see this member gone at once)."""
        if not self._running:
            return
        self._running = False
        self._events.put(("stop", None))
        if self._thread is not None:
            self._thread.join(5)
        self._cancel_watch()
        self.membership.leave()

    def wait_for(self, condition: Callable[[GroupSnapshot], bool], timeout_s: float) -> bool:
        """Wait until ``condition(snapshot)`` holds; False after ``timeout_s``."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self.snapshot), timeout_s)

    # -- inputs from other threads -------------------------------------------------------------

    def request_isr(self, epoch: int, isr: Sequence[int]) -> None:
        """The leader of ``epoch`` asks for the committed ISR to become ``isr`` (replaces an
        earlier request not yet written)."""
        self._events.put(("isr", (epoch, tuple(isr))))

    def fenced(self, epoch: int) -> None:
        """The leader of ``epoch`` fenced itself (its lease was not surely valid): give the
        leadership up in etcd."""
        self._events.put(("fenced", epoch))

    def _lease_lost(self, error: EtcdError) -> None:
        self._events.put(("lease_lost", error))

    def _on_watch(self, events: Sequence[WatchEvent]) -> None:
        self._events.put(("watch", tuple(events)))

    def _on_watch_error(self, error: Exception) -> None:
        self._events.put(("watch_error", error))

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        while self._running:
            timeout_s = _TICK_S
            deadline_ms = self.election.deadline_ms
            if deadline_ms is not None:
                timeout_s = min(timeout_s, max(0.0, (deadline_ms - _now_ms()) / 1000))
            try:
                kind, value = self._events.get(timeout=timeout_s)
            except queue.Empty:
                kind, value = "tick", None
            if kind == "stop":
                return
            try:
                self._handle(kind, value)
                self._duties()
            except EtcdError as exc:
                self._warn_rarely("group controller: etcd call failed, retrying: %s", exc)
            except Exception:
                _log.exception("group controller failed a step: group=%s", self.keys.group)
            self._publish()

    def _handle(self, kind: str, value: object) -> None:
        if kind == "watch":
            assert isinstance(value, tuple)
            for event in value:
                self._apply(event)
        elif kind == "isr":
            assert isinstance(value, tuple)
            self._isr_request = value
        elif kind == "fenced":
            if value == self._won_epoch:
                _log.warning(
                    "group leader fenced itself, giving leadership up: group=%s member=%d epoch=%s",
                    self.keys.group,
                    self.member_id,
                    value,
                )
                self._won_epoch = -1
        elif kind == "lease_lost":
            _log.warning(
                "group member's lease ended, joining again: group=%s member=%d (%s)",
                self.keys.group,
                self.member_id,
                value,
            )
            self._won_epoch = -1
            self._joined = False
            self._publish()  # the agent stops leading before anything else
        elif kind == "watch_error":
            _log.warning("group watch ended, reading the group again: %s", value)
            self._cancel_watch()
            self._read_all()
            self._start_watch()

    def _duties(self) -> None:
        if not self._joined:
            self._give_up_leadership()
            self.membership.join(self.info)
            self._joined = True
            self._read_all()
        state = self._state
        if state is not None and state.state.leader == self.member_id:
            if state.state.epoch != self._won_epoch:
                self._give_up_leadership()
            elif self._isr_request is not None:
                self._write_isr(state)
        else:
            self._revoke_gone_members()
        self._elect()

    def _revoke_gone_members(self) -> None:
        """Revoke the lease of every other member's key whose process is provably gone (at
        most once a tick: a few reads of ``/proc``); the watch then deletes its keys."""
        now_s = time.monotonic()
        if now_s - self._gone_checked_s < _TICK_S:
            return
        self._gone_checked_s = now_s
        for member_id, kv in list(self._member_keys.items()):
            if member_id != self.member_id and self.membership.revoke_if_gone(member_id, kv):
                self._member_keys.pop(member_id, None)

    def _elect(self) -> None:
        view = GroupView(self._state, frozenset(self._members), dict(self._positions))
        alive = self._joined and self.member_id in self._members and self.membership.lease_valid()
        action = self.election.step(view, _now_ms(), alive, self._position())
        if isinstance(action, PutPosition):
            try:
                self.membership.put_position(action.position)
            except EtcdError:
                self.election.position_put(_now_ms(), ok=False)
                raise
            self._positions[self.member_id] = action.position
            self.election.position_put(_now_ms())
            self._elect()  # the others may have posted already
        elif isinstance(action, ProposeState):
            result = self._store.compare_and_swap(action.expected, action.new)
            self.election.proposed(result.succeeded, _now_ms())
            if result.current is not None:
                self._state = result.current
            if result.succeeded:
                self._won_epoch = action.new.epoch
                _log.info(
                    "group leader elected: group=%s member=%d %s",
                    self.keys.group,
                    self.member_id,
                    action.new.describe(),
                )
        elif self.election.last_refusal and action is None:
            self._warn_rarely(
                "group has no leader and cannot elect one: group=%s %s",
                self.keys.group,
                self.election.last_refusal,
            )

    def _write_isr(self, state: VersionedState) -> None:
        request = self._isr_request
        assert request is not None
        epoch, isr = request
        if epoch != state.state.epoch or isr == state.state.isr:
            self._isr_request = None
            return
        result = self._store.compare_and_swap(state, state.state.with_isr(isr))
        if result.current is not None:
            self._state = result.current
        if result.succeeded:
            self._isr_request = None
            _log.info(
                "group ISR changed: group=%s %s",
                self.keys.group,
                state.state.with_isr(isr).describe(),
            )

    def _give_up_leadership(self) -> None:
        """While ``state`` names this member for an epoch it does not lead, write ``leader:
        null`` (same epoch and ISR) so that the group elects; the others' elections then run
        as usual."""
        for _ in range(10):
            state = self._state
            if state is None or state.state.leader != self.member_id:
                return
            if state.state.epoch == self._won_epoch:
                return
            resigned = state.state.with_leader(None, state.state.epoch, state.state.isr)
            result = self._store.compare_and_swap(state, resigned)
            self._state = result.current
            if result.succeeded:
                _log.info(
                    "group leadership given up: group=%s member=%d epoch=%d",
                    self.keys.group,
                    self.member_id,
                    state.state.epoch,
                )
                return

    # -- etcd's view -------------------------------------------------------------------------

    def _read_all(self) -> None:
        found = self._client.get_prefix(self.keys.prefix)
        self._members.clear()
        self._member_keys.clear()
        self._positions.clear()
        for kv in found.kvs:
            self._apply(WatchEvent(EventType.PUT, kv))
        self._watcher_revision = found.revision + 1

    def _apply(self, event: WatchEvent) -> None:
        kv, keys = event.kv, self.keys
        put = event.type is EventType.PUT
        try:
            if kv.key == keys.state:
                if put:
                    self._state = versioned(kv)
                return
            member = keys.member_id_of(kv.key, keys.members_prefix)
            if member is not None:
                if put:
                    self._members[member] = MemberInfo.from_json(kv.value)
                    self._member_keys[member] = kv
                else:
                    self._members.pop(member, None)
                    self._member_keys.pop(member, None)
                return
            member = keys.member_id_of(kv.key, keys.positions_prefix)
            if member is not None:
                if put:
                    self._positions[member] = Position.from_json(kv.value)
                else:
                    self._positions.pop(member, None)
        except Exception as exc:
            _log.warning("group key ignored: key=%s %s", kv.key, exc)

    def _start_watch(self) -> None:
        self._watcher = self._client.watch_prefix(
            self.keys.prefix,
            self._on_watch,
            start_revision=self._watcher_revision,
            on_error=self._on_watch_error,
        )

    def _cancel_watch(self) -> None:
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.cancel()

    def _publish(self) -> None:
        state = self._state.state if self._state is not None else None
        lead = (
            state is not None
            and self._joined
            and state.leader == self.member_id
            and state.epoch == self._won_epoch
        )
        snapshot = GroupSnapshot(state, dict(self._members), lead)
        if snapshot == self.snapshot:
            return
        self.snapshot = snapshot
        with self._changed:
            self._changed.notify_all()
        self._listener.on_group(snapshot)

    def _warn_rarely(self, message: str, *args: object) -> None:
        """A warning that repeats while a condition lasts: at most one every 5 s."""
        now_s = time.monotonic()
        if now_s - self._last_error_s > 5.0:
            self._last_error_s = now_s
            _log.warning(message, *args)


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000
