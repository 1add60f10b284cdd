"""``GrpcBrokerApi``: the consumer's :class:`~consumer._broker_api.BrokerApi` on real brokers.

- Routes come from the endpoints (name servers or brokers) through
  :class:`client.route.RouteResolver`; a topic's readable queues are its route's read queues.
- Offsets, min/max, search by time and consumer ids go to the queue's (or topic's) broker over
  gRPC (:class:`client.grpc_client.GrpcClient`), ``control_timeout_ms`` per call; a broker
  group's call follows its leader within that time (``RouteResolver.call_leader``).
- Pulls go over the transport session with that broker (:class:`client.BrokerSessions`)
  as ``PullMessage`` requests answered asynchronously: the callback runs on the session's
  poller thread. The answer's record batches are checked and cut to what was asked
  (``consumer._pulled_messages``): a small answer straight into ``MessageExt`` objects by one
  native call, a larger one into a :class:`~consumer.message_batch.MessageBatch` of columns (no
  object per message). A pull to a broker without an open session connects on a background thread, so a
  slow or absent broker never blocks the consumer's scheduler.
- Membership (registrations, heartbeat streams, pushed members): ``consumer._membership``.
- Broker groups (``client.failover``): a pull refused with ``NOT_LEADER`` or failed because its
  member died hands the member to :meth:`GrpcBrokerApi.follow` (at once with the leader a
  ``NOT_LEADER`` names, else on the connector's thread: one route query for all the queues that
  failed), and the pull task tries again on the route's new member (``consumer.pull_task``:
  within 250 ms); commits, grants and offset queries follow the leader within
  ``control_timeout_ms``. Once a broker's leader moved, the consumer registers with the new one
  at once (``Membership.leader_moved``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, NamedTuple, TypeVar

from aeromq.client import (
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    IllegalStateError,
    MessageQueue,
    SubscriptionData,
)
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.failover import error_for_status, is_failover_error, leader_hint
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.route import BrokerRoute, RouteResolver
from aeromq.client.session import BackPressuredError, ClientSession
from aeromq.common import PullAnswer, PulledAnswer, PulledAnswerFields, PullRequestBody
from aeromq.consumer._broker_api import (
    ConsumerHeartbeat,
    MembershipListener,
    PullCallback,
    PullResult,
    PullStatus,
    QueueGrant,
)
from aeromq.consumer._membership import EXPRESSION_TYPES, Membership
from aeromq.consumer._pulled_messages import read_pulled_messages
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.message_batch import MessageBatch
from aeromq.proto import messages_pb2

_T = TypeVar("_T")

__all__ = ["GrpcBrokerApi"]

_log = logging.getLogger(__name__)
_tuple_new: Final = tuple.__new__
_PULL_STATUSES = tuple(PullStatus)
"""``PullStatus`` by wire ordinal (a tuple index, not an enum call)."""


class _Pull(NamedTuple):
    """One pull on its way: the request and what its answer is read with."""

    request: PullRequestBody
    queue: MessageQueue
    subscription: SubscriptionData
    timeout_ms: int
    callback: PullCallback


class GrpcBrokerApi:
    """The broker API over gRPC and the transport (see the module doc)."""

    def __init__(self, config: LitePullConsumerConfig, client_id: str) -> None:
        self._config = config
        self.client_id = client_id
        self._timeout_s = config.control_timeout_ms / 1000.0
        self._resolver = self._routes_of(config.endpoints)
        self._sessions = BrokerSessions(
            client_id=client_id,
            transport=config.transport,
            aeron_dir=config.aeron_dir,
            udp_response_host=config.udp_response_host,
            request_timeout_ms=config.consumer_timeout_ms_when_suspend,
            offer_timeout_ms=config.offer_timeout_ms,
            credentials=config.credentials,
        )
        self.answer_pump: Callable[[], ClientSession | None] = self._sessions.sole_session
        """The session whose pull answers a waiting ``poll()`` reads itself: the one open
        session, when there is one (``consumer.consume_request_cache``). The sessions' own
        method, not one that calls it: asked by every ``poll()`` that waits."""
        self._connector = ThreadPoolExecutor(max_workers=2, thread_name_prefix="aeromq-connect")
        self.membership = Membership(
            lambda: self._resolver, config.heartbeat_broker_interval_ms, self._connector.submit
        )

    # -- routes --------------------------------------------------------------------------

    def fetch_subscribe_queues(self, topic: str) -> set[MessageQueue]:
        return set(self._resolver.route(topic, refresh=True).read_queues())

    def _broker(self, queue: MessageQueue) -> BrokerRoute:
        return self._resolver.route(queue.topic).broker(queue.broker_name)

    def client(self, address: str) -> GrpcClient:
        return self._resolver.client(address)

    def _call(self, queue: MessageQueue, call: Callable[[GrpcClient], _T]) -> _T:
        """``call`` on the gRPC client of the queue's broker, following a group's leader within
        ``control_timeout_ms``; a move of the leader registers the consumer with the new one."""
        resolver = self._resolver
        member = resolver.member(queue.broker_name)
        try:
            return resolver.call_leader(queue.topic, queue.broker_name, call)
        finally:
            if member is not None and resolver.member(queue.broker_name) != member:
                self.membership.leader_moved()

    def follow(self, topic: str, failed: BrokerRoute, error: BaseException) -> None:
        """A pull on ``failed`` (a member of a broker of ``topic``) failed with a failover
        error: look the broker's member up (``RouteResolver.follow_leader``), so the pull
        task's next try goes to it; when no endpoint answers, drop the session and the route
        as for a broker that restarted (the next pull looks it up again).

        Caller: the poller thread for a ``NOT_LEADER`` that names the leader (no I/O), else
        the connector's thread. Affects: the resolver's members, the membership."""
        try:
            moved = self._resolver.follow_leader(topic, failed, leader_hint(error))
        except ClientError as lookup:
            _log.info("broker unavailable, no route to follow: broker=%s: %s",
                      failed.broker_name, lookup)  # fmt: skip
            self._sessions.drop(failed.key)
            self._resolver.invalidate(topic)
            return
        if moved != failed:
            _log.info("broker's leader moved: broker=%s from=%s to=%s",
                      failed.broker_name, failed.grpc_address, moved.grpc_address)  # fmt: skip
            self.membership.leader_moved()

    def _pull_failed(self, topic: str, broker: BrokerRoute, error: BaseException) -> None:
        """Follow the leader after a pull's failover error: at once with a hint, else on the
        connector's thread (never on the poller's)."""
        if leader_hint(error) is not None:
            self.follow(topic, broker, error)
            return
        with contextlib.suppress(RuntimeError):  # closed
            self._connector.submit(self.follow, topic, broker, error)

    # -- offsets ---------------------------------------------------------------------------

    def query_offset(self, consumer_group: str, queue: MessageQueue) -> int:
        return self._call(
            queue, lambda client: client.query_offset(consumer_group, queue.topic, queue.queue_id)
        )

    def commit_offset(self, consumer_group: str, queue: MessageQueue, offset: int) -> None:
        self._call(
            queue,
            lambda client: client.commit_offset(
                consumer_group, queue.topic, queue.queue_id, offset
            ),
        )

    def acquire_queue(
        self, consumer_group: str, queue: MessageQueue, client_id: str, *, force: bool = False
    ) -> QueueGrant:
        offset, holder = self._call(
            queue,
            lambda client: client.acquire_queue(
                consumer_group, queue.topic, queue.queue_id, client_id, force=force
            ),
        )
        return QueueGrant(holder, offset)

    def release_queue(
        self, consumer_group: str, queue: MessageQueue, offset: int, *, client_id: str
    ) -> None:
        self._call(
            queue,
            lambda client: client.release_queue(
                consumer_group, queue.topic, queue.queue_id, offset, client_id=client_id
            ),
        )

    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        return self._call(
            queue, lambda client: client.search_offset(queue.topic, queue.queue_id, timestamp_ms)
        )

    def min_offset(self, queue: MessageQueue) -> int:
        return self._call(queue, lambda client: client.min_offset(queue.topic, queue.queue_id))

    def max_offset(self, queue: MessageQueue) -> int:
        return self._call(queue, lambda client: client.max_offset(queue.topic, queue.queue_id))

    # -- pulls -----------------------------------------------------------------------------

    def pull_async(
        self,
        queue: MessageQueue,
        subscription: SubscriptionData,
        consumer_group: str,
        offset: int,
        max_nums: int,
        suspend_timeout_ms: int,
        timeout_ms: int,
        callback: PullCallback,
        *,
        nonblocking: bool = False,
        lazy: bool = False,
    ) -> bool:
        # its fields in their order, through tuple's __new__ (a NamedTuple's own is a Python
        # function): the session writes its envelope in one native call
        request = _tuple_new(
            PullRequestBody,
            (
                consumer_group,
                queue.topic,
                queue.queue_id,
                offset,
                max_nums,
                0,
                subscription.sub_string,
                EXPRESSION_TYPES[subscription.expression_type],
                suspend_timeout_ms,
                -1,
                False,
            ),
        )
        pull = _tuple_new(_Pull, (request, queue, subscription, timeout_ms, callback))
        if nonblocking:  # a cached route and an open session, or nothing
            route = self._resolver.cached(queue.topic)
            broker = None if route is None else route.brokers.get(queue.broker_name)
            session = None if broker is None else self._sessions.open_session_to(broker)
            if broker is None or session is None:
                return False
            return self._send_pull(session, broker, pull, wait_offer=False, lazy=lazy)
        try:
            broker = self._broker(queue)
        except ClientError as error:
            callback(None, error)
            return True
        session = self._sessions.open_session_to(broker)
        if session is not None:
            return self._send_pull(session, broker, pull)
        try:
            self._connector.submit(self._connect_and_pull, broker, pull)
        except RuntimeError as error:  # closed
            callback(None, error)
        return True

    def _connect_and_pull(self, broker: BrokerRoute, pull: _Pull) -> None:
        try:
            session = self._sessions.session(broker)
        except ClientError as error:
            if isinstance(error, BrokerUnavailableError):
                self.follow(pull.queue.topic, broker, error)  # (on the connector's thread)
            pull.callback(None, error)
            return
        self._send_pull(session, broker, pull)

    def _send_pull(
        self,
        session: ClientSession,
        broker: BrokerRoute,
        pull: _Pull,
        *,
        wait_offer: bool = True,
        lazy: bool = False,
    ) -> bool:
        """Send ``pull`` on ``session`` (``lazy``: without ringing the broker); its answer (or
        failure) goes to its callback. False, with nothing sent nor called back, when
        ``wait_offer`` is False and the session's channel is back-pressured."""
        callback = pull.callback
        name = broker.broker_name

        def done(response: object, error: BaseException | None) -> None:
            control: PulledAnswerFields | messages_pb2.PullMessageResponse
            if type(response) is PulledAnswer:  # read in one native call: never a refusal
                control = response.fields  # (its fields, not PullAnswer's properties: a
                batches = control.batches  # pull a message keeping up)
            elif isinstance(response, PullAnswer):
                control = response.response
                status = control.status
                if status.code != 0:
                    refused = error_for_status(status, broker=name)
                    if is_failover_error(refused):  # a follower's NOT_LEADER, an election
                        self._pull_failed(pull.queue.topic, broker, refused)
                    callback(None, refused)
                    return
                batches = response.batches
            else:  # failed (or not a pull's answer)
                if isinstance(error, BrokerUnavailableError):
                    self._pull_failed(pull.queue.topic, broker, error)
                callback(None, error or IllegalStateError("not a pull's answer", broker=name))
                return
            next_offset = control.next_begin_offset
            try:
                messages = (
                    read_pulled_messages(
                        batches,
                        pull.queue,
                        name,
                        pull.request.queue_offset,
                        next_offset,
                        pull.subscription,
                    )
                    if batches
                    else MessageBatch()
                )
            except CorruptMessageError as corrupt:
                callback(None, corrupt)
                return
            callback(
                PullResult(
                    _PULL_STATUSES[control.pull_status],
                    next_offset,
                    control.min_offset,
                    control.max_offset,
                    messages,
                ),
                None,
            )

        try:  # done is called on the thread that reads the answer (no future: client.session)
            session.request_callback(
                pull.request, pull.timeout_ms, done, wait_offer=wait_offer, lazy=lazy
            )
        except BackPressuredError as error:
            if not wait_offer:
                return False
            callback(None, error)
        except ClientError as error:
            if isinstance(error, BrokerUnavailableError):
                self._pull_failed(pull.queue.topic, broker, error)
            callback(None, error)
        return True

    # -- membership (consumer._membership) ---------------------------------------------------

    def consumer_ids(self, consumer_group: str, topic: str) -> list[str]:
        return self.membership.consumer_ids(consumer_group, topic)

    def start_heartbeat(self, heartbeat: ConsumerHeartbeat, listener: MembershipListener) -> None:
        self.membership.start(heartbeat, listener)

    def send_heartbeat(self, heartbeat: ConsumerHeartbeat) -> None:
        self.membership.send(heartbeat)

    def unregister(self, client_id: str, consumer_group: str) -> None:
        self.membership.unregister(client_id, consumer_group)

    # -- lifecycle ---------------------------------------------------------------------------

    def _routes_of(self, endpoints: Sequence[str]) -> RouteResolver:
        config = self._config
        return RouteResolver(
            tuple(endpoints),
            timeout_s=self._timeout_s,
            credentials=config.credentials,
            tls=config.tls,
        )

    def update_endpoints(self, endpoints: Sequence[str]) -> None:
        old, self._resolver = (
            self._resolver,
            self._routes_of(tuple(endpoints)),
        )
        old.close()

    def close(self) -> None:
        self.membership.close()
        self._connector.shutdown(wait=True, cancel_futures=True)
        self._sessions.close()
        self._resolver.close()
