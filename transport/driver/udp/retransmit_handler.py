"""``RetransmitHandler``: turns NAKs into resends, once per gap however often it is asked.

Aeron's ``aeron_retransmit_handler.c``. A NAK names a gap (term id, term offset, length). The
first NAK for a gap starts an action: with no delay (the unicast default) the gap is resent at
once and the action LINGERs for the linger time (10 ms by default); with a delay it waits
DELAYED, then resends and lingers. While an action exists, further NAKs for the same gap are
ignored: duplicates from a receiver that asked again before the resend arrived do not send the
same bytes twice. At most ``max_resend`` actions are in progress; NAKs beyond that are counted
(``Retransmit Pool Overflow count``) and dropped, and the receiver will ask again. A NAK whose
offset cannot be in the term is counted as an invalid packet.

The sender thread calls it: :meth:`on_nak` when a NAK arrives, :meth:`process_timeouts` on every
duty cycle of the publication while :attr:`RetransmitHandler.actions` holds any (the publication
tests the dict's truth itself: no call in a cycle with no resend in progress).
"""

from __future__ import annotations

from collections.abc import Callable

from aeromq.transport.concurrent import AtomicCounter
from aeromq.transport.protocol import DATA_HEADER_LENGTH

__all__ = ["ResendHandler", "RetransmitHandler"]

ResendHandler = Callable[[int, int, int], None]
"""``resend(term_id, term_offset, length)``: send that part of the term again."""

_DELAYED = 1
_LINGERING = 2


class _Action:
    __slots__ = ("expiry_ns", "length", "state", "term_id", "term_offset")

    def __init__(self, term_id: int, term_offset: int, length: int) -> None:
        self.term_id = term_id
        self.term_offset = term_offset
        self.length = length
        self.state = _DELAYED
        self.expiry_ns = 0


class RetransmitHandler:
    """Resend scheduling for one publication (see module)."""

    __slots__ = (
        "_delay_ns",
        "_invalid_packets",
        "_linger_ns",
        "_max_actions",
        "_overflows",
        "actions",
    )

    def __init__(
        self,
        *,
        delay_ns: int,
        linger_ns: int,
        max_resend: int,
        invalid_packets: AtomicCounter,
        overflows: AtomicCounter,
    ) -> None:
        self._delay_ns = delay_ns
        self._linger_ns = linger_ns
        self._max_actions = max_resend
        self._invalid_packets = invalid_packets
        self._overflows = overflows
        self.actions: dict[tuple[int, int], _Action] = {}
        """The actions in progress by (term id, term offset): read only outside this class
        (empty: nothing to resend or linger for, see module)."""

    @property
    def active_count(self) -> int:
        """How many actions are in progress (delayed or lingering)."""
        return len(self.actions)

    def on_nak(
        self,
        term_id: int,
        term_offset: int,
        length: int,
        term_length: int,
        now_ns: int,
        resend: ResendHandler,
    ) -> None:
        """A NAK for ``length`` bytes at (``term_id``, ``term_offset``)."""
        if term_offset < 0 or term_offset > term_length - DATA_HEADER_LENGTH or length <= 0:
            self._invalid_packets.increment()
            return
        key = (term_id, term_offset)
        actions = self.actions
        if key in actions:
            return
        if len(actions) >= self._max_actions:
            self._overflows.increment()
            return
        action = _Action(term_id, term_offset, min(length, term_length - term_offset))
        actions[key] = action
        if self._delay_ns == 0:
            resend(term_id, term_offset, action.length)
            action.state = _LINGERING
            action.expiry_ns = now_ns + self._linger_ns
        else:
            action.expiry_ns = now_ns + self._delay_ns

    def process_timeouts(self, now_ns: int, resend: ResendHandler) -> int:
        """Resend delayed actions that are due and forget lingering ones that ended."""
        actions = self.actions
        if not actions:
            return 0
        work_count = 0
        for key, action in list(actions.items()):
            if now_ns <= action.expiry_ns:
                continue
            if action.state == _DELAYED:
                resend(action.term_id, action.term_offset, action.length)
                action.state = _LINGERING
                action.expiry_ns = now_ns + self._linger_ns
            else:
                del actions[key]
            work_count += 1
        return work_count
