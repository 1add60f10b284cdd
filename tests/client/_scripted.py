"""Scripted control planes for failover tests: routes naming a broker group's member, gRPC
clients that answer what a test lists (a route, an error), and a resolver over them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aeromq.client.failover import error_for_status
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.route import RouteResolver
from aeromq.common import PERM_READ_WRITE, ClientError, NotLeaderError, ResponseCode
from aeromq.proto import common_pb2

Answer = common_pb2.TopicRouteData | ClientError | Callable[[], common_pb2.TopicRouteData]


def member_endpoints(grpc_address: str) -> common_pb2.BrokerEndpoints:
    """A member's endpoints: gRPC at ``grpc_address``, UDP ingress on a port of its own."""
    port = int(grpc_address.rpartition(":")[2])
    return common_pb2.BrokerEndpoints(
        grpc_address=grpc_address,
        udp_channel=f"aeron:udp?endpoint=127.0.0.1:{port + 1000}",
        udp_stream_id=10,
        hostname="elsewhere",
    )


def route_data(
    topic: str, members: Mapping[str, str], queues: int = 2
) -> common_pb2.TopicRouteData:
    """``topic``'s route: ``queues`` queues on each broker name, served by the member whose
    gRPC address ``members`` gives."""
    return common_pb2.TopicRouteData(
        topic=topic,
        queue_datas=[
            common_pb2.QueueData(
                broker_name=name,
                read_queue_nums=queues,
                write_queue_nums=queues,
                perm=PERM_READ_WRITE,
            )
            for name in members
        ],
        broker_datas=[
            common_pb2.BrokerData(
                cluster_name="c", broker_name=name, endpoints=member_endpoints(address)
            )
            for name, address in members.items()
        ],
    )


def not_leader(leader: str | None = None) -> NotLeaderError:
    """A follower's refusal, naming ``leader`` (a gRPC address) when given."""
    status = common_pb2.Status(code=ResponseCode.NOT_LEADER, message="a follower")
    if leader is not None:
        status.leader.CopyFrom(member_endpoints(leader))
    error = error_for_status(status)
    assert isinstance(error, NotLeaderError)
    return error


class ScriptedClient:
    """A gRPC client of one address: each ``query_route`` takes the next answer of ``routes``
    (the last one again once they run out); ``calls`` counts them."""

    def __init__(self, address: str, *routes: Answer) -> None:
        self.address = address
        self.routes = list(routes)
        self.calls = 0

    def query_route(
        self, topic: str, *, namesrv: bool = False, timeout_s: float | None = None
    ) -> common_pb2.TopicRouteData:
        self.calls += 1
        answer = self.routes.pop(0) if len(self.routes) > 1 else self.routes[0]
        if isinstance(answer, ClientError):
            raise answer
        if callable(answer):
            return answer()
        return answer

    def close(self) -> None:
        return None


class ScriptedResolver(RouteResolver):
    """A resolver whose endpoints are ``clients`` (asked as brokers)."""

    def __init__(self, *clients: ScriptedClient, **kwargs: Any) -> None:
        super().__init__([c.address for c in clients], kind="broker", **kwargs)
        self.scripted = {c.address: c for c in clients}

    def client(self, address: str) -> GrpcClient:
        found = self.scripted.get(address)
        if found is None:  # a member no endpoint lists: a client of its own
            found = self.scripted[address] = ScriptedClient(address, ClientError("unscripted"))
        return found  # type: ignore[return-value]  # duck-typed: what the resolver calls
