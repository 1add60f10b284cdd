"""``SessionTable``: the live sessions, by id and by ingress image, and the closed ones.

A closed session leaves a tombstone (its response route and why it closed) for
``tombstone_linger_ms``, so a late request on it can be answered with the reason rather than
dropped. Session ids are drawn at random from the positive 63-bit range (``secrets``): a client
cannot guess its neighbour's, and a restarted broker does not hand out the ids its previous run
did (an old client gets "unknown session", never another client's session). Sessions are found
by id, and by the ingress image (``Image``) their CONNECT came on. The table also counts what each
client holds (its live sessions and their log bytes, ``_client_limits.py``), given back the
moment a session is removed. Only the session agent's thread uses the table.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import NamedTuple

from aeromq.broker.session._config import SessionServerConfig
from aeromq.broker.session._session import ServerSession

__all__ = ["SessionTable", "Tombstone"]

_ID_ATTEMPTS = 64


class Tombstone(NamedTuple):
    route: tuple[str, int]
    reason: str
    closed_ns: int
    image: object


class SessionTable:
    """Sessions of one server (see module)."""

    def __init__(self, config: SessionServerConfig) -> None:
        self._config = config
        self._live: dict[int, ServerSession] = {}
        self.get: Callable[[int], ServerSession | None] = self._live.get
        """The live session of an id, or None: the dict's own ``get`` (a request's lookup,
        without a Python call)."""
        self._by_image: dict[object, ServerSession] = {}
        self._tombstones: OrderedDict[int, Tombstone] = OrderedDict()
        self._clients: dict[str, tuple[int, int]] = {}  # client key -> (sessions, log bytes)
        self._held: dict[int, tuple[str, int]] = {}  # session id -> (client key, log bytes)
        self.live_count = 0
        """Live sessions, farewells not counted (kept as they come and go: the agent's idle
        strategy reads it before each park)."""

    def new_id(self) -> int:
        """A fresh, unguessable session id: random, positive, neither live nor remembered."""
        for _ in range(_ID_ATTEMPTS):
            session_id = secrets.randbits(63)
            if session_id and session_id not in self._live and session_id not in self._tombstones:
                return session_id
        raise RuntimeError("no free session id")  # 2**63 ids: unreachable in practice

    def add(self, session: ServerSession, client_key: str = "", log_bytes: int = 0) -> None:
        """A new live session; a client's (``client_key``, not a farewell) holds ``log_bytes``
        until it is removed."""
        self._live[session.session_id] = session
        if not session.farewell:
            self._by_image[session.image] = session
            self.live_count += 1
        if client_key:
            sessions, held = self._clients.get(client_key, (0, 0))
            self._clients[client_key] = (sessions + 1, held + log_bytes)
            self._held[session.session_id] = (client_key, log_bytes)

    def client_holds(self, client_key: str) -> tuple[int, int]:
        """(live sessions, their log bytes) of the client ``client_key``."""
        return self._clients.get(client_key, (0, 0))

    def by_image(self, image: object) -> ServerSession | None:
        """The live session whose CONNECT came on this ingress image."""
        return self._by_image.get(image)

    def remove(self, session: ServerSession, now_ns: int) -> None:
        """Forget a closed session; remember it as a tombstone (farewells leave none)."""
        if self._live.pop(session.session_id, None) is session and not session.farewell:
            self.live_count -= 1
        if self._by_image.get(session.image) is session:
            del self._by_image[session.image]
        held = self._held.pop(session.session_id, None)
        if held is not None:
            client_key, log_bytes = held
            sessions, total = self._clients[client_key]
            if sessions <= 1:
                del self._clients[client_key]
            else:
                self._clients[client_key] = (sessions - 1, total - log_bytes)
        if session.farewell:
            return
        tombstones = self._tombstones
        tombstones[session.session_id] = Tombstone(
            session.route, session.close_reason, now_ns, session.image
        )
        while len(tombstones) > self._config.max_tombstones:
            tombstones.popitem(last=False)

    def tombstone(self, session_id: int) -> Tombstone | None:
        return self._tombstones.get(session_id)

    def expire_tombstones(self, now_ns: int) -> None:
        linger_ns = self._config.tombstone_linger_ms * 1_000_000
        tombstones = self._tombstones
        while tombstones:
            session_id, tombstone = next(iter(tombstones.items()))
            if now_ns - tombstone.closed_ns < linger_ns:
                return
            del tombstones[session_id]

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[ServerSession]:
        return iter(list(self._live.values()))
