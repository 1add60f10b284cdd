"""The RocketMQ 5 endpoint of a broker group's member: RocketMQ 5 clients sent to the leader.

Only a group's leader stores and serves (``docs/replication.md``). RocketMQ's official clients
(``apache/rocketmq-clients``, Java and Python alike) look a topic's route up when they start
and then on a timer only (the Java client 10 s after start and every 30 s after; the Python
client the same), never because of an answer's ``Code``: a send that fails isolates its endpoint
and is tried again at once on the next queue of the route (all of one broker's queues name the
same endpoint), and a receive that fails is tried again after a back-off. No ``Code`` makes them
refresh a route at once. So a member that does not lead does not merely refuse:

- its route and assignment answers name the leader's endpoint, so every client's next refresh
  goes there (while no leader is known, an election, they answer ``HA_NOT_AVAILABLE`` and the
  clients keep the route they have);
- the calls that still reach it (a client whose route is older than the failover) are
  forwarded to the leader's endpoint (:class:`LeaderForwarder`) and answered as the leader
  answers: sends, receives, acks, invisibility changes and dead letters. While no leader is
  known, or the leader does not answer, they are refused with ``HA_NOT_AVAILABLE`` ("the HA
  mechanism is not working now"), which the clients retry.

What the endpoint needs of the group is :class:`EndpointLeadership`: whether this member
serves RocketMQ 5 calls now, and where the leader's RocketMQ 5 endpoint is. A single broker
(none given) always serves, at its own address.

Caller: the servicer (``_service.py``), on its threads. Affects: one gRPC channel to the leader's
endpoint, made again when the leader moves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Final, Protocol, TypeVar

import grpc

from aeromq.broker.rocketmq._status import ProtocolStatusError, status
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc

__all__ = ["FORWARDED_METADATA_PREFIXES", "EndpointLeadership", "LeaderForwarder", "unavailable"]

Code = definition_pb2.Code

FORWARDED_METADATA_PREFIXES: Final = ("x-mq-", "authorization")
"""The request headers a forwarded call carries on (the client's id, language, version,
namespace and signature): what the leader's endpoint reads of a call's metadata."""
_DEFAULT_TIMEOUT_S: Final = 30.0
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")


class EndpointLeadership(Protocol):
    """A group member's view of who serves RocketMQ 5 clients (see the module)."""

    def serves(self) -> bool:
        """Whether this member serves RocketMQ 5 calls now (it leads its group)."""
        ...

    def leader_endpoint(self) -> tuple[str, int] | None:
        """The (host, port) of the group leader's RocketMQ 5 endpoint, or None while no leader
        is known."""
        ...


def _metadata(context: grpc.ServicerContext) -> tuple[tuple[str, str | bytes], ...]:
    return tuple(
        (key, value)
        for key, value in context.invocation_metadata()
        if key.startswith(FORWARDED_METADATA_PREFIXES)
    )


def _timeout_s(context: grpc.ServicerContext) -> float:
    remaining = context.time_remaining()
    return _DEFAULT_TIMEOUT_S if remaining is None else max(remaining, 0.001)


def unavailable(message: str, **values: object) -> ProtocolStatusError:
    """The refusal of a call that no leader can serve now (retried by the clients)."""
    return ProtocolStatusError(Code.HA_NOT_AVAILABLE, message, **values)


class LeaderForwarder:
    """Forwards RocketMQ 5 calls to the group leader's endpoint (see the module). Thread-safe."""

    def __init__(self, leadership: EndpointLeadership, group: str) -> None:
        self.leadership = leadership
        self.group = group
        self._lock = threading.Lock()
        self._address = ""
        self._channel: grpc.Channel | None = None
        self._stub: service_pb2_grpc.MessagingServiceStub | None = None
        self.forwarded = 0
        """Calls forwarded (a counter for tests and stats)."""

    def leader_endpoint(self) -> tuple[str, int]:
        """The leader's endpoint; raises ``HA_NOT_AVAILABLE`` while none is known."""
        endpoint = self.leadership.leader_endpoint()
        if endpoint is None:
            raise unavailable(
                "not the leader of its group, and no leader is known", group=self.group
            )
        return endpoint

    def stub(self) -> service_pb2_grpc.MessagingServiceStub:
        """A stub on the current leader's endpoint (a new channel when the leader moved)."""
        host, port = self.leader_endpoint()
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        with self._lock:
            if address != self._address or self._stub is None:
                if self._channel is not None:
                    self._channel.close()
                self._channel = grpc.insecure_channel(address)
                self._stub = service_pb2_grpc.MessagingServiceStub(self._channel)
                self._address = address
            self.forwarded += 1
            return self._stub

    def unary(
        self,
        method: Callable[
            [service_pb2_grpc.MessagingServiceStub], grpc.UnaryUnaryMultiCallable[_Req, _Resp]
        ],
        request: _Req,
        context: grpc.ServicerContext,
    ) -> _Resp:
        """The leader's answer to ``request`` by the unary ``method`` of its stub; raises
        ``HA_NOT_AVAILABLE`` when no leader is known or it does not answer."""
        call = method(self.stub())
        try:
            return call(request, timeout=_timeout_s(context), metadata=_metadata(context))
        except grpc.RpcError as exc:
            raise unavailable(
                "the group's leader did not answer a forwarded call",
                leader=self._address,
                grpc_code=exc.code().name if isinstance(exc, grpc.Call) else "UNKNOWN",
            ) from exc

    def receive(
        self, request: service_pb2.ReceiveMessageRequest, context: grpc.ServicerContext
    ) -> Iterator[service_pb2.ReceiveMessageResponse]:
        """The leader's answers to a receive, streamed on as they come; a leader that stops
        answering ends the stream with ``HA_NOT_AVAILABLE`` (unless messages came already)."""
        try:
            stub = self.stub()
        except ProtocolStatusError as exc:
            yield service_pb2.ReceiveMessageResponse(status=status(exc.v2_code, str(exc)))
            return
        answered = False
        try:
            for response in stub.ReceiveMessage(
                request, timeout=_timeout_s(context), metadata=_metadata(context)
            ):
                answered = True
                yield response
        except grpc.RpcError as exc:
            if not answered:
                refusal = unavailable(
                    "the group's leader did not answer a forwarded receive",
                    leader=self._address,
                    grpc_code=exc.code().name if isinstance(exc, grpc.Call) else "UNKNOWN",
                )
                yield service_pb2.ReceiveMessageResponse(
                    status=status(refusal.v2_code, str(refusal))
                )

    def close(self) -> None:
        """Close the channel to the leader."""
        with self._lock:
            channel, self._channel, self._stub, self._address = self._channel, None, None, ""
        if channel is not None:
            channel.close()
