"""``SessionCounters``: what the session server saw, for stats, tests and operators.

Written by the session agent's thread only; readers on other threads see plain ints (each
read is atomic in CPython; a snapshot of several may straddle an update).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

__all__ = ["SessionCounters"]


@dataclass
class SessionCounters:
    """Counts since the server started. ``errors_by_code`` counts the envelope-level errors
    the server answered (or would have, with no route back), by response code."""

    requests: int = 0
    responses: int = 0
    sessions_opened: int = 0
    sessions_closed: int = 0
    sessions_timed_out: int = 0
    connects_refused: int = 0
    malformed: int = 0
    unknown_session: int = 0
    closed_session: int = 0
    foreign_session: int = 0
    routes_refused: int = 0
    forbidden: int = 0
    unanswerable: int = 0
    aborted: int = 0
    response_back_pressure: int = 0
    doorbells_refused: int = 0
    client_limits_refused: int = 0
    pull_rings_wanted: int = 0
    """Times a send was stored after a pull's answer and before that consumer's next pull was
    read, and clients were asked to ring their lazy pulls (``broker.session._agent``)."""
    quiet_yields: int = 0
    """Times the agent gave its CPU to a consumer it had just woken with a message, the send
    having come after a quiet while (``broker.session._answers``, ``QUIET_YIELD_NS``)."""
    response_streams_refused: int = 0
    errors_by_code: collections.Counter[int] = field(default_factory=collections.Counter)

    def snapshot(self) -> dict[str, int]:
        """Every counter by name (``errors_by_code`` flattened to ``error_<code>``)."""
        values = {name: value for name, value in vars(self).items() if isinstance(value, int)}
        values.update({f"error_{code}": count for code, count in self.errors_by_code.items()})
        return values
