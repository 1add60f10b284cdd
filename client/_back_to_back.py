"""Whether a caller waiting for its answer polls for it first: :class:`BackToBackSpin`.

A one-at-a-time ``send()`` is a ping-pong between the caller and the broker's session agent.
By default only the agent spins (``_answer_readers.py``: one spinner per exchange): the caller
sleeps on its session's doorbell until the answer rings it, which costs a paced caller nothing
between its requests. A caller that sends back to back, each request as soon as the last
answer came, pays a wake-up a request instead, and on a virtual machine that wake-up is as long
as the rest of the round trip: on the 2-core machine of ``docs/latency.md`` one-at-a-time sends
ran at 8,500-9,000 a second sleeping, at 17,000-17,800 polling for the answer.

So a caller polls for its answer through a short window (``SessionConfig.back_to_back_spin_us``,
100 us by default) before it sleeps, but only while it is sending back to back: its last
:data:`BACK_TO_BACK_STREAK` requests each went out within :data:`BACK_TO_BACK_GAP_NS` of the
answer before (a paced producer, which sleeps between its sends, never does), and while the
answers mostly came within the window (a :class:`~transport.concurrent.spin_predictor.SpinPredictor`,
which stops the polls when the broker is slow to answer, over UDP for instance).

Caller: ``AnswerReader.request`` (``_answer_readers.py``), one per session.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport.concurrent.doorbell import SpinPredictor

__all__ = ["BACK_TO_BACK_GAP_NS", "BACK_TO_BACK_STREAK", "BackToBackSpin"]

BACK_TO_BACK_GAP_NS: Final = 50_000
"""A request submitted within this long of the answer before it is back to back: an
application that sends again as soon as ``send()`` returns takes 20-40 us on the machine of
``docs/latency.md`` between the two (its own loop, the next message's encoding); a producer
paced at 5,000 a second sleeps 80 us or more."""
BACK_TO_BACK_STREAK: Final = 8
"""How many requests in a row must be back to back before the caller polls: a paced
producer's occasional short gap does not make it spin."""


class BackToBackSpin:
    """Whether the caller of a request polls for its answer before it sleeps (see module).

    One caller at a time (``AnswerReader.request`` asks only when it is the session's only
    reader); a race between two would only shift a guess."""

    __slots__ = ("_answered_ns", "_streak", "predictor")

    def __init__(self, window_ns: int) -> None:
        self.predictor = SpinPredictor(window_ns)
        """Whether the answers came within the window (``window_ns`` 0: never poll)."""
        self._answered_ns = -BACK_TO_BACK_GAP_NS
        self._streak = 0

    @property
    def window_ns(self) -> int:
        return self.predictor.window_ns

    def should_poll(self, submitted_ns: int) -> bool:
        """A request went out at ``submitted_ns`` (monotonic): whether its caller polls for
        the answer through the window before it sleeps."""
        if submitted_ns - self._answered_ns < BACK_TO_BACK_GAP_NS:
            self._streak += 1
            return self._streak >= BACK_TO_BACK_STREAK and self.predictor.should_poll()
        self._streak = 0
        return False

    def answered(self, now_ns: int) -> None:
        """The caller has its answer (or gave up) at ``now_ns``: the next request's gap is
        measured from here."""
        self._answered_ns = now_ns
