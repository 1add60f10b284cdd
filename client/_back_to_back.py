"""Whether a caller waiting for its answer polls for it first: :class:`BackToBackSpin`.

A one-at-a-time ``send()`` is a ping-pong between the caller and the broker's session agent.
By default only the agent spins (``_answer_readers.py``: one spinner per exchange): the caller
sleeps on its session's doorbell until the answer rings it, which costs a paced caller nothing
between its requests. A caller that sends back to back, each request as soon as the last
answer came, pays a wake-up a request instead, and on a virtual machine that wake-up is as long
as the rest of the round trip: on the 2-core machine of ``docs/latency.md`` one-at-a-time sends
ran at 8,500-9,000 a second sleeping, at 17,000-17,800 polling for the answer.

So a caller polls for its answer through a short window (``SessionConfig.back_to_back_spin_us``,
100 us by default) before it sleeps, but only while it is sending back to back, and while the
answers mostly came within the window (a :class:`~transport.concurrent.spin_predictor.SpinPredictor`,
which stops the polls when the broker is slow to answer, over UDP for instance).

"Back to back" is a score, as the predictor's: a request that its thread made without sleeping
since it read the answer before (the thread's CPU time went up by at least
:data:`RAN_SHARE_PERCENT` of the time between, within :data:`RAN_WITHIN_NS`) adds one, up to
:data:`BACK_TO_BACK_SCORE_MAX`; any other halves it; the caller polls from
:data:`BACK_TO_BACK_SCORE_POLLS` up. A paced producer, which sleeps between its sends, stays
below the mark however short its sleeps; a producer sending in a loop stays above it through the
odd gap a preemption stretches (which a streak that started again would not), and on a busy or
slower machine as well, where its own code between two sends takes longer (its gaps here:
25-40 us, a fifth of them over 50 us while the host was busy). The CPU time costs a third of a
microsecond a read (``CLOCK_THREAD_CPUTIME_ID`` is a system call), two a request.

Caller: ``AnswerReader.request`` (``_answer_readers.py``), one per session.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from aeromq.transport.concurrent.doorbell import SpinPredictor

__all__ = [
    "BACK_TO_BACK_SCORE_MAX",
    "BACK_TO_BACK_SCORE_POLLS",
    "RAN_SHARE_PERCENT",
    "RAN_WITHIN_NS",
    "BackToBackSpin",
]

RAN_SHARE_PERCENT: Final = 75
"""A request is back to back when its thread's CPU time went up by at least this share of the
time since it read the answer before: it ran (its own loop, the next message's encoding), not
slept; a preemption of a quarter of the gap is forgiven."""
RAN_WITHIN_NS: Final = 1_000_000
"""Past this long after the answer before, a request is never back to back (a caller that
computes for a millisecond between its sends gains little from polling)."""
BACK_TO_BACK_SCORE_MAX: Final = 8
"""The back-to-back score's ceiling: one request that was not halves it to 4, still polling."""
BACK_TO_BACK_SCORE_POLLS: Final = 4
"""The score from which the caller polls: four back-to-back requests in a row from nothing."""


class BackToBackSpin:
    """Whether the caller of a request polls for its answer before it sleeps (see module).

    ``cpu_clock`` is the calling thread's CPU time (``time.thread_time_ns``; tests give
    another). One caller at a time (``AnswerReader.request`` asks only when it is the session's
    only reader); a race between two would only shift a guess."""

    __slots__ = (
        "_answered_cpu_ns",
        "_answered_ns",
        "_answered_thread",
        "_cpu_clock",
        "predictor",
        "score",
    )

    def __init__(self, window_ns: int, cpu_clock: Callable[[], int] = time.thread_time_ns) -> None:
        self.predictor = SpinPredictor(window_ns)
        """Whether the answers came within the window (``window_ns`` 0: never poll)."""
        self.score = 0
        """How back to back the recent requests were (see module)."""
        self._cpu_clock = cpu_clock
        self._answered_ns = -RAN_WITHIN_NS
        self._answered_cpu_ns = 0
        self._answered_thread = 0

    def should_poll(self, submitted_ns: int) -> bool:
        """This thread's request went out at ``submitted_ns`` (monotonic): whether it polls for
        the answer through the window before it sleeps."""
        gap_ns = submitted_ns - self._answered_ns
        if (
            gap_ns < RAN_WITHIN_NS
            and threading.get_ident() == self._answered_thread
            and 100 * (self._cpu_clock() - self._answered_cpu_ns) >= RAN_SHARE_PERCENT * gap_ns
        ):
            score = self.score + 1
            self.score = score = BACK_TO_BACK_SCORE_MAX if score > BACK_TO_BACK_SCORE_MAX else score
            return score >= BACK_TO_BACK_SCORE_POLLS and self.predictor.should_poll()
        self.score >>= 1
        return False

    def answered(self, now_ns: int) -> None:
        """This thread has its answer (or gave up) at ``now_ns`` (monotonic): the next request
        is measured from here."""
        self._answered_ns = now_ns
        self._answered_cpu_ns = self._cpu_clock()
        self._answered_thread = threading.get_ident()
