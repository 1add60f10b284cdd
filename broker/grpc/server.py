"""``BrokerGrpcServer``: the broker's gRPC control plane (``BrokerAdmin`` and
``ConsumerGroupService`` over one ``ControlPlane``), with health checking and reflection.

Usage (by the broker)::

    control = ControlPlane(config, store)
    server = BrokerGrpcServer(control, config.grpc_host, config.grpc_port)
    server.start()                     # binds; server.port is the real port
    control.identity.update_endpoints(...grpc_address=server.address...)
    control.start()
    ...
    server.stop(); control.close()

``add_service`` registers further servicers before ``start`` (a RocketMQ-protocol servicer,
the data plane over gRPC), named by their full service name for health and reflection;
``add_group_replication`` the calls between a broker group's members (``GroupReplication``).
"""

from __future__ import annotations

from aeromq.broker._errors import BrokerStateError
from aeromq.broker.grpc._server_base import DEFAULT_MAX_WORKERS, GrpcServerBase, Registrar
from aeromq.broker.grpc._tls import TlsConfig
from aeromq.broker.grpc.servicers import (
    BrokerAdminServicer,
    ConsumerGroupServicer,
    EpochEndAnswer,
    GroupReplicationServicer,
)
from aeromq.broker.processor.admin import ControlPlane
from aeromq.broker.security._acl import Acl
from aeromq.broker.security._grpc_acl import AclInterceptor
from aeromq.proto import (
    admin_pb2,
    admin_pb2_grpc,
    consumer_group_pb2,
    consumer_group_pb2_grpc,
    replication_pb2,
    replication_pb2_grpc,
)

__all__ = ["ADMIN_SERVICE", "CONSUMER_GROUP_SERVICE", "REPLICATION_SERVICE", "BrokerGrpcServer"]

ADMIN_SERVICE = admin_pb2.DESCRIPTOR.services_by_name["BrokerAdmin"].full_name
CONSUMER_GROUP_SERVICE = consumer_group_pb2.DESCRIPTOR.services_by_name[
    "ConsumerGroupService"
].full_name
REPLICATION_SERVICE = replication_pb2.DESCRIPTOR.services_by_name["GroupReplication"].full_name


class BrokerGrpcServer(GrpcServerBase):
    """The broker's gRPC server on ``host:port`` (0: any free port); ``tls`` makes it TLS
    only, ``acl`` authenticates and authorises every call to an aeromq service."""

    def __init__(
        self,
        control_plane: ControlPlane,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_workers: int = DEFAULT_MAX_WORKERS,
        tls: TlsConfig | None = None,
        acl: Acl | None = None,
    ) -> None:
        admin = BrokerAdminServicer(control_plane)
        groups = ConsumerGroupServicer(control_plane)
        super().__init__(
            host,
            port,
            {
                ADMIN_SERVICE: lambda server: admin_pb2_grpc.add_BrokerAdminServicer_to_server(
                    admin, server
                ),
                CONSUMER_GROUP_SERVICE: (
                    lambda server: (
                        consumer_group_pb2_grpc.add_ConsumerGroupServiceServicer_to_server(
                            groups, server
                        )
                    )
                ),
            },
            max_workers=max_workers,
            name="aeromq-broker-grpc",
            tls=tls,
            interceptors=() if acl is None else (AclInterceptor(acl),),
        )
        self.control_plane = control_plane

    def add_service(self, full_name: str, register: Registrar) -> None:
        """Serve one more service (before ``start``)."""
        if self.running:
            raise BrokerStateError("add services before start", service=full_name)
        self._services[full_name] = register

    def add_group_replication(self, answer_epoch_end: EpochEndAnswer) -> None:
        """Serve ``GroupReplication`` (a broker group's member; before ``start``)."""
        servicer = GroupReplicationServicer(answer_epoch_end)
        self.add_service(
            REPLICATION_SERVICE,
            lambda server: replication_pb2_grpc.add_GroupReplicationServicer_to_server(
                servicer, server
            ),
        )

    def before_stop(self) -> None:
        # End the membership streams, or each would hold its call for the whole grace period.
        self.control_plane.groups.close()
