"""``GrpcBrokerApi``: the consumer's :class:`~consumer._broker_api.BrokerApi` on real brokers.

- Routes come from the endpoints (name servers or brokers) through
  :class:`client.route.RouteResolver`; a topic's readable queues are its route's read queues.
- Offsets, min/max, search by time and consumer ids go to the queue's (or topic's) broker over
  gRPC (:class:`client.grpc_client.GrpcClient`), ``control_timeout_ms`` per call.
- Pulls go over the transport session with that broker (:class:`client.BrokerSessions`)
  as ``PullMessage`` requests answered asynchronously: the callback runs on the session's
  poller thread. The answer's record batches are checked and cut to what was asked
  (``read_pulled_batches``) into a :class:`~consumer.message_batch.MessageBatch`: no object per
  message. A pull to a broker without an open session connects on a background thread, so a
  slow or absent broker never blocks the consumer's scheduler.
- Membership: the consumer registers with every broker of its subscribed topics (one
  ``SendHeartbeat``, so the broker knows it before the first rebalance asks for the members),
  then keeps a ``Heartbeat`` stream open to each. A stream thread renews the registration every
  third of the broker's heartbeat timeout (or the consumer's interval, if shorter) and hands each
  pushed membership of one broker (the one asked for consumer ids: the first of the route) to
  the listener. A broken stream is reopened a second later. ``unregister``
  leaves every group at once (``UnregisterClient``) and closes the streams.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from aeromq.client import (
    BrokerUnavailableError,
    ClientError,
    CorruptMessageError,
    ExpressionType,
    MessageQueue,
    SubscriptionData,
    error_for_code,
)
from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.grpc_client import GrpcClient, HeartbeatStream
from aeromq.client.route import BrokerRoute, RouteResolver
from aeromq.client.session import BackPressuredError, ClientSession
from aeromq.common import PullAnswer
from aeromq.consumer._broker_api import (
    ConsumerHeartbeat,
    MembershipListener,
    PullCallback,
    PullResult,
    PullStatus,
    QueueGrant,
)
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig, MessageModel
from aeromq.consumer.message_batch import MessageBatch, read_pulled_batches
from aeromq.proto import admin_pb2, consumer_group_pb2, messages_pb2

__all__ = ["GrpcBrokerApi", "heartbeat_request"]

_log = logging.getLogger(__name__)

_MESSAGE_MODELS = {
    MessageModel.CLUSTERING: admin_pb2.CLUSTERING,
    MessageModel.BROADCASTING: admin_pb2.BROADCASTING,
}
_CONSUME_FROM = {
    ConsumeFromWhere.LAST_OFFSET: consumer_group_pb2.CONSUME_FROM_LAST_OFFSET,
    ConsumeFromWhere.FIRST_OFFSET: consumer_group_pb2.CONSUME_FROM_FIRST_OFFSET,
    ConsumeFromWhere.TIMESTAMP: consumer_group_pb2.CONSUME_FROM_TIMESTAMP,
}
_EXPRESSION_TYPES = {ExpressionType.TAG: messages_pb2.TAG, ExpressionType.SQL92: messages_pb2.SQL92}
_STREAM_POLL_S = 0.2
_STREAM_RETRY_S = 1.0


def heartbeat_request(heartbeat: ConsumerHeartbeat) -> consumer_group_pb2.HeartbeatRequest:
    """The wire heartbeat of a consumer."""
    return consumer_group_pb2.HeartbeatRequest(
        client_id=heartbeat.client_id,
        consumers=[
            consumer_group_pb2.ConsumerData(
                consumer_group=heartbeat.consumer_group,
                consume_type=consumer_group_pb2.CONSUME_ACTIVELY,
                message_model=_MESSAGE_MODELS[heartbeat.message_model],
                consume_from_where=_CONSUME_FROM[heartbeat.consume_from_where],
                subscriptions=[
                    consumer_group_pb2.SubscriptionData(
                        topic=s.topic,
                        sub_expression=s.sub_string,
                        expression_type=_EXPRESSION_TYPES[s.expression_type],
                    )
                    for s in heartbeat.subscriptions
                ],
            )
        ],
    )


class _MembershipStream:
    """One broker's heartbeat stream and the thread that renews it and reads its pushes."""

    def __init__(self, owner: GrpcBrokerApi, address: str) -> None:
        self._owner = owner
        self.address = address
        self._stream: HeartbeatStream | None = None
        self._running = True
        self._interval_s = owner.heartbeat_interval_ms / 1000.0
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-membership-{address}", daemon=True
        )
        self._thread.start()

    def send_now(self) -> None:
        stream = self._stream
        request = self._owner.current_heartbeat()
        if stream is not None and request is not None:
            try:
                stream.send(request)
            except ClientError as error:
                _log.debug("heartbeat not sent: address=%s: %s", self.address, error)

    def close(self) -> None:
        self._running = False
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close(timeout_s=2.0)
        self._thread.join(5.0)

    def _open(self) -> HeartbeatStream | None:
        request = self._owner.current_heartbeat()
        if request is None:
            return None
        client = self._owner.client(self.address)
        stream = client.open_heartbeat_stream()
        stream.send(request)
        return stream

    def _run(self) -> None:
        next_heartbeat_s = 0.0
        while self._running:
            stream = self._stream
            if stream is None:
                try:
                    stream = self._stream = self._open()
                except ClientError as error:
                    _log.warning("membership stream failed: address=%s: %s", self.address, error)
                if stream is None:
                    time.sleep(_STREAM_RETRY_S)
                    continue
                next_heartbeat_s = time.monotonic() + self._interval_s
            try:
                response = stream.poll(_STREAM_POLL_S)
            except ClientError as error:
                if self._running:
                    _log.warning("membership stream ended: address=%s: %s", self.address, error)
                    self._stream = None
                    time.sleep(_STREAM_RETRY_S)
                continue
            if response is not None:
                if response.heartbeat_timeout_ms > 0:
                    self._interval_s = (
                        min(self._owner.heartbeat_interval_ms, response.heartbeat_timeout_ms // 3)
                        / 1000.0
                    )
                    next_heartbeat_s = min(next_heartbeat_s, time.monotonic() + self._interval_s)
                for membership in response.memberships:
                    self._owner.on_membership(
                        self.address, membership.consumer_group, list(membership.consumer_ids)
                    )
            if time.monotonic() >= next_heartbeat_s:
                next_heartbeat_s = time.monotonic() + self._interval_s
                self.send_now()


@dataclass(frozen=True, slots=True)
class _Pull:
    """One pull on its way: the request and what its answer is read with."""

    request: messages_pb2.PullMessageRequest
    queue: MessageQueue
    subscription: SubscriptionData
    timeout_ms: int
    callback: PullCallback


class GrpcBrokerApi:
    """The broker API over gRPC and the transport (see the module doc)."""

    def __init__(self, config: LitePullConsumerConfig, client_id: str) -> None:
        self._config = config
        self.client_id = client_id
        self.heartbeat_interval_ms = config.heartbeat_broker_interval_ms
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
        self._connector = ThreadPoolExecutor(max_workers=2, thread_name_prefix="aeromq-connect")
        self._lock = threading.Lock()
        self._heartbeat: ConsumerHeartbeat | None = None
        self._listener: MembershipListener | None = None
        self._streams: dict[str, _MembershipStream] = {}
        self._membership_address: str | None = None
        self._closed = False

    # -- routes --------------------------------------------------------------------------

    def fetch_subscribe_queues(self, topic: str) -> set[MessageQueue]:
        return set(self._resolver.route(topic, refresh=True).read_queues())

    def _broker(self, queue: MessageQueue) -> BrokerRoute:
        return self._resolver.route(queue.topic).broker(queue.broker_name)

    def client(self, address: str) -> GrpcClient:
        return self._resolver.client(address)

    def _broker_client(self, queue: MessageQueue) -> GrpcClient:
        return self._resolver.broker_client(queue.topic, queue.broker_name)

    # -- offsets ---------------------------------------------------------------------------

    def query_offset(self, consumer_group: str, queue: MessageQueue) -> int:
        client = self._broker_client(queue)
        return client.query_offset(consumer_group, queue.topic, queue.queue_id)

    def commit_offset(self, consumer_group: str, queue: MessageQueue, offset: int) -> None:
        client = self._broker_client(queue)
        client.commit_offset(consumer_group, queue.topic, queue.queue_id, offset)

    def acquire_queue(
        self, consumer_group: str, queue: MessageQueue, client_id: str, *, force: bool = False
    ) -> QueueGrant:
        client = self._broker_client(queue)
        offset, holder = client.acquire_queue(
            consumer_group, queue.topic, queue.queue_id, client_id, force=force
        )
        return QueueGrant(holder, offset)

    def release_queue(
        self, consumer_group: str, queue: MessageQueue, offset: int, *, client_id: str
    ) -> None:
        client = self._broker_client(queue)
        client.release_queue(
            consumer_group, queue.topic, queue.queue_id, offset, client_id=client_id
        )

    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        return self._broker_client(queue).search_offset(queue.topic, queue.queue_id, timestamp_ms)

    def min_offset(self, queue: MessageQueue) -> int:
        return self._broker_client(queue).min_offset(queue.topic, queue.queue_id)

    def max_offset(self, queue: MessageQueue) -> int:
        return self._broker_client(queue).max_offset(queue.topic, queue.queue_id)

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
    ) -> bool:
        request = messages_pb2.PullMessageRequest(
            consumer_group=consumer_group,
            topic=queue.topic,
            queue_id=queue.queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sub_expression=subscription.sub_string,
            expression_type=_EXPRESSION_TYPES[subscription.expression_type],
            suspend_timeout_ms=suspend_timeout_ms,
            commit_offset=-1,
        )
        pull = _Pull(request, queue, subscription, timeout_ms, callback)
        if nonblocking:  # a cached route and an open session, or nothing
            route = self._resolver.cached(queue.topic)
            broker = None if route is None else route.brokers.get(queue.broker_name)
            session = None if broker is None else self._sessions.open_session(broker.broker_name)
            if broker is None or session is None:
                return False
            return self._send_pull(session, broker, pull, wait_offer=False)
        try:
            broker = self._broker(queue)
        except ClientError as error:
            callback(None, error)
            return True
        session = self._sessions.open_session(broker.broker_name)
        if session is not None:
            return self._send_pull(session, broker, pull)
        try:
            self._connector.submit(self._connect_and_pull, broker, pull)
        except RuntimeError as error:  # closed
            callback(None, error)
        return True

    def answer_pump(self) -> ClientSession | None:
        """The session whose pull answers a waiting ``poll()`` reads itself: the one open
        session, when there is one (``consumer.consume_request_cache``)."""
        return self._sessions.sole_session()

    def _connect_and_pull(self, broker: BrokerRoute, pull: _Pull) -> None:
        try:
            session = self._sessions.session(broker)
        except ClientError as error:
            if isinstance(error, BrokerUnavailableError):
                self._resolver.invalidate(pull.queue.topic)
            pull.callback(None, error)
            return
        self._send_pull(session, broker, pull)

    def _broker_gone(self, broker_name: str, topic: str) -> None:
        """The session with the broker failed: drop it and forget the topic's route, so the
        next pull looks the broker up again (a restarted broker has new endpoints)."""
        self._sessions.drop(broker_name)
        self._resolver.invalidate(topic)

    def _send_pull(
        self, session: ClientSession, broker: BrokerRoute, pull: _Pull, *, wait_offer: bool = True
    ) -> bool:
        """Send ``pull`` on ``session``; its answer (or failure) goes to its callback. False,
        with nothing sent nor called back, when ``wait_offer`` is False and the session's
        channel is back-pressured."""
        callback = pull.callback
        try:
            future = session.request_async(pull.request, pull.timeout_ms, wait_offer=wait_offer)
        except BackPressuredError as error:
            if not wait_offer:
                return False
            callback(None, error)
            return True
        except ClientError as error:
            if isinstance(error, BrokerUnavailableError):
                self._broker_gone(broker.broker_name, pull.queue.topic)
            callback(None, error)
            return True
        name = broker.broker_name

        def done(answered: Future[PullAnswer]) -> None:
            try:
                response = answered.result()
            except BrokerUnavailableError as error:
                self._broker_gone(name, pull.queue.topic)
                callback(None, error)
                return
            except BaseException as error:
                callback(None, error)
                return
            status = response.status
            if status.code != 0:
                callback(None, error_for_code(status.code, status.message, broker=name))
                return
            try:
                messages = (
                    read_pulled_batches(
                        response.batches,
                        pull.queue,
                        name,
                        pull.request.queue_offset,
                        response.next_begin_offset,
                        pull.subscription,
                    )
                    if response.batches
                    else MessageBatch()
                )
            except CorruptMessageError as error:
                callback(None, error)
                return
            callback(
                PullResult(
                    PullStatus(response.pull_status),
                    response.next_begin_offset,
                    response.min_offset,
                    response.max_offset,
                    messages,
                ),
                None,
            )

        future.add_done_callback(done)
        return True

    # -- membership ------------------------------------------------------------------------

    def consumer_ids(self, consumer_group: str, topic: str) -> list[str]:
        route = self._resolver.route(topic)
        self._ensure_streams(route.brokers.values())
        broker = route.brokers[sorted(route.brokers)[0]]
        self._membership_address = broker.grpc_address
        response = self.client(broker.grpc_address).get_consumer_ids(consumer_group)
        return list(response.consumer_ids)

    def current_heartbeat(self) -> consumer_group_pb2.HeartbeatRequest | None:
        heartbeat = self._heartbeat
        return heartbeat_request(heartbeat) if heartbeat is not None else None

    def on_membership(self, address: str, consumer_group: str, consumer_ids: Sequence[str]) -> None:
        """A push from the broker at ``address``: passed on when that broker is the one whose
        members the consumer asks for (the first broker of the topic's route). Brokers see a
        member come or go at slightly different times; following one avoids flapping between
        their views (which would hand queues back and forth)."""
        primary = self._membership_address
        listener = self._listener
        if listener is not None and (primary is None or address == primary):
            listener(consumer_group, consumer_ids)

    def start_heartbeat(self, heartbeat: ConsumerHeartbeat, listener: MembershipListener) -> None:
        self._heartbeat = heartbeat
        self._listener = listener
        self._ensure_all_streams()

    def send_heartbeat(self, heartbeat: ConsumerHeartbeat) -> None:
        self._heartbeat = heartbeat
        self._ensure_all_streams()
        for stream in list(self._streams.values()):
            stream.send_now()

    def _ensure_all_streams(self) -> None:
        heartbeat = self._heartbeat
        if heartbeat is None:
            return
        for subscription in heartbeat.subscriptions:
            try:
                route = self._resolver.route(subscription.topic)
            except ClientError as error:
                _log.info("no route yet for topic=%s: %s", subscription.topic, error)
                continue
            self._ensure_streams(route.brokers.values())

    def _ensure_streams(self, brokers: Iterable[BrokerRoute]) -> None:
        request = self.current_heartbeat()
        if request is None:
            return
        for broker in list(brokers):
            address = broker.grpc_address
            if address in self._streams:
                continue
            with self._lock:
                if self._closed or address in self._streams:
                    continue
                # Register synchronously first: the next GetConsumerIds must see this client.
                self.client(address).send_heartbeat(request)
                self._streams[address] = _MembershipStream(self, address)

    def unregister(self, client_id: str, consumer_group: str) -> None:
        with self._lock:
            streams, self._streams = dict(self._streams), {}
        self._heartbeat = None
        for address in streams:
            try:
                self.client(address).unregister_client(client_id, [consumer_group])
            except ClientError as error:
                _log.warning("unregister failed: address=%s: %s", address, error)
        for stream in streams.values():
            stream.close()

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
        with self._lock:
            self._closed = True
            streams, self._streams = dict(self._streams), {}
        for stream in streams.values():
            stream.close()
        self._connector.shutdown(wait=True, cancel_futures=True)
        self._sessions.close()
        self._resolver.close()
