"""``RebalanceService``: decides which queues this consumer owns, and drives the pull tasks.

A run (:meth:`RebalanceService.do_rebalance`, RocketMQ's ``RebalanceImpl.doRebalance`` with
``RebalanceLitePullImpl``), for each subscribed topic:

1. the topic's queues (its route) and the group's consumer ids; when a broker's push of the
   members triggered the run, the pushed ids and the queues of the last run (no call before
   the drops, so a queue's previous owner releases it quickly), else both asked for;
2. CLUSTERING: allocate with the strategy (sorted queues and ids); BROADCASTING: every queue;
3. compare with the queues owned now. A dropped queue: its process queue is marked dropped,
   its pull task stops, its consumed offset is committed if auto commit is on, and its
   committed offset is sent to the broker with the queue's release, then forgotten. A new
   queue gets its start offset *before* it is owned (so before it shows in ``assignment()``
   and, for the first run, before ``start()`` returns):
   :meth:`RebalanceService.compute_pull_from_where`, the committed offset, else
   ``consume_from_where`` (LAST_OFFSET = the max offset, FIRST_OFFSET = 0, TIMESTAMP = the
   offset searched by ``consume_timestamp_ms``), except that a queue which
   appeared in the route after this consumer first saw the topic starts at its min offset
   (it was created while the group consumed: everything in it is new). A queue whose start
   offset the broker cannot give is left for the next run (the run counts as unbalanced).
   Then its pull task starts at once. In CLUSTERING the queue is *taken over*
   (``QueueState.take_over``): before its first pull the task acquires it from the broker,
   which grants it when nobody else holds it, when its holder released it, or when the holder
   is no longer a live member of the group (it left, or its heartbeats stopped); the grant
   carries the group's committed offset, where the task then starts. A holder still in the
   group got the same membership push: its run drops the queue, commits what was consumed and
   releases it in one call (:meth:`RebalanceService.release`), so the new owner starts a few
   ms after that, at exactly that offset (nothing delivered twice, no fixed delay; RocketMQ's
   lite pull consumer re-delivers up to 5 s of messages). A live holder that has not let go
   after ``release_timeout_ms`` is passed over (the task forces the take-over);
4. the optional ``message_queue_listener(topic, all_queues, owned_queues)`` hears of changes.

A run is *unbalanced* when a topic had no route or no members, this consumer was not among
the members, or a start offset could not be had. The service runs once in ``start()`` (in the
caller's thread), then on its thread at once when a broker pushes a membership change, a
subscription changes or the consumer's route check sees a subscribed topic's queues change
(:meth:`RebalanceService.on_route`), and otherwise as a safety net every
``rebalance_interval_ms`` (20 s), or ``rebalance_retry_interval_ms`` (1 s) after an
unbalanced run. RocketMQ relies on the periodic run alone (up to 20 s to react).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence

from aeromq.client import ClientError, MessageQueue, SubscriptionData
from aeromq.consumer._broker_api import BrokerApi, QueueGrant
from aeromq.consumer.allocate import AllocateMessageQueueStrategy
from aeromq.consumer.assigned_queues import AssignedMessageQueue, QueueState
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig, MessageModel
from aeromq.consumer.consume_request_cache import ConsumeRequestCache
from aeromq.consumer.offset_store import OffsetStore, ReadOffsetType
from aeromq.consumer.pull_task import PullTaskTable

__all__ = ["MessageQueueListener", "RebalanceService"]

_log = logging.getLogger(__name__)

MessageQueueListener = Callable[[str, set[MessageQueue], set[MessageQueue]], None]
"""``listener(topic, all_queues, owned_queues)`` after the owned queues of a topic changed."""


class RebalanceService:
    """Queue ownership by allocation, and its thread (see the module doc)."""

    def __init__(
        self,
        *,
        config: LitePullConsumerConfig,
        client_id: str,
        strategy: AllocateMessageQueueStrategy,
        broker_api: BrokerApi,
        assigned: AssignedMessageQueue,
        tasks: PullTaskTable,
        offset_store: OffsetStore,
        cache: ConsumeRequestCache,
        listener: MessageQueueListener | None = None,
        subscriptions: dict[str, SubscriptionData] | None = None,
    ) -> None:
        self.config = config
        self.client_id = client_id
        self.strategy = strategy
        self.listener = listener
        self._api = broker_api
        self._assigned = assigned
        self._tasks = tasks
        self._offset_store = offset_store
        self._cache = cache
        self.lock = threading.RLock()
        """Held by a run and by the consumer while it changes subscriptions."""
        self.subscriptions: dict[str, SubscriptionData] = (
            subscriptions if subscriptions is not None else {}
        )
        """Topic -> subscription; shared with the consumer, changed under :attr:`lock`."""
        self.topic_queues: dict[str, set[MessageQueue]] = {}
        self._first_queues: dict[str, frozenset[MessageQueue]] = {}
        """The queues of each topic's first route this consumer saw (see the module doc)."""
        self._pushed_members: dict[str, list[str]] = {}
        self._push_pending = False
        self._wakeup = threading.Event()
        self._running = False
        self._thread: threading.Thread | None = None
        self._first_interval_ms = 0
        self.runs = 0
        self.last_balanced = False
        self.on_release: Callable[[MessageQueue], None] | None = None
        """Called with a dropped queue before its offset is persisted and it is released (the
        push consumer finishes or forgets the queue's messages in hand, ``consumer.push``)."""

    # -- membership and wakeups ---------------------------------------------------------

    def on_membership(self, consumer_group: str, consumer_ids: Sequence[str]) -> None:
        """A broker pushed the group's members: rebalance at once. Caller: the broker API."""
        if consumer_group != self.config.consumer_group:
            return
        self._pushed_members[consumer_group] = list(consumer_ids)
        self._push_pending = True
        self._wakeup.set()

    def wakeup(self) -> None:
        """Run as soon as possible on the service thread."""
        self._wakeup.set()

    def run_now(self) -> bool:
        """One run in the caller's thread (a subscription changed); whether it was balanced.
        Errors are logged, not raised: the service thread tries again."""
        try:
            return self.do_rebalance()
        except Exception:
            _log.exception("rebalance failed")
            return False

    def on_route(self, topic: str, queues: set[MessageQueue]) -> None:
        """The consumer's route check saw ``topic``'s queues: rebalance at once when they
        differ from the last run's. Caller: the consumer's metadata check."""
        if topic in self.subscriptions and queues != self.topic_queues.get(topic):
            _log.info("route of topic=%s changed: %d queues, rebalancing", topic, len(queues))
            self._wakeup.set()

    def forget_topic(self, topic: str) -> None:
        """The topic is no longer subscribed: forget its route and members."""
        self.topic_queues.pop(topic, None)
        self._first_queues.pop(topic, None)

    # -- the run ------------------------------------------------------------------------

    def do_rebalance(self, use_pushed_members: bool = False) -> bool:
        """One run over every subscribed topic; whether it was balanced."""
        with self.lock:
            self.runs += 1
            balanced = True
            for topic in list(self.subscriptions):
                try:
                    if not self._rebalance_topic(topic, use_pushed_members):
                        balanced = False
                except ClientError as error:
                    _log.warning("rebalance of topic=%s failed: %s", topic, error)
                    balanced = False
            self.last_balanced = balanced
            return balanced

    def _members(self, topic: str, use_pushed: bool) -> list[str]:
        group = self.config.consumer_group
        if use_pushed and group in self._pushed_members:
            return self._pushed_members[group]
        members = self._api.consumer_ids(group, topic)
        return members

    def _rebalance_topic(self, topic: str, use_pushed: bool) -> bool:
        previous_queues = self.topic_queues.get(topic)
        queues = previous_queues if use_pushed else None
        if not queues:  # a push needs no fresh route: drop what moved away at once
            queues = self.topic_queues[topic] = self._api.fetch_subscribe_queues(topic)
        if not queues:
            _log.warning("rebalance: topic=%s has no queues (no route yet?)", topic)
            return False
        self._first_queues.setdefault(topic, frozenset(queues))
        if self.config.message_model is MessageModel.BROADCASTING:
            return self._update_owned(topic, queues, set(queues))
        members = self._members(topic, use_pushed)
        if not members:
            _log.warning("rebalance: group=%s has no members", self.config.consumer_group)
            return False
        allocated = set(
            self.strategy.allocate(self.config.consumer_group, self.client_id, queues, members)
        )
        complete = self._update_owned(topic, queues, allocated)
        if self.client_id not in members:
            _log.info("rebalance: client_id=%s not yet among the members", self.client_id)
            return False
        return complete

    def _update_owned(
        self, topic: str, all_queues: set[MessageQueue], allocated: set[MessageQueue]
    ) -> bool:
        """Own exactly ``allocated`` of ``topic``; whether every new queue got its start
        offset (the others are left for the next run). In CLUSTERING a new queue is taken
        over: its pull task acquires it from the broker before its first pull."""
        owned = {queue for queue in self._assigned.queues() if queue.topic == topic}
        removed = owned - allocated
        for queue in sorted(removed, key=MessageQueue.order_key):
            self.drop_queue(queue)
        added: list[MessageQueue] = []
        take_over = self.config.message_model is MessageModel.CLUSTERING
        first_queues = self._first_queues.get(topic, frozenset())
        for queue in sorted(allocated - owned, key=MessageQueue.order_key):
            self._offset_store.remove_offset(queue)
            try:
                offset = self.compute_pull_from_where(queue, appeared=queue not in first_queues)
            except ClientError as error:
                _log.warning("no start offset for queue=%s yet, next run: %s", queue, error)
                continue
            self._assigned.add(queue, offset).take_over = take_over
            added.append(queue)
        self._tasks.start(added)
        if (removed or added) and self.listener is not None:
            owned_now = {queue for queue in self._assigned.queues() if queue.topic == topic}
            try:
                self.listener(topic, set(all_queues), owned_now)
            except Exception:
                _log.exception("message_queue_listener failed: topic=%s", topic)
        return len(added) == len(allocated - owned)

    def drop_queue(self, queue: MessageQueue) -> None:
        """Stop owning ``queue``: drop it, stop its task, commit (auto), persist its offset
        and release it (its next owner is granted it with that commit)."""
        self.release(queue, self._assigned.remove(queue))

    def release(self, queue: MessageQueue, state: QueueState | None) -> None:
        """The rest of :meth:`drop_queue` for a queue already removed from the owned table
        (``assign`` of other queues, ``unsubscribe``)."""
        self._tasks.cancel((queue,))
        self._cache.remove_queue(queue)
        if state is None:
            return
        if self.on_release is not None:
            try:
                self.on_release(queue)
            except Exception:
                _log.exception("on_release failed: queue=%s", queue)
        if self.config.auto_commit and state.consume_offset >= 0:
            self._offset_store.update_offset(queue, state.consume_offset)
        try:
            self._offset_store.release(queue, self.client_id)
        except ClientError as error:
            _log.warning("releasing a dropped queue failed: %s: %s", queue, error)
        self._offset_store.remove_offset(queue)

    def compute_pull_from_where(self, queue: MessageQueue, appeared: bool = False) -> int:
        """The first offset to pull from ``queue``: committed, else by ``consume_from_where``;
        with LAST_OFFSET, a queue that ``appeared`` after this consumer first saw its topic
        starts at its min offset. Raises a :class:`~client.ClientError` when the broker cannot
        say."""
        committed = self._offset_store.read_offset(queue, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        if committed >= 0:
            return committed
        where = self.config.consume_from_where
        if where is ConsumeFromWhere.FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.TIMESTAMP:
            return self._api.search_offset(queue, self.config.consume_timestamp_ms)
        if appeared:
            return self._api.min_offset(queue)
        return self._api.max_offset(queue)

    def start_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """The start offsets of ``queues`` about to be assigned; a queue the broker cannot
        say for is left out (its pull task computes it later). Caller: ``assign`` while
        running. Affects: nothing (the offset store reads what the broker holds)."""
        offsets: dict[MessageQueue, int] = {}
        for queue in queues:
            try:
                offsets[queue] = self.compute_pull_from_where(queue)
            except ClientError as error:
                _log.warning("start offset of queue=%s not known yet: %s", queue, error)
        return offsets

    def fix_start_offsets(self, states: Iterable[QueueState]) -> None:
        """Fix the start offset of every assigned queue that has none. Caller: ``start()`` in
        assign mode. Affects: their pull offsets (unless a seek came first)."""
        for state in states:
            if state.pull_offset >= 0 or state.seek_offset != -1:
                continue
            offset = self.start_offsets((state.queue,)).get(state.queue, -1)
            with state.lock:
                if state.pull_offset < 0 and state.seek_offset == -1:
                    state.pull_offset = offset

    def acquire_queue(self, queue: MessageQueue, force: bool) -> QueueGrant:
        """The broker's grant of ``queue`` to this consumer (see the module doc, step 3).
        Caller: a pull task's take-over. Affects: a granted committed offset is what the
        offset store holds from now on."""
        grant = self._api.acquire_queue(
            self.config.consumer_group, queue, self.client_id, force=force
        )
        if grant.granted and grant.committed_offset >= 0:
            self._offset_store.note_stored(queue, grant.committed_offset)
        return grant

    # -- the thread ---------------------------------------------------------------------

    def start(self, first_run: bool = True) -> None:
        """Run once in the caller's thread (``first_run``), so the queues the group gives this
        consumer are owned, with their start offsets fixed, when this returns; then start the
        thread (its first run is immediate after an unbalanced run, else periodic)."""
        if self._thread is not None:
            return
        self._running = True
        balanced = self.run_now() if first_run else False
        if not balanced:
            self._wakeup.set()
        self._first_interval_ms = self.config.rebalance_interval_ms if balanced else 0
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-rebalance-{self.client_id}", daemon=True
        )
        self._thread.start()

    def shutdown(self, timeout_s: float = 10.0) -> None:
        self._running = False
        self._wakeup.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        interval_ms = self._first_interval_ms
        while self._running:
            self._wakeup.wait(interval_ms / 1000.0)
            self._wakeup.clear()
            if not self._running:
                return
            use_pushed = self._push_pending
            self._push_pending = False
            try:
                balanced = self.do_rebalance(use_pushed)
            except Exception:
                _log.exception("rebalance failed")
                balanced = False
            interval_ms = (
                self.config.rebalance_interval_ms
                if balanced
                else self.config.rebalance_retry_interval_ms
            )
