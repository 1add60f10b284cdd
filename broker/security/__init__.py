"""The broker's security: access control (users, per-topic and per-group permissions) and its
enforcement on gRPC calls and transport sessions; TLS lives with the gRPC server
(:class:`~broker.grpc.TlsConfig`)."""

from aeromq.broker.security._acl import (
    Acl,
    AclRule,
    AclUser,
    Permission,
    ResourceKind,
    load_acl,
)
from aeromq.broker.security._grpc_acl import RPC_PERMISSIONS, AclInterceptor
from aeromq.broker.security._setup import acl_of, is_loopback, tls_of, warn_if_exposed

__all__ = [
    "RPC_PERMISSIONS",
    "Acl",
    "AclInterceptor",
    "AclRule",
    "AclUser",
    "Permission",
    "ResourceKind",
    "acl_of",
    "is_loopback",
    "load_acl",
    "tls_of",
    "warn_if_exposed",
]
