"""``Membership``: a lite pull consumer's registrations with the brokers of its topics, and the
group memberships they push back.

The consumer registers with every broker of its subscribed topics (one ``SendHeartbeat``, so the
broker knows it before the first rebalance asks for the members), then keeps a ``Heartbeat``
stream open to each (:class:`MembershipStream`). A stream's thread renews the registration
every third of the broker's heartbeat timeout (or the consumer's interval, if shorter) and hands
each pushed membership of one broker (the one asked for consumer ids: the first of the route) to
the listener. A broken stream is reopened a second later. :meth:`Membership.unregister` leaves
every group at once (``UnregisterClient``) and closes the streams.

Broker groups (``client.failover``): a registration goes to the broker's leader, followed
through a failover within the resolver's timeout (``RouteResolver.call_leader``), so a consumer
started during one waits for the new leader rather than fail. A broker's members keep no
memberships for each other (a new leader knows only the consumers that registered with it). When the consumer learns that a
broker's leader moved (:meth:`Membership.leader_moved`), it registers with the new leader at
once, closes the stream with the former one, and, when that broker is the one whose members it
follows, holds the pushes of the new leader for :data:`MEMBERSHIP_SETTLE_MS` (the last one is
passed on then): the other consumers of the group register with it meanwhile, and a rebalance
on the first, partial memberships would hand queues back and forth and deliver twice.

Caller: :class:`~consumer._grpc_broker_api.GrpcBrokerApi` (its heartbeat and consumer-id calls);
the streams' threads (pushes). Affects: the rebalance service, through the listener.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Final, Protocol, TypeVar

from aeromq.client import ClientError, ExpressionType
from aeromq.client.grpc_client import GrpcClient, HeartbeatStream
from aeromq.client.route import BrokerRoute, TopicRoute
from aeromq.consumer._broker_api import ConsumerHeartbeat, MembershipListener
from aeromq.consumer.config import ConsumeFromWhere, MessageModel
from aeromq.proto import admin_pb2, consumer_group_pb2, messages_pb2

__all__ = [
    "EXPRESSION_TYPES",
    "MEMBERSHIP_SETTLE_MS",
    "Membership",
    "MembershipStream",
    "RouteLookup",
    "heartbeat_request",
]

_log = logging.getLogger(__name__)

_T = TypeVar("_T")

MEMBERSHIP_SETTLE_MS: Final = 2_000
"""How long the pushes of a broker's new leader are held after the consumer moved to it (see
the module): every consumer of the group finds the new leader within about a second (its pulls
fail over within 250 ms; a long poll held on a member that died ends with its session)."""

_MESSAGE_MODELS = {
    MessageModel.CLUSTERING: admin_pb2.CLUSTERING,
    MessageModel.BROADCASTING: admin_pb2.BROADCASTING,
}
_CONSUME_FROM = {
    ConsumeFromWhere.LAST_OFFSET: consumer_group_pb2.CONSUME_FROM_LAST_OFFSET,
    ConsumeFromWhere.FIRST_OFFSET: consumer_group_pb2.CONSUME_FROM_FIRST_OFFSET,
    ConsumeFromWhere.TIMESTAMP: consumer_group_pb2.CONSUME_FROM_TIMESTAMP,
}
EXPRESSION_TYPES: Final = {
    ExpressionType.TAG: messages_pb2.TAG,
    ExpressionType.SQL92: messages_pb2.SQL92,
}
"""A subscription's expression type as the wire names it (heartbeats and pulls)."""
_STREAM_POLL_S = 0.2
_STREAM_RETRY_S = 1.0


def _registered(client: GrpcClient, request: consumer_group_pb2.HeartbeatRequest) -> str:
    """Register with the broker of ``client`` (one ``SendHeartbeat``); its address."""
    client.send_heartbeat(request)
    return client.address


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
                        expression_type=EXPRESSION_TYPES[s.expression_type],
                    )
                    for s in heartbeat.subscriptions
                ],
            )
        ],
    )


