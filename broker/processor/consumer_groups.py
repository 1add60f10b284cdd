"""Consumer group membership from client heartbeats (RocketMQ's ``ConsumerManager`` with its
``ConsumerIdsChangeListener``), pushed to members at once when it changes.

A client heartbeats with its id and the groups it consumes in (with subscriptions); the first
heartbeat that names a group makes the client a member, a heartbeat that no longer names it, an
unregister, the end of the client's stream, or silence for ``heartbeat_timeout_ms`` removes it.
Every change of a group's members raises the group's ``version`` and is pushed to each open
:class:`MembershipStream` whose client is in the group, so members rebalance without waiting for
their next poll. Admin offset resets are pushed the same way.

Hand-overs: the manager also keeps which member holds each queue (:class:`~common.QueueHolders`):
a member acquires a queue before its first pull of it (:meth:`ConsumerGroupManager.acquire_queue`)
and releases it when it is rebalanced away, with its last commit (``offsets.py``); a member that
leaves the group, by unregistering, the end of its stream or silence, holds nothing any more.
So a moved queue's new owner starts as soon as the old one let go, and a dead or silent holder
is passed over as soon as the group drops it.

No I/O and no carrier here: the gRPC servicer pumps a ``MembershipStream`` (heartbeats in,
``poll`` out); tests drive the clock and ``scan_expired`` by hand. The optional expiry timer is
one daemon thread that calls ``scan_expired``.

Caller: the admin facade, the gRPC servicer. Thread-safe; listeners and pushes run outside the
manager's lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from aeromq.broker._errors import BrokerError, InvalidArgumentError
from aeromq.common import (
    GROUP_MAX_LENGTH,
    VALID_NAME_PATTERN,
    ClientError,
    QueueHolders,
    ResponseCode,
    build_subscription_data,
    compile_sql92,
    is_valid_group_name,
    is_valid_topic_name,
)
from aeromq.proto import admin_pb2, consumer_group_pb2, messages_pb2

__all__ = [
    "MAX_GROUPS_PER_CLIENT",
    "MAX_SUBSCRIPTIONS_PER_GROUP",
    "ConsumerGroupManager",
    "GroupNotFoundError",
    "MembershipListener",
    "MembershipStream",
    "check_group_name",
    "check_subscriptions",
]

_log = logging.getLogger(__name__)

_CLIENT_ID_MAX_LENGTH = 255
MAX_GROUPS_PER_CLIENT = 256
"""Consumer and producer groups one client's heartbeat may name: each is state the broker keeps
(and pushes membership of) until the client goes."""
MAX_SUBSCRIPTIONS_PER_GROUP = 1024
"""Topics one group of a heartbeat may subscribe to."""

MembershipListener = Callable[[consumer_group_pb2.GroupMembership], None]
"""``listener(membership)``: called after a group's members changed (outside any lock)."""


class GroupNotFoundError(BrokerError, KeyError):
    """A consumer group the broker knows neither from members nor from committed offsets."""

    code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def check_subscriptions(data: consumer_group_pb2.ConsumerData) -> None:
    """``InvalidArgumentError`` naming the first subscription of ``data`` that no pull could
    serve: too many of them, a bad topic name, an unknown expression type, or an expression
    that does not parse (a tag expression, or SQL92 as a pull compiles it)."""
    group = data.consumer_group
    if len(data.subscriptions) > MAX_SUBSCRIPTIONS_PER_GROUP:
        raise InvalidArgumentError(
            f"a group may subscribe to at most {MAX_SUBSCRIPTIONS_PER_GROUP} topics",
            group=group,
            subscriptions=len(data.subscriptions),
        )
    for subscription in data.subscriptions:
        topic, expression = subscription.topic, subscription.sub_expression
        if not is_valid_topic_name(topic):
            raise InvalidArgumentError("bad topic in a subscription", group=group, topic=topic)
        try:
            if subscription.expression_type == messages_pb2.SQL92:
                compile_sql92(expression)
            elif subscription.expression_type == messages_pb2.TAG:
                build_subscription_data(topic, expression)
            else:
                raise InvalidArgumentError(
                    "unknown expression type",
                    group=group,
                    topic=topic,
                    expression_type=subscription.expression_type,
                )
        except ClientError as exc:
            raise InvalidArgumentError(
                f"bad subscription expression ({exc})",
                group=group,
                topic=topic,
                expression=expression,
            ) from exc


