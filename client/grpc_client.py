"""``GrpcClient``: the typed gRPC stub wrapper that producers, consumers and the admin tool
share, for a broker (``BrokerAdmin``, ``ConsumerGroupService``) or a name server
(``NameServer``) at one ``host:port``.

Every call has a timeout (``timeout_s``, per call or the client's default). Failures raise the
client's errors, never a raw ``grpc.RpcError``:

- a response whose ``Status`` is not SUCCESS raises ``error_for_code(code, message)`` (e.g.
  ``TopicNotFoundError``), with ``address`` and ``rpc`` kept as values (a ``NOT_LEADER`` answer
  of a broker group's follower: :class:`~common.NotLeaderError` with the leader it names as
  ``values["leader"]``, :func:`~client.failover.error_for_status`);
- gRPC's own failures are translated with ``raise ... from exc``: UNAVAILABLE ->
  ``BrokerUnavailableError``, DEADLINE_EXCEEDED -> ``RequestTimeoutError``, UNIMPLEMENTED ->
  ``NotSupportedError`` (e.g. a name server asked a broker-only RPC), RESOURCE_EXHAUSTED ->
  ``BrokerBusyError``, INVALID_ARGUMENT -> ``IllegalArgumentError``, UNAUTHENTICATED ->
  ``AuthenticationError``, PERMISSION_DENIED -> ``AccessDeniedError`` (a secured broker: the
  message names the user, resource and permission), others -> ``BrokerInternalError``.

``credentials`` (an ACL user) go with every call; ``tls`` makes the channel TLS (mutual with a
client certificate).

``open_heartbeat_stream`` opens the consumer-group membership stream (heartbeats up, pushed
membership changes down). Thread-safe: one channel, calls from any thread.
"""

from __future__ import annotations

import enum
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Final, Self, TypeVar

import grpc
from google.protobuf.message import Message as ProtoMessage

from aeromq.client._grpc_consume_calls import ConsumeRetryCalls
from aeromq.client._security import ClientTls, Credentials, open_channel
from aeromq.client.failover import error_for_status
from aeromq.common import (
    AccessDeniedError,
    AuthenticationError,
    BrokerBusyError,
    BrokerInternalError,
    BrokerUnavailableError,
    ClientError,
    IllegalArgumentError,
    IllegalStateError,
    NotSupportedError,
    RequestTimeoutError,
)
from aeromq.proto import (
    admin_pb2,
    admin_pb2_grpc,
    common_pb2,
    consumer_group_pb2,
    consumer_group_pb2_grpc,
    namesrv_pb2,
    namesrv_pb2_grpc,
    transaction_pb2,
    transaction_pb2_grpc,
)

__all__ = ["DEFAULT_TIMEOUT_S", "GrpcClient", "HeartbeatStream", "translate_rpc_error"]

DEFAULT_TIMEOUT_S: Final = 3.0

_R = TypeVar("_R", bound=ProtoMessage)

_BY_GRPC_CODE: Final[dict[grpc.StatusCode, type[ClientError]]] = {
    grpc.StatusCode.UNAVAILABLE: BrokerUnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: RequestTimeoutError,
    grpc.StatusCode.UNIMPLEMENTED: NotSupportedError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: BrokerBusyError,
    grpc.StatusCode.INVALID_ARGUMENT: IllegalArgumentError,
    grpc.StatusCode.CANCELLED: IllegalStateError,
    grpc.StatusCode.UNAUTHENTICATED: AuthenticationError,
    grpc.StatusCode.PERMISSION_DENIED: AccessDeniedError,
}

_RESET_TARGETS: Final = {
    "earliest": admin_pb2.RESET_EARLIEST,
    "latest": admin_pb2.RESET_LATEST,
    "time": admin_pb2.RESET_BY_TIME,
}


