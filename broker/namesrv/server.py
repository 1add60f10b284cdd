# ruff: noqa: N802  (method names are the RPC names that gRPC dispatches on)
"""The name server's gRPC service (``NameServer``, with health and reflection) over a
``RouteRegistry``, and the timer that drops silent brokers.

Every answer carries its outcome in ``Status`` (``aeromq.broker.processor.admin.status_of``), as the
broker's do.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import grpc
from google.protobuf.message import Message as ProtoMessage

from aeromq.broker.grpc._server_base import DEFAULT_MAX_WORKERS, GrpcServerBase
from aeromq.broker.namesrv.config import NameServerConfig
from aeromq.broker.namesrv.registry import RouteRegistry
from aeromq.broker.processor.admin import status_of
from aeromq.proto import common_pb2, namesrv_pb2, namesrv_pb2_grpc

__all__ = ["NAMESRV_SERVICE", "NameServer", "NameServerServicer"]

_log = logging.getLogger(__name__)

NAMESRV_SERVICE = namesrv_pb2.DESCRIPTOR.services_by_name["NameServer"].full_name

R = TypeVar("R", bound=ProtoMessage)


def _answer(rpc: str, response_type: Callable[..., R], build: Callable[[], R]) -> R:
    try:
        return build()
    except Exception as exc:
        _log.info("%s refused: %s", rpc, exc)
        return response_type(status=status_of(exc))


class NameServerServicer(namesrv_pb2_grpc.NameServerServicer):
    """The ``NameServer`` gRPC service over a :class:`RouteRegistry`: each RPC calls the
    registry and answers its outcome in ``Status`` (an error never fails the call itself)."""

    def __init__(self, registry: RouteRegistry) -> None:
        self._registry = registry

    def RegisterBroker(
        self, request: namesrv_pb2.RegisterBrokerRequest, context: grpc.ServicerContext
    ) -> namesrv_pb2.RegisterBrokerResponse:
        def build() -> namesrv_pb2.RegisterBrokerResponse:
            self._registry.register(request)
            return namesrv_pb2.RegisterBrokerResponse()

        return _answer("RegisterBroker", namesrv_pb2.RegisterBrokerResponse, build)

    def UnregisterBroker(
        self, request: namesrv_pb2.UnregisterBrokerRequest, context: grpc.ServicerContext
    ) -> namesrv_pb2.UnregisterBrokerResponse:
        def build() -> namesrv_pb2.UnregisterBrokerResponse:
            self._registry.unregister(request.cluster_name, request.broker_name)
            return namesrv_pb2.UnregisterBrokerResponse()

        return _answer("UnregisterBroker", namesrv_pb2.UnregisterBrokerResponse, build)

    def BrokerHeartbeat(
        self, request: namesrv_pb2.BrokerHeartbeatRequest, context: grpc.ServicerContext
    ) -> namesrv_pb2.BrokerHeartbeatResponse:
        def build() -> namesrv_pb2.BrokerHeartbeatResponse:
            required = self._registry.heartbeat(
                request.cluster_name, request.broker_name, request.data_version
            )
            return namesrv_pb2.BrokerHeartbeatResponse(registration_required=required)

        return _answer("BrokerHeartbeat", namesrv_pb2.BrokerHeartbeatResponse, build)

    def QueryRoute(
        self, request: common_pb2.QueryRouteRequest, context: grpc.ServicerContext
    ) -> common_pb2.QueryRouteResponse:
        def build() -> common_pb2.QueryRouteResponse:
            return common_pb2.QueryRouteResponse(route=self._registry.query_route(request.topic))

        return _answer("QueryRoute", common_pb2.QueryRouteResponse, build)

    def ListClusters(
        self, request: common_pb2.ListClustersRequest, context: grpc.ServicerContext
    ) -> common_pb2.ListClustersResponse:
        def build() -> common_pb2.ListClustersResponse:
            return common_pb2.ListClustersResponse(clusters=self._registry.list_clusters())

        return _answer("ListClusters", common_pb2.ListClustersResponse, build)

    def ListTopics(
        self, request: common_pb2.ListTopicsRequest, context: grpc.ServicerContext
    ) -> common_pb2.ListTopicsResponse:
        def build() -> common_pb2.ListTopicsResponse:
            return common_pb2.ListTopicsResponse(topics=self._registry.list_topics())

        return _answer("ListTopics", common_pb2.ListTopicsResponse, build)


class NameServer(GrpcServerBase):
    """A running name server: registry, gRPC service and the expiry timer."""

    def __init__(
        self,
        config: NameServerConfig,
        *,
        registry: RouteRegistry | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> None:
        self.config = config
        self.registry = registry or RouteRegistry(config.broker_timeout_ms)
        servicer = NameServerServicer(self.registry)
        super().__init__(
            config.host,
            config.port,
            {
                NAMESRV_SERVICE: lambda server: namesrv_pb2_grpc.add_NameServerServicer_to_server(
                    servicer, server
                )
            },
            max_workers=max_workers,
            name="aeromq-namesrv-grpc",
        )
        self._stop = threading.Event()
        self._timer: threading.Thread | None = None

    def start(self) -> int:
        port = super().start()
        self._stop.clear()
        self._timer = threading.Thread(target=self._scan, name="aeromq-namesrv-scan", daemon=True)
        self._timer.start()
        return port

    def before_stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.join(timeout=5.0)
            self._timer = None

    def _scan(self) -> None:
        period_s = self.config.scan_interval_ms / 1000.0
        while not self._stop.wait(period_s):
            try:
                self.registry.scan_expired()
            except Exception:
                _log.exception("broker expiry scan failed")
