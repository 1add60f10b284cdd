"""The broker's security from its config: the TLS of the gRPC server, the ACL, and the loud
warning when the control plane listens beyond loopback without them."""

from __future__ import annotations

import ipaddress
import logging
from typing import Final

from aeromq.broker.config import BrokerConfig
from aeromq.broker.grpc._tls import TlsConfig
from aeromq.broker.security._acl import Acl, load_acl

__all__ = ["acl_of", "is_loopback", "tls_of", "warn_if_exposed"]

_log = logging.getLogger(__name__)

_LOOPBACK_NAMES: Final = frozenset({"localhost", "ip6-localhost"})


def tls_of(config: BrokerConfig) -> TlsConfig | None:
    if config.tls_cert_file is None or config.tls_key_file is None:
        return None
    return TlsConfig(config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file)


def acl_of(config: BrokerConfig) -> Acl | None:
    return None if config.acl_file is None else load_acl(config.acl_file)


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve beyond this host


def warn_if_exposed(host: str, tls: TlsConfig | None, acl: Acl | None) -> bool:
    """Log a warning (and return True) when ``host`` is not loopback and TLS or the ACL is
    off: anyone who reaches the port could then read the traffic or administer the broker."""
    missing = [name for name, on in (("TLS", tls is not None), ("ACL", acl is not None)) if not on]
    if is_loopback(host) or not missing:
        return False
    _log.warning(
        "!!! the gRPC control plane listens beyond loopback without %s: host=%s -- anyone who "
        "reaches it can %s; set tls_cert_file/tls_key_file and an [acl] table !!!",
        " and ".join(missing),
        host,
        "create and delete topics, reset offsets and read messages"
        if acl is None
        else "read the credentials and messages on the wire",
    )
    return True
