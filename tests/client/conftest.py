"""The fixtures of ``tests/broker/data`` that this directory's session tests take (a broker's
session agent served in this process over a real driver, and a client's Aeron on it): imported
once here, not copied, and not re-exported by each test module."""

from __future__ import annotations

from tests.broker.data.conftest import aeron, hold, media_driver, open_store, pull, send, store
from tests.broker.data.test_sessions import client_aeron, server, start_server

__all__ = [
    "aeron",
    "client_aeron",
    "hold",
    "media_driver",
    "open_store",
    "pull",
    "send",
    "server",
    "start_server",
    "store",
]
