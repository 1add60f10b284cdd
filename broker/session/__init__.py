"""The broker's side of the transport sessions (Aeron Archive's control sessions).

Clients CONNECT on the broker's ingress (``aeron:ipc``, ``aeron:udp``) naming their own response
channel and stream; the broker opens a publication there and answers with a session id. The
:class:`SessionAgent` polls the ingress, routes each request to the carrier-independent
processors (``aeromq.broker.processor``) and sends their answers back on the session, correlated by
id; it closes sessions that go idle or whose client is gone. See ``client/session.py`` for the
client side, ``common/_envelope.py`` for the envelope's codec (shared by both sides) and
``proto/session.proto`` for its schema.
"""

from aeromq.broker.session._agent import SessionAgent
from aeromq.broker.session._config import LocalReadGrant, SessionServerConfig
from aeromq.broker.session._counters import SessionCounters
from aeromq.broker.session._idle import (
    new_image_handler,
    park_until_due,
    session_idle_strategy,
)
from aeromq.broker.session._session import ServerSession, SessionState
from aeromq.broker.session._table import SessionTable, Tombstone

__all__ = [
    "LocalReadGrant",
    "ServerSession",
    "SessionAgent",
    "SessionCounters",
    "SessionServerConfig",
    "SessionState",
    "SessionTable",
    "Tombstone",
    "new_image_handler",
    "park_until_due",
    "session_idle_strategy",
]
