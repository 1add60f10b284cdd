"""The broker's gRPC side: ``BrokerGrpcServer`` (``BrokerAdmin``, ``ConsumerGroupService``,
health checking and reflection) over the carrier-independent ``ControlPlane``, and a broker
group's ``GroupReplication`` calls between members."""

from aeromq.broker.grpc._server_base import DEFAULT_MAX_WORKERS, GrpcServerBase
from aeromq.broker.grpc._tls import TlsConfig
from aeromq.broker.grpc.server import (
    ADMIN_SERVICE,
    CONSUMER_GROUP_SERVICE,
    REPLICATION_SERVICE,
    BrokerGrpcServer,
)

__all__ = [
    "ADMIN_SERVICE",
    "CONSUMER_GROUP_SERVICE",
    "DEFAULT_MAX_WORKERS",
    "REPLICATION_SERVICE",
    "BrokerGrpcServer",
    "GrpcServerBase",
    "TlsConfig",
]
