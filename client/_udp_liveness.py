"""``UdpProbe``: how a session over UDP learns within a second that its broker is gone.

Over IPC a session watches the broker's own media driver: its heartbeat silent for
:data:`~client.session.DRIVER_SILENT_MS` fails the session (``_session_liveness.py``). Over UDP
the driver it watches is its own, which a broker killed on its host does not touch: the broker's
response image lingers in it for the image liveness timeout (10 s), the session's requests go
on to the restarted broker's new driver (which makes an image of them but has no session for
them and no route to answer), and the session failed only when the broker's session timeout
(10 s) of silence had passed: clients resumed 7.6-7.8 s after a restart.

So while a request of a UDP session waits for its answer, the session asks: once nothing has
been heard for :data:`PROBE_AFTER_NS` since the request went (or since the last answer, or the
last bytes of one: a long answer arriving over a slow network is being heard), it sends a
keepalive every :data:`PROBE_AFTER_NS`. A live broker answers keepalives at once, even while it
holds the session's pull for seconds; a session that has heard nothing for :data:`SILENT_NS`
(no answer, no keepalive's answer) has lost its broker and fails, so its caller looks the broker
up again and connects anew. An idle session sends nothing more than before. Silence counts only
while the session's poller runs: checks :data:`PROBE_AFTER_NS` apart or more (its thread kept
off the CPU) start the count again, since answers may be waiting unread.

A pure timing state machine (as kafka-python's ``heartbeat.py``): no I/O; the caller sends the
keepalive and fails the session. Caller: ``SessionLiveness`` on the poller thread.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["PROBE_AFTER_NS", "SILENT_NS", "ProbeAction", "UdpProbe"]

PROBE_AFTER_NS: Final = 200_000_000
"""Silence while a request waits after which a keepalive goes, and then between keepalives."""
SILENT_NS: Final = 1_000_000_000
"""Silence while a request waits after which the broker is taken for gone (five probes)."""


class ProbeAction(enum.Enum):
    """What the session should do now."""

    NOTHING = "nothing"
    PROBE = "probe"  # send a keepalive
    FAIL = "fail"  # the broker is gone: fail the session


class UdpProbe:
    """The probe of one UDP session (see module)."""

    __slots__ = (
        "_last_check_ns",
        "_last_probe_ns",
        "_position",
        "_waiting_since_ns",
        "probe_after_ns",
        "silent_ns",
    )

    def __init__(self, probe_after_ns: int = PROBE_AFTER_NS, silent_ns: int = SILENT_NS) -> None:
        self.probe_after_ns = probe_after_ns
        self.silent_ns = silent_ns
        self._waiting_since_ns: int | None = None
        self._last_probe_ns = 0
        self._last_check_ns = 0
        self._position = 0

    def check(
        self, now_ns: int, last_heard_ns: int, waiting: bool, received_position: int = 0
    ) -> ProbeAction:
        """The action at ``now_ns`` for a session that last heard its broker at
        ``last_heard_ns``, has requests waiting for answers (``waiting``) and has read its
        response stream up to ``received_position`` (a change is a sign of life too)."""
        since_ns = self._waiting_since_ns
        starved = now_ns - self._last_check_ns >= self.probe_after_ns
        self._last_check_ns = now_ns
        if not waiting:
            self._waiting_since_ns = None
            return ProbeAction.NOTHING
        if since_ns is None or starved or received_position != self._position:
            since_ns = self._waiting_since_ns = now_ns
            self._position = received_position
        silent_ns = now_ns - max(since_ns, last_heard_ns)
        if silent_ns > self.silent_ns:
            return ProbeAction.FAIL
        if silent_ns >= self.probe_after_ns and now_ns - self._last_probe_ns >= self.probe_after_ns:
            self._last_probe_ns = now_ns
            return ProbeAction.PROBE
        return ProbeAction.NOTHING

    def silent_ms(self, now_ns: int, last_heard_ns: int) -> int:
        """How long the session has been waiting in silence, in ms (for the failure's text)."""
        since_ns = now_ns if self._waiting_since_ns is None else self._waiting_since_ns
        return (now_ns - max(since_ns, last_heard_ns)) // 1_000_000