def translate_rpc_error(exc: grpc.RpcError, address: str, rpc: str) -> ClientError:
    """The client error for a failed gRPC call (the caller raises it ``from exc``)."""
    code = exc.code() if isinstance(exc, grpc.Call) else grpc.StatusCode.UNKNOWN
    details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
    error_class = _BY_GRPC_CODE.get(code, BrokerInternalError)
    return error_class(
        f"gRPC call failed: {details or code.name}",
        address=address,
        rpc=rpc,
        grpc_code=code.name,
    )


class GrpcClient(ConsumeRetryCalls):
    """A channel to ``address`` (``host:port``) with typed calls (the consume-retry ones in
    :class:`~client._grpc_consume_calls.ConsumeRetryCalls`). Use as a context manager or
    ``close()`` it."""

    def __init__(
        self,
        address: str,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        credentials: Credentials | None = None,
        tls: ClientTls | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise IllegalArgumentError("timeout_s must be > 0", timeout_s=timeout_s)
        self.address = address
        self.timeout_s = timeout_s
        self.credentials = credentials
        self.tls = tls
        self._channel = open_channel(address, tls=tls, credentials=credentials)
        self._admin = admin_pb2_grpc.BrokerAdminStub(self._channel)
        self._groups = consumer_group_pb2_grpc.ConsumerGroupServiceStub(self._channel)
        self._namesrv = namesrv_pb2_grpc.NameServerStub(self._channel)
        self._transactions = transaction_pb2_grpc.TransactionServiceStub(self._channel)
        self._closed = False

    def close(self) -> None:
        """Close the channel; later calls raise :class:`IllegalStateError`. Closing twice does
        nothing more."""
        if not self._closed:
            self._closed = True
            self._channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until the channel connects; ``BrokerUnavailableError`` after the timeout."""
        future = grpc.channel_ready_future(self._channel)
        try:
            future.result(timeout=timeout_s or self.timeout_s)
        except grpc.FutureTimeoutError as exc:
            raise BrokerUnavailableError(
                "gRPC server not reachable", address=self.address, timeout_s=timeout_s
            ) from exc

    # -- topics ------------------------------------------------------------------------------

    def create_topic(
        self,
        topic: str,
        *,
        read_queue_nums: int = 0,
        write_queue_nums: int = 0,
        perm: int = 0,
        order: bool = False,
        timeout_s: float | None = None,
    ) -> common_pb2.TopicConfig:
        """Create ``topic`` (queue counts 0: the broker's default); returns it as stored."""
        config = common_pb2.TopicConfig(
            topic_name=topic,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
        )
        request = admin_pb2.CreateTopicRequest(topic=config)
        return self._call("CreateTopic", self._admin.CreateTopic, request, timeout_s).topic

    def update_topic(
        self, config: common_pb2.TopicConfig, *, timeout_s: float | None = None
    ) -> common_pb2.TopicConfig:
        """Replace an existing topic's config (queue counts 0 keep the current ones); returns
        it as stored. Raises :class:`TopicNotFoundError` when the broker has no such topic."""
        request = admin_pb2.UpdateTopicRequest(topic=config)
        return self._call("UpdateTopic", self._admin.UpdateTopic, request, timeout_s).topic

    def delete_topic(self, topic: str, *, timeout_s: float | None = None) -> None:
        """Delete ``topic``, its consume queues and every group's offsets on it (its records
        go with retention). Raises :class:`TopicNotFoundError` when there is no such topic."""
        request = admin_pb2.DeleteTopicRequest(topic=topic)
        self._call("DeleteTopic", self._admin.DeleteTopic, request, timeout_s)

    def list_topics(
        self, *, namesrv: bool = False, timeout_s: float | None = None
    ) -> list[common_pb2.TopicConfig]:
        """Every topic of the broker (or, with ``namesrv``, of every registered broker)."""
        stub = self._namesrv.ListTopics if namesrv else self._admin.ListTopics
        response = self._call("ListTopics", stub, common_pb2.ListTopicsRequest(), timeout_s)
        return list(response.topics)

    # -- routes and clusters -----------------------------------------------------------------

    def query_route(
        self, topic: str, *, namesrv: bool = False, timeout_s: float | None = None
    ) -> common_pb2.TopicRouteData:
        """The topic's route from the broker itself, or with ``namesrv`` from a name server."""
        stub = self._namesrv.QueryRoute if namesrv else self._admin.QueryRoute
        request = common_pb2.QueryRouteRequest(topic=topic)
        return self._call("QueryRoute", stub, request, timeout_s).route

    def list_clusters(
        self, *, namesrv: bool = False, timeout_s: float | None = None
    ) -> list[common_pb2.ClusterInfo]:
        """The broker's own cluster with itself in it, or with ``namesrv`` every cluster a
        name server knows (brokers sorted by name)."""
        stub = self._namesrv.ListClusters if namesrv else self._admin.ListClusters
        response = self._call("ListClusters", stub, common_pb2.ListClustersRequest(), timeout_s)
        return list(response.clusters)

    # -- offsets -----------------------------------------------------------------------------

    def commit_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, timeout_s: float | None = None
    ) -> None:
        """Commit ``offset`` (the next to consume) for the group (RPC ``UpdateOffset``)."""
        request = admin_pb2.UpdateOffsetRequest(
            consumer_group=group, topic=topic, queue_id=queue_id, offset=offset
        )
        self._call("UpdateOffset", self._admin.UpdateOffset, request, timeout_s)

    def release_queue(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        client_id: str,
        timeout_s: float | None = None,
    ) -> None:
        """Commit ``offset``, then ``client_id`` lets go of the queue (offset -1: release
        only): the member it moved to is granted it next (RPC ``UpdateOffset`` with
        ``release``)."""
        request = admin_pb2.UpdateOffsetRequest(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            offset=offset,
            client_id=client_id,
            release=True,
        )
        self._call("UpdateOffset", self._admin.UpdateOffset, request, timeout_s)

    def acquire_queue(
        self,
        group: str,
        topic: str,
        queue_id: int,
        client_id: str,
        *,
        force: bool = False,
        timeout_s: float | None = None,
    ) -> tuple[int, str]:
        """Take the group's queue over for ``client_id``: (committed offset or -1, ``""``)
        when granted, (-1, holder id) while another live member holds it."""
        request = admin_pb2.QueryOffsetRequest(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            client_id=client_id,
            acquire=True,
            force=force,
        )
        response = self._call("QueryOffset", self._admin.QueryOffset, request, timeout_s)
        return response.offset, response.holder

    def query_offset(
        self, group: str, topic: str, queue_id: int, *, timeout_s: float | None = None
    ) -> int:
        """The group's committed offset of the queue; -1 when it never committed one."""
        request = admin_pb2.QueryOffsetRequest(consumer_group=group, topic=topic, queue_id=queue_id)
        return self._call("QueryOffset", self._admin.QueryOffset, request, timeout_s).offset

    def search_offset(
        self,
        topic: str,
        queue_id: int,
        timestamp_ms: int,
        *,
        upper: bool = False,
        timeout_s: float | None = None,
    ) -> int:
        """The first offset stored at or after ``timestamp_ms`` (``upper``: the last at or
        before it)."""
        request = admin_pb2.SearchOffsetRequest(
            topic=topic,
            queue_id=queue_id,
            timestamp_ms=timestamp_ms,
            boundary=admin_pb2.UPPER if upper else admin_pb2.LOWER,
        )
        return self._call("SearchOffset", self._admin.SearchOffset, request, timeout_s).offset

    def query_message(
        self,
        message_id: str = "",
        *,
        topic: str = "",
        key: str = "",
        max_count: int = 0,
        begin_ms: int = 0,
        end_ms: int = 0,
        timeout_s: float | None = None,
    ) -> list[admin_pb2.StoredMessage]:
        """The stored message of an offset message id, or the messages of ``topic`` with
        ``key`` (newest first; ``max_count`` 0: 32; ``end_ms`` 0: no end). An id that names no
        message raises the error of QUERY_NOT_FOUND."""
        request = admin_pb2.QueryMessageRequest(
            message_id=message_id,
            topic=topic,
            key=key,
            max_count=max_count,
            begin_ms=begin_ms,
            end_ms=end_ms,
        )
        response = self._call("QueryMessage", self._admin.QueryMessage, request, timeout_s)
        return list(response.messages)

    def min_offset(self, topic: str, queue_id: int, *, timeout_s: float | None = None) -> int:
        """The queue's first offset still stored (RPC ``GetMinOffset``)."""
        request = admin_pb2.GetMinOffsetRequest(topic=topic, queue_id=queue_id)
        return self._call("GetMinOffset", self._admin.GetMinOffset, request, timeout_s).offset

    def max_offset(self, topic: str, queue_id: int, *, timeout_s: float | None = None) -> int:
        """The offset the queue's next message will get (RPC ``GetMaxOffset``)."""
        request = admin_pb2.GetMaxOffsetRequest(topic=topic, queue_id=queue_id)
        return self._call("GetMaxOffset", self._admin.GetMaxOffset, request, timeout_s).offset

    def reset_offset(
        self,
        group: str,
        topic: str,
        target: str,
        *,
        timestamp_ms: int = 0,
        queue_id: int = -1,
        timeout_s: float | None = None,
    ) -> dict[int, int]:
        """Reset the group's offsets on ``topic`` to ``"earliest"``, ``"latest"`` or
        ``"time"`` (the first message at or after ``timestamp_ms``); every queue, or one.
        Returns the new offsets by queue id."""
        found = _RESET_TARGETS.get(target)
        if found is None:
            raise IllegalArgumentError(
                "reset target must be earliest, latest or time", target=target
            )
        request = admin_pb2.ResetOffsetRequest(
            consumer_group=group,
            topic=topic,
            target=found,
            timestamp_ms=timestamp_ms,
            queue_id=queue_id,
        )
        response = self._call("ResetOffset", self._admin.ResetOffset, request, timeout_s)
        return {q.queue_id: q.offset for q in response.offsets}

    def consumer_progress(
        self, group: str, topic: str = "", *, timeout_s: float | None = None
    ) -> admin_pb2.GetConsumerProgressResponse:
        """The group's progress on this broker (on ``topic``, or on every topic it consumes):
        each queue's max offset, committed offset and lag (sorted by topic, then queue id),
        the total lag and the online members."""
        request = admin_pb2.GetConsumerProgressRequest(consumer_group=group, topic=topic)
        return self._call(
            "GetConsumerProgress", self._admin.GetConsumerProgress, request, timeout_s
        )

    # -- groups and stats --------------------------------------------------------------------

    def list_groups(self, *, timeout_s: float | None = None) -> list[admin_pb2.GroupInfo]:
        """The broker's consumer groups, sorted: each one's topics (subscribed or with
        committed offsets), online members and message model."""
        request = admin_pb2.ListGroupsRequest()
        return list(self._call("ListGroups", self._admin.ListGroups, request, timeout_s).groups)

    def broker_stats(self, *, timeout_s: float | None = None) -> admin_pb2.BrokerStats:
        """The broker's figures: uptime, topic, group and consumer counts, the commit log's
        min, max and flushed offsets, and its services' named counters."""
        request = admin_pb2.GetBrokerStatsRequest()
        return self._call("GetBrokerStats", self._admin.GetBrokerStats, request, timeout_s).stats

    def send_heartbeat(
        self, request: consumer_group_pb2.HeartbeatRequest, *, timeout_s: float | None = None
    ) -> consumer_group_pb2.HeartbeatResponse:
        """One heartbeat without a stream; returns the client's groups' memberships."""
        return self._call("SendHeartbeat", self._groups.SendHeartbeat, request, timeout_s)

    def unregister_client(
        self, client_id: str, groups: Sequence[str] = (), *, timeout_s: float | None = None
    ) -> None:
        """``client_id`` leaves ``groups`` (none given: every group it is in) at once, without
        waiting for its heartbeats to time out; the broker pushes the change to the remaining
        members."""
        request = consumer_group_pb2.UnregisterClientRequest(
            client_id=client_id, consumer_groups=list(groups)
        )
        self._call("UnregisterClient", self._groups.UnregisterClient, request, timeout_s)

    def get_consumer_ids(
        self, group: str, *, timeout_s: float | None = None
    ) -> consumer_group_pb2.GetConsumerIdsResponse:
        """The group's live members (``consumer_ids``, sorted) and the membership's
        ``version``."""
        request = consumer_group_pb2.GetConsumerIdsRequest(consumer_group=group)
        return self._call("GetConsumerIds", self._groups.GetConsumerIds, request, timeout_s)

    def open_heartbeat_stream(self) -> HeartbeatStream:
        """Open the membership stream (no deadline: it lives until closed)."""
        return HeartbeatStream(self)

    # -- transactions ------------------------------------------------------------------------

    def end_transaction(
        self, request: transaction_pb2.EndTransactionRequest, *, timeout_s: float | None = None
    ) -> None:
        """Commit or roll back a half message (``broker.transaction``); raises the error of a
        refusal."""
        self._call("EndTransaction", self._transactions.EndTransaction, request, timeout_s)

    def poll_transaction_checks(
        self, group: str, timeout_ms: int, *, max_checks: int = 0
    ) -> list[transaction_pb2.TransactionCheck]:
        """The check-backs due for ``group``'s half messages, waiting up to ``timeout_ms`` for
        some (an empty list when none came)."""
        request = transaction_pb2.PollTransactionChecksRequest(
            producer_group=group, max_checks=max_checks, timeout_ms=timeout_ms
        )
        stub = self._transactions.PollTransactionChecks
        timeout_s = timeout_ms / 1000 + self.timeout_s
        return list(self._call("PollTransactionChecks", stub, request, timeout_s).checks)

    # -- name server -------------------------------------------------------------------------

    def register_broker(
        self, request: namesrv_pb2.RegisterBrokerRequest, *, timeout_s: float | None = None
    ) -> None:
        """Register a broker with a name server: its endpoints and every topic it holds
        (replacing what the name server knew). Caller: the broker's name server registrar."""
        self._call("RegisterBroker", self._namesrv.RegisterBroker, request, timeout_s)

    def unregister_broker(
        self, cluster_name: str, broker_name: str, *, timeout_s: float | None = None
    ) -> None:
        """Drop a broker from a name server's routes at once (a broker shutting down)."""
        request = namesrv_pb2.UnregisterBrokerRequest(
            cluster_name=cluster_name, broker_name=broker_name
        )
        self._call("UnregisterBroker", self._namesrv.UnregisterBroker, request, timeout_s)

    def broker_heartbeat(
        self,
        cluster_name: str,
        broker_name: str,
        data_version: int,
        *,
        timeout_s: float | None = None,
    ) -> bool:
        """Renew the broker's registration; True when the name server wants it to register
        again (it does not know the broker, or holds an older topic version)."""
        request = namesrv_pb2.BrokerHeartbeatRequest(
            cluster_name=cluster_name, broker_name=broker_name, data_version=data_version
        )
        stub = self._namesrv.BrokerHeartbeat
        return self._call("BrokerHeartbeat", stub, request, timeout_s).registration_required

    # -- plumbing ----------------------------------------------------------------------------

    def _call(
        self,
        rpc: str,
        stub: Callable[..., _R],
        request: ProtoMessage,
        timeout_s: float | None,
    ) -> _R:
        if self._closed:
            raise IllegalStateError("gRPC client is closed", address=self.address, rpc=rpc)
        try:
            response = stub(request, timeout=timeout_s or self.timeout_s)
        except grpc.RpcError as exc:
            raise translate_rpc_error(exc, self.address, rpc) from exc
        # Every response message of the schema has a ``status`` field.
        status: common_pb2.Status = getattr(response, "status")  # noqa: B009
        if status.code != 0:
            raise error_for_status(status, address=self.address, rpc=rpc)
        return response


class _End(enum.Enum):
    """The end of a heartbeat stream's queue (an enum member, so that ``is _END`` narrows)."""

    END = 0


_END: Final = _End.END


class HeartbeatStream:
    """The consumer-group membership stream: ``send`` heartbeats, read pushes with ``poll``
    (or iterate ``responses``). ``close`` half-closes the stream, which tells the broker the
    client is leaving its groups; the broker pushes the change to the remaining members."""

    def __init__(self, client: GrpcClient) -> None:
        self._address = client.address
        self._requests: queue.SimpleQueue[consumer_group_pb2.HeartbeatRequest | _End] = (
            queue.SimpleQueue()
        )
        self._responses: queue.SimpleQueue[consumer_group_pb2.HeartbeatResponse | _End] = (
            queue.SimpleQueue()
        )
        self._call = client._groups.Heartbeat(self._request_iterator())
        self._closed = False
        self._error: ClientError | None = None
        self._reader = threading.Thread(
            target=self._read, name="aeromq-heartbeat-stream", daemon=True
        )
        self._reader.start()

    def send(self, request: consumer_group_pb2.HeartbeatRequest) -> None:
        """Queue one heartbeat for the stream (sent by gRPC's thread; never blocks). Raises
        :class:`IllegalStateError` once the stream is closed."""
        if self._closed:
            raise IllegalStateError("heartbeat stream is closed", address=self._address)
        self._requests.put(request)

    def poll(self, timeout_s: float) -> consumer_group_pb2.HeartbeatResponse | None:
        """The next pushed response, or None after ``timeout_s``. Raises the stream's error
        once it failed or ended (``IllegalStateError`` when ended by ``close``)."""
        try:
            item = self._responses.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if item is _END:
            self._responses.put(_END)  # keep later polls failing the same way
            raise self._error or IllegalStateError("heartbeat stream ended", address=self._address)
        response: consumer_group_pb2.HeartbeatResponse = item
        if response.status.code != 0:
            raise error_for_status(response.status, address=self._address)
        return response

    def responses(self, timeout_s: float) -> Iterator[consumer_group_pb2.HeartbeatResponse]:
        """Pushed responses until the stream ends or none comes within ``timeout_s``."""
        while True:
            try:
                response = self.poll(timeout_s)
            except ClientError:
                return
            if response is None:
                return
            yield response

    def close(self, timeout_s: float = 5.0) -> None:
        """Half-close (leave the groups) and wait for the broker to end the stream."""
        if self._closed:
            return
        self._closed = True
        self._requests.put(_END)
        self._reader.join(timeout_s)
        if self._reader.is_alive():
            self._call.cancel()
            self._reader.join(timeout_s)

    def cancel(self) -> None:
        """End the stream at once (as a crash would)."""
        self._closed = True
        self._requests.put(_END)
        self._call.cancel()
        self._reader.join(5.0)

    def _request_iterator(self) -> Iterator[consumer_group_pb2.HeartbeatRequest]:
        while True:
            item = self._requests.get()
            if item is _END:
                return
            yield item

    def _read(self) -> None:
        try:
            for response in self._call:
                self._responses.put(response)
        except grpc.RpcError as exc:
            if not self._closed:
                self._error = translate_rpc_error(exc, self._address, "Heartbeat")
        finally:
            self._responses.put(_END)