class RouteLookup(Protocol):
    """What the membership asks of the consumer's routes (its ``RouteResolver``)."""

    def route(self, topic: str) -> TopicRoute:
        """The topic's route."""
        ...

    def member(self, broker_name: str) -> BrokerRoute | None:
        """The broker's current member, if known."""
        ...

    def client(self, address: str) -> GrpcClient:
        """A gRPC client of ``address``."""
        ...

    def call_leader(self, topic: str, broker_name: str, call: Callable[[GrpcClient], _T]) -> _T:
        """``call`` on the broker's current member, following a group's leader within the
        resolver's timeout (``RouteResolver.call_leader``)."""
        ...


class MembershipStream:
    """One broker's heartbeat stream and the thread that renews it and reads its pushes."""

    def __init__(self, owner: Membership, address: str, broker_name: str) -> None:
        self._owner = owner
        self.address = address
        self.broker_name = broker_name
        self._stream: HeartbeatStream | None = None
        self._running = True
        self._interval_s = owner.heartbeat_interval_ms / 1000.0
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-membership-{address}", daemon=True
        )
        self._thread.start()

    def send_now(self) -> None:
        """Send the consumer's heartbeat on the stream now (nothing when it is not open)."""
        stream = self._stream
        request = self._owner.current_heartbeat()
        if stream is not None and request is not None:
            try:
                stream.send(request)
            except ClientError as error:
                _log.debug("heartbeat not sent: address=%s: %s", self.address, error)

    def close(self) -> None:
        """Half-close the stream (the broker drops the consumer from its groups) and end the
        thread."""
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
                    self._owner.on_push(
                        self.address, membership.consumer_group, list(membership.consumer_ids)
                    )
            if time.monotonic() >= next_heartbeat_s:
                next_heartbeat_s = time.monotonic() + self._interval_s
                self.send_now()


