"""``SessionState``: the few facts about a client session that more than one of its parts reads,
each written by one part only; and the session's logger.

The parts (put together by ``client/session.py``): the request sender
(``_request_sender.py``, on the callers' threads), the answer dispatch (``_answer_dispatch.py``,
on whichever thread reads the answers), the pending-request table (``_pending_requests.py``) and
the liveness checks (``_session_liveness.py``, on the poller thread). Reads take no lock: each
field is one reference written whole, and a part that reads a value a moment old acts as it
would have acted a moment earlier (a request submitted as the session fails is failed by the
sender's second look, :meth:`~client._request_sender.RequestSender.submit`).
"""

from __future__ import annotations

import logging
from typing import Final

from aeromq.common import ClientError

__all__ = ["SESSION_LOG", "SessionState"]

SESSION_LOG: Final = logging.getLogger("aeromq.client.session")
"""The logger of every part of a session: one name, ``client/session.py``'s, for all of them."""


class SessionState:
    """What a session's parts share, with the writer of each field:

    - ``session_id``: the broker's id of the session, 0 until the CONNECT answer; written once,
      by the answer dispatch as it reads that answer;
    - ``failure``: why the session became unusable (the first error wins); written by
      :meth:`~client._pending_requests.PendingRequests.fail`;
    - ``closed``: written by ``ClientSession.close`` (under its close lock);
    - ``last_sent_ns``: when a request was last offered (monotonic), for keepalives; written by
      the sender under its offer lock;
    - ``last_heard_ns``: when an answer was last read, for the broker's liveness; written by the
      answer dispatch (and once by the set-up, before the first request);
    - ``polling_thread``: the ident of the thread reading the answers now (0: none); written by
      the readers (``_answer_readers.py``) around each poll, under their poll lock;
    - ``ring_held``: a pull was sent from the reading thread without ringing the broker yet; set
      by the sender, cleared by the reader as the poll returns (``_request_sender.py``);
    - ``answer_failed``: reading an answer raised (a poll stops at that fragment, those after
      it left unread); set by the answer dispatch, cleared by the readers, which then keep no
      word for their next wait (``_answer_readers.py``).
    """

    __slots__ = (
        "answer_failed",
        "closed",
        "failure",
        "last_heard_ns",
        "last_sent_ns",
        "polling_thread",
        "ring_held",
        "session_id",
    )

    def __init__(self) -> None:
        self.session_id = 0
        self.failure: ClientError | None = None
        self.closed = False
        self.last_sent_ns = 0
        self.last_heard_ns = 0
        self.polling_thread = 0
        self.ring_held = False
        self.answer_failed = False

    @property
    def is_open(self) -> bool:
        """Connected and neither closed nor failed."""
        return self.session_id != 0 and not self.closed and self.failure is None
