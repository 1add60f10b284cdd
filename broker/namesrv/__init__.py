"""The name server (``aeromq namesrv``): brokers register and heartbeat, silent brokers are
dropped, and clients ask it for a topic's route across brokers. ``NameServerRegistrar`` is the
broker's side of it."""

from aeromq.broker.namesrv.config import NameServerConfig
from aeromq.broker.namesrv.registrar import NameServerCallError, NameServerRegistrar
from aeromq.broker.namesrv.registry import RouteRegistry
from aeromq.broker.namesrv.server import NAMESRV_SERVICE, NameServer, NameServerServicer

__all__ = [
    "NAMESRV_SERVICE",
    "NameServer",
    "NameServerCallError",
    "NameServerConfig",
    "NameServerRegistrar",
    "NameServerServicer",
    "RouteRegistry",
]