class Membership:
    """The consumer's registrations and the memberships pushed back (see the module).

    ``routes()`` gives the consumer's current routes (a new resolver after
    ``update_endpoints``); ``run_later`` runs blocking work off the caller's thread."""

    def __init__(
        self,
        routes: Callable[[], RouteLookup],
        heartbeat_interval_ms: int,
        run_later: Callable[[Callable[[], None]], object],
    ) -> None:
        self._routes = routes
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._run_later = run_later
        self._lock = threading.Lock()
        self._heartbeat: ConsumerHeartbeat | None = None
        self._listener: MembershipListener | None = None
        self._streams: dict[str, MembershipStream] = {}
        self._primary: str | None = None
        """The broker whose pushed members the consumer follows (the first of the route)."""
        self._settle_until_ns = 0
        self._held: tuple[str, list[str]] | None = None
        self._closed = False

    def client(self, address: str) -> GrpcClient:
        """A gRPC client of ``address`` (the streams open theirs with it)."""
        return self._routes().client(address)

    def current_heartbeat(self) -> consumer_group_pb2.HeartbeatRequest | None:
        """The consumer's heartbeat as sent, or None before it registers."""
        heartbeat = self._heartbeat
        return heartbeat_request(heartbeat) if heartbeat is not None else None

    def consumer_ids(self, consumer_group: str, topic: str) -> list[str]:
        """The group's members as the first broker of ``topic``'s route knows them (whose
        pushes are then followed); registers with the route's brokers first."""
        routes = self._routes()
        route = routes.route(topic)
        self.ensure(topic, route.brokers.values())
        name = sorted(route.brokers)[0]
        self._primary = name
        response = routes.call_leader(
            topic, name, lambda client: client.get_consumer_ids(consumer_group)
        )
        return list(response.consumer_ids)

    def on_push(self, address: str, consumer_group: str, consumer_ids: Sequence[str]) -> None:
        """A push from the broker at ``address``: passed on when that broker is the one whose
        members the consumer asks for (the first broker of the topic's route). Brokers see a
        member come or go at slightly different times; following one avoids flapping between
        their views (which would hand queues back and forth). Held while a new leader settles
        (see the module)."""
        listener = self._listener
        if listener is None or not self._is_primary(address):
            return
        if time.monotonic_ns() < self._settle_until_ns:
            self._held = (consumer_group, list(consumer_ids))
            return
        self._held = None
        listener(consumer_group, consumer_ids)

    def _is_primary(self, address: str) -> bool:
        primary = self._primary
        if primary is None:
            return True
        member = self._routes().member(primary)
        return member is None or member.grpc_address == address

    def start(self, heartbeat: ConsumerHeartbeat, listener: MembershipListener) -> None:
        """Register with the brokers now (raises if none answers) and keep the streams open."""
        self._heartbeat = heartbeat
        self._listener = listener
        self.ensure_all()

    def send(self, heartbeat: ConsumerHeartbeat) -> None:
        """Send the consumer's current subscriptions now, registering with new brokers."""
        self._heartbeat = heartbeat
        self.ensure_all()
        for stream in list(self._streams.values()):
            stream.send_now()

    def ensure_all(self) -> None:
        """A stream to every broker of the subscribed topics' routes."""
        heartbeat = self._heartbeat
        if heartbeat is None:
            return
        for subscription in heartbeat.subscriptions:
            try:
                route = self._routes().route(subscription.topic)
            except ClientError as error:
                _log.info("no route yet for topic=%s: %s", subscription.topic, error)
                continue
            self.ensure(subscription.topic, route.brokers.values())

    def ensure(self, topic: str, brokers: Iterable[BrokerRoute]) -> None:
        """A stream to each of ``brokers`` (of ``topic``'s route), registering synchronously
        with each new one: with a group's leader, followed through a failover (a leader that
        died, an election) within the resolver's timeout, as the consumer's other calls."""
        request = self.current_heartbeat()
        if request is None:
            return
        for broker in list(brokers):
            if broker.grpc_address in self._streams:
                continue
            with self._lock:
                if self._closed or broker.grpc_address in self._streams:
                    continue
                # Register synchronously first: the next GetConsumerIds must see this client.
                address = self._routes().call_leader(
                    topic, broker.broker_name, lambda client: _registered(client, request)
                )
                if address not in self._streams:
                    self._streams[address] = MembershipStream(self, address, broker.broker_name)

    def leader_moved(self) -> None:
        """A broker's leader moved (a call or pull of the consumer found its new member): on
        the ``run_later`` thread, register with the new leader, close the streams with former
        members and, when the followed broker moved, hold its pushes for a while (see the
        module). Caller: the broker API, on any thread."""
        with contextlib.suppress(RuntimeError):  # closed
            self._run_later(self._follow_leaders)

    def _follow_leaders(self) -> None:
        routes = self._routes()
        former = []
        with self._lock:
            for address, stream in list(self._streams.items()):
                member = routes.member(stream.broker_name)
                if member is not None and member.grpc_address != address:
                    former.append(self._streams.pop(address))
        if any(stream.broker_name == self._primary for stream in former):
            self._settle_until_ns = time.monotonic_ns() + MEMBERSHIP_SETTLE_MS * 1_000_000
            timer = threading.Timer(MEMBERSHIP_SETTLE_MS / 1000, self._settled)
            timer.daemon = True
            timer.start()
        try:
            self.ensure_all()
        except ClientError as error:
            _log.warning("registering with a broker's new leader failed: %s", error)
        for stream in former:
            _log.info("membership stream closed: the broker's leader moved: address=%s",
                      stream.address)  # fmt: skip
            stream.close()

    def _settled(self) -> None:
        held, self._held = self._held, None
        listener = self._listener
        if held is not None and listener is not None:
            listener(*held)

    def unregister(self, client_id: str, consumer_group: str) -> None:
        """Leave the group at every broker at once (a clean shutdown) and close the streams."""
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

    def close(self) -> None:
        """Close the streams (without leaving the groups); nothing opens new ones."""
        with self._lock:
            self._closed = True
            streams, self._streams = dict(self._streams), {}
        for stream in streams.values():
            stream.close()
