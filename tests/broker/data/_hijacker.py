"""A second client process for the session-binding tests: it opens a session of its own on the
broker's driver, then tries to use and close its neighbour's session by id."""

from __future__ import annotations

from typing import Any

from aeromq.transport.client import Aeron, AeronContext

from ._raw import RawClient


def hijack(aeron_dir: str, victim_session_id: int, results: Any) -> None:
    """Report ("own", session_id), then ("answer", code, message) for a keepalive on the
    victim's session, and ("closed",) after sending a close on it."""
    with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
        raw = RawClient(aeron)
        try:
            results.put(("own", raw.connect().session_id))
            raw.request("keepalive", correlation_id=7, session_id=victim_session_id)
            answer = raw.answer()
            results.put(("answer", answer.error.code, answer.error.message, answer.session_id))
            raw.request("close", correlation_id=8, session_id=victim_session_id)
            results.put(("closed",))
        finally:
            raw.close()
