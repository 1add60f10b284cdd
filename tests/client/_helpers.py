"""Helpers for the client and consumer tests."""

from __future__ import annotations

import re

from aeromq.client.session import ClientSession
from tests.transport.driver.support import voluntary_switches


def isort_key(name: str) -> tuple[int, list[object]]:
    """Ruff's RUF022 order of ``__all__``: CONSTANTS, then CamelCase, then the rest, each in
    natural order (digit runs compared as numbers)."""
    category = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    parts = re.split(r"(\d+)", name)
    return category, [int(part) if part.isdigit() else part for part in parts]


def poller_wakeups(session: ClientSession) -> int:
    """How often the session's poller thread has gone to sleep and been woken (its voluntary
    context switches, from ``/proc``)."""
    # The session's own poller thread: another session of the same process (another test's,
    # not yet collected) may have a thread of the same name.
    thread = session._reader._thread
    assert thread is not None and thread.native_id is not None, (
        "the session's poller is not running"
    )
    return voluntary_switches(thread.native_id)