def check_group_name(group: str) -> None:
    """``InvalidArgumentError`` unless ``group`` follows RocketMQ's group name rule."""
    if not is_valid_group_name(group):
        raise InvalidArgumentError(
            f"group name must be 1-{GROUP_MAX_LENGTH} of {VALID_NAME_PATTERN}", group=group
        )


@dataclass
class _Client:
    client_id: str
    last_heartbeat_ms: int
    consumers: dict[str, consumer_group_pb2.ConsumerData] = field(default_factory=dict)
    producer_groups: frozenset[str] = frozenset()
    stream: MembershipStream | None = None


@dataclass
class _Group:
    members: set[str] = field(default_factory=set)
    version: int = 0


class ConsumerGroupManager:
    """The online members of every consumer group.

    ``heartbeat_timeout_ms``: a client not heard for this long is dropped (``scan_expired``).
    ``clock_ms``: wall clock in epoch milliseconds (injected by tests).
    """

    def __init__(
        self, heartbeat_timeout_ms: int, clock_ms: Callable[[], int] | None = None
    ) -> None:
        if heartbeat_timeout_ms <= 0:
            raise InvalidArgumentError(
                "heartbeat_timeout_ms must be > 0", heartbeat_timeout_ms=heartbeat_timeout_ms
            )
        self.heartbeat_timeout_ms = heartbeat_timeout_ms
        self._clock_ms = clock_ms or _wall_clock_ms
        self._lock = threading.Lock()
        self._clients: dict[str, _Client] = {}
        self._groups: dict[str, _Group] = {}
        self._versions: dict[str, int] = {}  # survives a group going empty: versions only rise
        self._streams: set[MembershipStream] = set()
        self._listeners: list[MembershipListener] = []
        self._holders = QueueHolders()
        self._timer: threading.Thread | None = None
        self._timer_stop = threading.Event()
        self._clients_known = threading.Event()  # set by a new client: the expiry timer wakes

    # -- heartbeats --------------------------------------------------------------------------

    def heartbeat(
        self, request: consumer_group_pb2.HeartbeatRequest, stream: MembershipStream | None = None
    ) -> consumer_group_pb2.HeartbeatResponse:
        """Register or renew ``request.client_id`` with exactly the groups it names; returns
        the membership of each of them. ``stream`` binds the client to a push stream."""
        client_id = request.client_id
        if not client_id or len(client_id) > _CLIENT_ID_MAX_LENGTH:
            raise InvalidArgumentError("client_id must be 1-255 characters", client_id=client_id)
        groups = len(request.consumers) + len(request.producer_groups)
        if groups > MAX_GROUPS_PER_CLIENT:
            raise InvalidArgumentError(
                f"a client may be in at most {MAX_GROUPS_PER_CLIENT} groups",
                client_id=client_id,
                groups=groups,
            )
        consumers: dict[str, consumer_group_pb2.ConsumerData] = {}
        for data in request.consumers:
            check_group_name(data.consumer_group)
            check_subscriptions(data)
            consumers[data.consumer_group] = data
        for group in request.producer_groups:
            check_group_name(group)
        now_ms = self._clock_ms()
        with self._lock:
            client = self._clients.get(client_id)
            if client is None:
                client = self._clients[client_id] = _Client(client_id, now_ms)
                self._clients_known.set()
                _log.info("client registered: client_id=%s groups=%s", client_id, sorted(consumers))
            client.last_heartbeat_ms = now_ms
            client.producer_groups = frozenset(request.producer_groups)
            if stream is not None:
                client.stream = stream
            changed = self._set_groups_locked(client, consumers)
            memberships = [self._membership_locked(group) for group in sorted(consumers)]
        self._publish(changed)
        return consumer_group_pb2.HeartbeatResponse(
            memberships=memberships, heartbeat_timeout_ms=self.heartbeat_timeout_ms
        )

    def unregister(
        self, client_id: str, groups: Iterable[str] = (), *, stream: MembershipStream | None = None
    ) -> list[str]:
        """Remove the client from ``groups`` (every group, and the client itself, when empty);
        returns the groups that changed. With ``stream``, only if the client is still bound to
        that stream (a client that reconnected on a new stream stays)."""
        wanted = set(groups)
        with self._lock:
            client = self._clients.get(client_id)
            if client is None or (stream is not None and client.stream is not stream):
                return []
            if wanted:
                keep = {g: d for g, d in client.consumers.items() if g not in wanted}
                changed = self._set_groups_locked(client, keep)
            else:
                changed = self._set_groups_locked(client, {})
                del self._clients[client_id]
                _log.info("client unregistered: client_id=%s", client_id)
        self._publish(changed)
        return [m.consumer_group for m in changed]

    def scan_expired(self, now_ms: int | None = None) -> list[str]:
        """Drop every client not heard for ``heartbeat_timeout_ms``; returns their ids."""
        now = self._clock_ms() if now_ms is None else now_ms
        deadline = now - self.heartbeat_timeout_ms
        changed: list[consumer_group_pb2.GroupMembership] = []
        with self._lock:
            expired = [c for c in self._clients.values() if c.last_heartbeat_ms < deadline]
            for client in expired:
                changed.extend(self._set_groups_locked(client, {}))
                del self._clients[client.client_id]
        for client in expired:
            _log.warning(
                "client expired: client_id=%s silent_ms=%d",
                client.client_id,
                now - client.last_heartbeat_ms,
            )
        self._publish(_latest(changed))
        return [c.client_id for c in expired]

    # -- queries -----------------------------------------------------------------------------

    def membership(self, group: str) -> consumer_group_pb2.GroupMembership:
        """The group's members now (sorted ids) and version; an empty list when none."""
        with self._lock:
            return self._membership_locked(group)

    def groups(self) -> list[str]:
        """Groups with at least one online member, sorted."""
        with self._lock:
            return sorted(name for name, g in self._groups.items() if g.members)

    def client_count(self) -> int:
        with self._lock:
            return len(self._clients)

    def subscribed_topics(self, group: str) -> list[str]:
        """Topics the group's online members subscribe to, sorted."""
        with self._lock:
            return sorted(self._subscriptions_locked(group))

    def message_model(self, group: str) -> admin_pb2.MessageModel.ValueType:
        """The group's message model (``admin_pb2.MessageModel``) from its members'
        heartbeats; CLUSTERING when no member says."""
        with self._lock:
            found = self._groups.get(group)
            for client_id in sorted(found.members if found else ()):
                return self._clients[client_id].consumers[group].message_model
        return admin_pb2.CLUSTERING

    def _subscriptions_locked(self, group: str) -> set[str]:
        found = self._groups.get(group)
        topics: set[str] = set()
        for client_id in found.members if found else ():
            data = self._clients[client_id].consumers[group]
            topics.update(s.topic for s in data.subscriptions)
        return topics

    # -- queue holders (hand-overs) ----------------------------------------------------------

    def acquire_queue(
        self, group: str, topic: str, queue_id: int, client_id: str, force: bool = False
    ) -> str:
        """Make ``client_id`` the holder of the group's queue (topic, queue id) unless a live
        member of the group still holds it (``force``: anyway). Returns ``""`` when granted,
        else the holder's id. Caller: the offset processor (an acquiring offset query)."""
        if not client_id:
            raise InvalidArgumentError("acquiring a queue needs a client_id", group=group)
        with self._lock:
            found = self._groups.get(group)
            members = found.members if found is not None else set()
            holder = self._holders.acquire(
                group, (topic, queue_id), client_id, members.__contains__, force
            )
        if holder:
            _log.debug(
                "queue still held: group=%s topic=%s queue_id=%d holder=%s asked_by=%s",
                group, topic, queue_id, holder, client_id,
            )  # fmt: skip
        return holder

    def release_queue(self, group: str, topic: str, queue_id: int, client_id: str) -> bool:
        """``client_id`` lets go of the group's queue; False when it did not hold it."""
        with self._lock:
            return self._holders.release(group, (topic, queue_id), client_id)

    def queue_holder(self, group: str, topic: str, queue_id: int) -> str:
        """The client holding the group's queue (``""``: nobody)."""
        with self._lock:
            return self._holders.holder(group, (topic, queue_id))

    # -- pushes ------------------------------------------------------------------------------

    def add_listener(self, listener: MembershipListener) -> None:
        self._listeners = [*self._listeners, listener]

    def open_stream(self) -> MembershipStream:
        """A push stream: feed it the client's heartbeats, ``poll`` it for what to send."""
        stream = MembershipStream(self)
        with self._lock:
            self._streams.add(stream)
        return stream

    def push_offset_reset(self, reset: consumer_group_pb2.OffsetReset) -> int:
        """Push an offset reset to the online members of its group; returns how many."""
        with self._lock:
            found = self._groups.get(reset.consumer_group)
            members = set(found.members) if found else set()
            streams = [s for s in self._streams if s.client_id in members]
        for stream in streams:
            stream.push(consumer_group_pb2.HeartbeatResponse(offset_resets=[reset]))
        return len(streams)

    def _stream_closed(self, stream: MembershipStream) -> None:
        with self._lock:
            self._streams.discard(stream)
        if stream.client_id is not None:
            self.unregister(stream.client_id, stream=stream)

    def _publish(self, changed: Sequence[consumer_group_pb2.GroupMembership]) -> None:
        if not changed:
            return
        with self._lock:
            targets: list[tuple[MembershipStream, list[consumer_group_pb2.GroupMembership]]] = []
            for stream in self._streams:
                client = self._clients.get(stream.client_id or "")
                if client is None or client.stream is not stream:
                    continue
                mine = [m for m in changed if m.consumer_group in client.consumers]
                if mine:
                    targets.append((stream, mine))
        for stream, memberships in targets:
            stream.push(consumer_group_pb2.HeartbeatResponse(memberships=memberships))
        for membership in changed:
            _log.info(
                "group membership changed: group=%s version=%d members=%s",
                membership.consumer_group,
                membership.version,
                list(membership.consumer_ids),
            )
            for listener in self._listeners:
                try:
                    listener(membership)
                except Exception:  # a listener's failure must not stop the others
                    _log.exception(
                        "membership listener failed: group=%s", membership.consumer_group
                    )

    # -- state changes (under the lock) ------------------------------------------------------

    def _set_groups_locked(
        self, client: _Client, consumers: dict[str, consumer_group_pb2.ConsumerData]
    ) -> list[consumer_group_pb2.GroupMembership]:
        before = set(client.consumers)
        after = set(consumers)
        client.consumers = consumers
        for group in after - before:
            self._groups.setdefault(group, _Group()).members.add(client.client_id)
        for group in before - after:
            self._holders.forget(group, client.client_id)
            found = self._groups.get(group)
            if found is not None:
                found.members.discard(client.client_id)
                if not found.members:
                    del self._groups[group]
        changed = sorted(before ^ after)
        for group in changed:
            self._versions[group] = self._versions.get(group, 0) + 1
        return [self._membership_locked(group) for group in changed]

    def _membership_locked(self, group: str) -> consumer_group_pb2.GroupMembership:
        found = self._groups.get(group)
        return consumer_group_pb2.GroupMembership(
            consumer_group=group,
            consumer_ids=sorted(found.members) if found else [],
            version=self._versions.get(group, 0),
        )

    # -- expiry timer ------------------------------------------------------------------------

    def start_expiry_timer(self, interval_ms: int | None = None) -> None:
        """Run ``scan_expired`` every ``interval_ms`` (default: a quarter of the timeout,
        at most 1 s) on a daemon thread until ``close``; while no client is registered the
        thread sleeps until one is (an idle broker's wake-ups)."""
        if self._timer is not None:
            return
        period_s = (interval_ms or min(1_000, max(10, self.heartbeat_timeout_ms // 4))) / 1000.0
        stop, known = self._timer_stop, self._clients_known

        def run() -> None:
            while not stop.is_set():
                if not self._clients:
                    known.clear()
                    if not self._clients:  # a client registered after the clear set it again
                        known.wait()
                if stop.wait(period_s):
                    return
                try:
                    self.scan_expired()
                except Exception:
                    _log.exception("consumer expiry scan failed")

        self._timer = threading.Thread(target=run, name="aeromq-group-expiry", daemon=True)
        self._timer.start()

    def close(self) -> None:
        """Stop the expiry timer and end every open stream."""
        self._timer_stop.set()
        self._clients_known.set()  # the timer may sleep until a client comes
        if self._timer is not None:
            self._timer.join(timeout=5.0)
            self._timer = None
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.end()


def _latest(
    changes: Sequence[consumer_group_pb2.GroupMembership],
) -> list[consumer_group_pb2.GroupMembership]:
    """One membership per group: the last (highest version) of ``changes``."""
    by_group: dict[str, consumer_group_pb2.GroupMembership] = {}
    for membership in changes:
        by_group[membership.consumer_group] = membership
    return [by_group[group] for group in sorted(by_group)]


class MembershipStream:
    """One client's push stream: heartbeats in (``on_heartbeat``), responses out (``poll``).

    The first heartbeat is answered with the membership of each of the client's groups;
    afterwards the stream carries each change of those groups (never an older version than it
    sent) and offset resets. ``close`` (the carrier saw the stream end) removes the client from
    its groups at once, unless it is bound to a newer stream by then; ``end`` (the broker shuts
    down) only wakes the poller.
    """

    def __init__(self, manager: ConsumerGroupManager) -> None:
        self._manager = manager
        self._cond = threading.Condition()
        self._pending: deque[consumer_group_pb2.HeartbeatResponse] = deque()
        self._sent_versions: dict[str, int] = {}
        self._ended = False
        self._waker: Callable[[], None] | None = None
        self.client_id: str | None = None

    def set_waker(self, waker: Callable[[], None]) -> None:
        """Call ``waker`` (from any thread) whenever a response is queued or the stream ends:
        an event-loop carrier waits on it instead of blocking a thread in ``poll``."""
        self._waker = waker

    def on_heartbeat(self, request: consumer_group_pb2.HeartbeatRequest) -> None:
        """Apply a heartbeat from the stream's client; a failure is queued as a status."""
        if self.client_id is not None and request.client_id != self.client_id:
            self.push(
                _failure(
                    InvalidArgumentError(
                        "client_id changed on a stream", was=self.client_id, now=request.client_id
                    )
                )
            )
            return
        first = self.client_id is None
        try:
            self.client_id = request.client_id
            response = self._manager.heartbeat(request, stream=self)
        except BrokerError as exc:
            self.client_id = None if first else self.client_id
            self.push(_failure(exc))
            return
        if first:
            self.push(response)

    def push(self, response: consumer_group_pb2.HeartbeatResponse) -> None:
        with self._cond:
            if self._ended:
                return
            self._pending.append(response)
            self._cond.notify_all()
        if self._waker is not None:
            self._waker()

    def poll(self, timeout_s: float) -> consumer_group_pb2.HeartbeatResponse | None:
        """The next response to send (pending ones merged), or None after ``timeout_s`` or
        once the stream ended."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not self._pending and not self._ended:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
            if not self._pending:
                return None
            batch = list(self._pending)
            self._pending.clear()
        return self._merge(batch)

    @property
    def ended(self) -> bool:
        return self._ended

    def end(self) -> None:
        """Wake the poller for good: the stream sends nothing more."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()
        if self._waker is not None:
            self._waker()

    def close(self) -> None:
        """The carrier's stream ended: end it and remove its client from its groups."""
        self.end()
        self._manager._stream_closed(self)

    def _merge(
        self, batch: list[consumer_group_pb2.HeartbeatResponse]
    ) -> consumer_group_pb2.HeartbeatResponse | None:
        merged = consumer_group_pb2.HeartbeatResponse(
            heartbeat_timeout_ms=self._manager.heartbeat_timeout_ms
        )
        latest: dict[str, consumer_group_pb2.GroupMembership] = {}
        for response in batch:
            if response.status.code != 0 and merged.status.code == 0:
                merged.status.CopyFrom(response.status)
            for membership in response.memberships:
                group = membership.consumer_group
                if membership.version >= latest.get(group, membership).version:
                    latest[group] = membership
            merged.offset_resets.extend(response.offset_resets)
        for group in sorted(latest):
            membership = latest[group]
            if membership.version <= self._sent_versions.get(group, 0):
                continue  # sent already (a push can overtake the first answer)
            self._sent_versions[group] = membership.version
            merged.memberships.append(membership)
        if not merged.memberships and not merged.offset_resets and merged.status.code == 0:
            first_answer = any(r.heartbeat_timeout_ms for r in batch)
            return merged if first_answer else None
        return merged


def _failure(exc: BrokerError) -> consumer_group_pb2.HeartbeatResponse:
    response = consumer_group_pb2.HeartbeatResponse()
    response.status.code = exc.code
    response.status.message = str(exc)
    return response
