"""``SessionTable``: the live sessions, by id and by ingress image, and the closed ones.

A closed session leaves a tombstone (its response route and why it closed) for
``tombstone_linger_ms``, so a late request on it can be answered with the reason rather than
dropped. Session ids start at a random point of the positive 62-bit range, so a restarted
broker does not hand out the ids its previous run did: an old client gets "unknown session",
never another client's session. Only the session agent's thread uses the table.
"""

from __future__ import annotations

import random
from collections import OrderedDict
from collections.abc import Iterator
from typing import NamedTuple

from aeromq.broker.session._config import SessionServerConfig
from aeromq.broker.session._session import ServerSession

__all__ = ["SessionTable", "Tombstone"]


class Tombstone(NamedTuple):
    route: tuple[str, int]
    reason: str
    closed_ns: int


class SessionTable:
    """Sessions of one server (see module)."""

    def __init__(self, config: SessionServerConfig, seed: int | None = None) -> None:
        self._config = config
        self._live: dict[int, ServerSession] = {}
        self._by_image: dict[int, ServerSession] = {}
        self._tombstones: OrderedDict[int, Tombstone] = OrderedDict()
        self._next_id = (random.Random(seed).getrandbits(30) << 32) + 1

    def new_id(self) -> int:
        session_id = self._next_id
        self._next_id += 1
        return session_id

    def add(self, session: ServerSession) -> None:
        self._live[session.session_id] = session
        if not session.farewell:
            self._by_image[session.image_session_id] = session

    def get(self, session_id: int) -> ServerSession | None:
        return self._live.get(session_id)

    def by_image(self, image_session_id: int) -> ServerSession | None:
        """The live session whose CONNECT came on this ingress image (publication session)."""
        return self._by_image.get(image_session_id)

    def remove(self, session: ServerSession, now_ns: int) -> None:
        """Forget a closed session; remember it as a tombstone (farewells leave none)."""
        self._live.pop(session.session_id, None)
        if self._by_image.get(session.image_session_id) is session:
            del self._by_image[session.image_session_id]
        if session.farewell:
            return
        tombstones = self._tombstones
        tombstones[session.session_id] = Tombstone(session.route, session.close_reason, now_ns)
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

    @property
    def live_count(self) -> int:
        """Live sessions, farewells not counted."""
        return sum(1 for session in self._live.values() if not session.farewell)

    def __len__(self) -> int:
        return len(self._live)

    def __iter__(self) -> Iterator[ServerSession]:
        return iter(list(self._live.values()))
