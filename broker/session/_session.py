"""``ServerSession``: the broker's side of one transport session (Aeron Archive's
``ControlSession``).

Life cycle::

    CONNECTING --(response publication connected)--> CONNECTED --(close)--> CLOSED
         |                                                ^
         `--(connect timeout, publication refused)--------'

A session is created by a CONNECT on the ingress; the broker asks the driver for an exclusive
publication on the client's response channel and stream without waiting, and answers the
CONNECT once the publication is connected (the client's subscription is there). Answers are
offered in order; one that meets back pressure waits in the session's backlog, with every
later answer behind it, and the agent retries the backlog on each duty cycle. Only the session
agent's thread touches a session.

An IPC client may name a doorbell in its CONNECT (``doorbell``, see
``transport/concurrent/doorbell.py``): every answer offered is followed by a ring of it, so the
client's thread asleep on it wakes; with ``rings`` (the agent's rings of the cycle: each bell
by its id, in the order first added) the ring comes at the end of the agent's duty cycle, once
for all the answers of the cycle (added to with a store into the dict, not a Python call an
answer).
"""

from __future__ import annotations

import contextlib
import enum
from collections import deque
from typing import Final

from aeromq.transport import TransportError
from aeromq.transport.client import ADMIN_ACTION, BACK_PRESSURED, ExclusivePublication
from aeromq.transport.concurrent.doorbell import Doorbell, Ringable

__all__ = ["ServerSession", "SessionState"]

_NO_REGISTRATION: Final = -1


class SessionState(enum.Enum):
    CONNECTING = "CONNECTING"
    CONNECTED = "CONNECTED"
    CLOSED = "CLOSED"


class ServerSession:
    """One client's session (see module). ``image`` is the ingress image (``Image``) its
    CONNECT came on: the client's identity, against which every request is checked.
    ``farewell`` sessions exist only to deliver their backlog (an answer to a closed session's
    late request) and close."""

    __slots__ = (
        "backlog",
        "backlog_since_ns",
        "client_id",
        "close_reason",
        "connect_correlation_id",
        "created_ns",
        "doorbell",
        "farewell",
        "granted",
        "image",
        "image_session_id",
        "last_activity_ns",
        "local_reads",
        "network_bell",
        "publication",
        "pulls_at_once",
        "pulls_awaited",
        "registration_id",
        "response_channel",
        "response_stream_id",
        "rings",
        "session_id",
        "state",
        "user",
    )

    def __init__(
        self,
        session_id: int,
        client_id: str,
        response_channel: str,
        response_stream_id: int,
        image_session_id: int,
        connect_correlation_id: int,
        now_ns: int,
        *,
        image: object = None,
        farewell: bool = False,
    ) -> None:
        self.session_id = session_id
        self.client_id = client_id
        self.response_channel = response_channel
        self.response_stream_id = response_stream_id
        self.image_session_id = image_session_id
        self.image = image
        self.user = ""
        self.granted: dict[tuple[object, str], str | None] = {}
        self.connect_correlation_id = connect_correlation_id
        self.created_ns = now_ns
        self.last_activity_ns = now_ns
        self.state = SessionState.CONNECTING
        self.registration_id = _NO_REGISTRATION
        self.publication: ExclusivePublication | None = None
        self.backlog: deque[bytes] = deque()
        self.backlog_since_ns = 0
        self.close_reason = ""
        self.farewell = farewell
        self.doorbell: Doorbell | None = None
        self.rings: dict[int, Ringable] | None = None  # the doorbell's ring, at the cycle's end
        self.network_bell: Ringable | None = None  # a UDP client's: wakes the broker's driver
        self.local_reads = False  # granted at CONNECT: pulls may be answered with local ranges
        # its pulls answered whose next pulls the agent has not read yet (lazy pulls: see
        # broker.session._agent), answered in an earlier cycle, and at once in this one
        self.pulls_awaited = 0
        self.pulls_at_once = 0

    @property
    def route(self) -> tuple[str, int]:
        return self.response_channel, self.response_stream_id

    def send(self, data: bytes | list[bytes | memoryview], now_ns: int) -> bool:
        """Offer ``data`` now, or queue it behind the backlog or back pressure; False when the
        response stream is gone (no subscriber, or the publication closed). ``data`` in pieces
        is one message, offered vectored (joined only when it has to wait)."""
        if self.backlog:
            self.backlog.append(data if isinstance(data, bytes) else b"".join(data))
            return True
        publication = self.publication
        if publication is None:  # still connecting: the CONNECT answer goes first anyway
            self._queue(data if isinstance(data, bytes) else b"".join(data), now_ns)
            return True
        while True:
            if isinstance(data, bytes):
                result = publication.offer(data)
            else:
                result = publication.offer_vectored(data)
            if result > 0:
                bell = self.doorbell or self.network_bell
                if bell is not None:  # ring's, without its call (one an answer)
                    rings = self.rings
                    if rings is None:
                        bell.ring()
                    else:
                        rings[id(bell)] = bell
                return True
            if result == ADMIN_ACTION:
                continue
            if result == BACK_PRESSURED:
                self._queue(data if isinstance(data, bytes) else b"".join(data), now_ns)
                return True
            return False

    def flush_backlog(self, now_ns: int) -> int:
        """Offer queued answers until one meets back pressure; returns how many went, or -1
        when the response stream is gone."""
        publication = self.publication
        backlog = self.backlog
        if publication is None or not backlog:
            return 0
        sent = 0
        while backlog:
            if len(backlog[0]) > publication.max_message_length:
                backlog.popleft()  # too long for this channel: it can never go
                continue
            result = publication.offer(backlog[0])
            if result > 0:
                backlog.popleft()
                sent += 1
            elif result == ADMIN_ACTION:
                continue
            elif result == BACK_PRESSURED:
                break
            else:
                return -1
        self.backlog_since_ns = now_ns if backlog else 0
        bell = self.doorbell or self.network_bell
        if sent and bell is not None:
            self.ring(bell)
        return sent

    def ring(self, bell: Ringable) -> None:
        """Ring ``bell`` (the client's doorbell, or the broker driver's network bell) now, or at
        the agent's cycle's end when the cycle collects its rings (``rings``)."""
        rings = self.rings
        if rings is None:
            bell.ring()
        else:
            rings[id(bell)] = bell

    def _queue(self, data: bytes, now_ns: int) -> None:
        if not self.backlog:
            self.backlog_since_ns = now_ns
        self.backlog.append(data)

    def close(self, reason: str) -> None:
        """Release the response publication (asynchronously) and forget the backlog."""
        if self.state is SessionState.CLOSED:
            return
        self.state = SessionState.CLOSED
        self.close_reason = reason
        self.backlog.clear()
        publication, self.publication = self.publication, None
        if publication is not None:
            with contextlib.suppress(TransportError):  # the client closing releases it anyway
                publication.close()

    def __repr__(self) -> str:
        return (
            f"ServerSession(session_id={self.session_id}, client_id={self.client_id!r}, "
            f"state={self.state.value}, response_channel={self.response_channel!r}, "
            f"response_stream_id={self.response_stream_id}, backlog={len(self.backlog)})"
        )
