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
which stops the polls when the broker is slow to answer, over UDP for instance, and probes one
request in :data:`BACK_TO_BACK_PROBE_EVERY` meanwhile, less often while the probes find the
answers late).

"Back to back" is a score, as the predictor's: a request that its thread made without sleeping
since it read the answer before (no voluntary context switch of the thread between them, as
``getrusage(RUSAGE_THREAD)`` counts them, within :data:`RAN_WITHIN_NS`) adds one, up to
:data:`BACK_TO_BACK_SCORE_MAX`; any other halves it; the caller polls from
:data:`BACK_TO_BACK_SCORE_POLLS` up. A paced producer, which sleeps between its sends, stays
below the mark however short its sleeps; a producer sending in a loop stays above it however long
its own code between two sends takes on a busy or slower machine (its gaps here: 25-40 us, a fifth
of them over 50 us while the host was busy), and through a preemption: another process's thread
taking the core makes an involuntary switch, not a voluntary one. (Until the nineteenth round the
rule was the thread's CPU time over the gap, ``CLOCK_THREAD_CPUTIME_ID``: a preemption of a
quarter of the gap broke the streak, and the request after it slept; traced on 60,000 sends in a
loop, 1% of them, each 176 us on average against 46.) A request that waited for the interpreter
(another thread of the process held it) did block, and counts as not back to back. The count
costs 0.4 us a read (a system call), two a request; where the platform does not count a thread's
switches, no request is back to back and the caller never polls.

Caller: ``AnswerReader.request`` (``_answer_readers.py``), one per session.
"""

from __future__ import annotations

import resource
import threading
from collections.abc import Callable
from typing import Final

from aeromq.transport.concurrent.doorbell_idle_strategy import SpinPredictor

__all__ = [
    "BACK_TO_BACK_PROBE_EVERY",
    "BACK_TO_BACK_SCORE_MAX",
    "BACK_TO_BACK_SCORE_POLLS",
    "RAN_WITHIN_NS",
    "BackToBackSpin",
    "voluntary_switches",
]

_RUSAGE_THREAD: Final = getattr(resource, "RUSAGE_THREAD", None)
RAN_WITHIN_NS: Final = 1_000_000
"""Past this long after the answer before, a request is never back to back (a caller that
computes for a millisecond between its sends gains little from polling)."""
BACK_TO_BACK_SCORE_MAX: Final = 8
"""The back-to-back score's ceiling: one request that was not halves it to 4, still polling."""
BACK_TO_BACK_SCORE_POLLS: Final = 4
"""The score from which the caller polls: four back-to-back requests in a row from nothing."""
BACK_TO_BACK_PROBE_EVERY: Final = 8
"""While the answers have come later than the window (the predictor says sleep), one
back-to-back request in this many polls through it anyway, to find quick answers again, and
half as often after each such probe that found a late answer, down to one in 64 (the
predictor's ``probe_every``): after a stall of the broker's a caller in a loop would otherwise
sleep through 64 requests before its predictor looked again (traced: 1-2% of 60,000 sends in a
loop, 150-160 us each against 46); a caller whose answers stay late (over UDP, 300-450 us)
soon probes no more often than before."""


def voluntary_switches() -> int:
    """The calling thread's voluntary context switches so far (it blocked: a sleep, a wait, the
    interpreter's lock), from ``getrusage(RUSAGE_THREAD)``; -1 where the platform does not
    count them per thread (Linux does)."""
    if _RUSAGE_THREAD is None:
        return -1
    return resource.getrusage(_RUSAGE_THREAD).ru_nvcsw


class BackToBackSpin:
    """Whether the caller of a request polls for its answer before it sleeps (see module).

    ``switches`` counts the calling thread's voluntary context switches
    (:func:`voluntary_switches` when None, as the module holds it then; tests give another;
    negative: not counted, never back to back). One caller at a time (``AnswerReader.request`` asks only when it is the session's
    only reader); a race between two would only shift a guess."""

    __slots__ = (
        "_answered_ns",
        "_answered_switches",
        "_answered_thread",
        "_switches",
        "predictor",
        "score",
    )

    def __init__(self, window_ns: int, switches: Callable[[], int] | None = None) -> None:
        self.predictor = SpinPredictor(window_ns, BACK_TO_BACK_PROBE_EVERY)
        """Whether the answers came within the window (``window_ns`` 0: never poll)."""
        self.score = 0
        """How back to back the recent requests were (see module)."""
        self._switches = voluntary_switches if switches is None else switches
        self._answered_ns = -RAN_WITHIN_NS
        self._answered_switches = -1
        self._answered_thread = 0

    def should_poll(self, submitted_ns: int) -> bool:
        """This thread's request went out at ``submitted_ns`` (monotonic): whether it polls for
        the answer through the window before it sleeps."""
        if (
            submitted_ns - self._answered_ns < RAN_WITHIN_NS
            and threading.get_ident() == self._answered_thread
            and self._switches() == self._answered_switches >= 0
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
        self._answered_switches = self._switches()
        self._answered_thread = threading.get_ident()
