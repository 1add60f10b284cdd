"""The name server (``aeromq namesrv``): brokers register and heartbeat, silent brokers are
dropped, and clients ask it for a topic's route across brokers. ``NameServerRegistrar`` is the
broker's side of it."""

from broker.namesrv.config import NameServerConfig
from broker.namesrv.registrar import NameServerRegistrar
from broker.namesrv.registry import RouteRegistry
from broker.namesrv.server import NAMESRV_SERVICE, NameServer, NameServerServicer

__all__ = [
    "NAMESRV_SERVICE",
    "NameServer",
    "NameServerConfig",
    "NameServerRegistrar",
    "NameServerServicer",
    "RouteRegistry",
]
