"""``SpinPredictor``: whether a waiter polls through a short window before it sleeps.

A waiter on a doorbell (``transport/concurrent/doorbell_idle_strategy.py``: the session agent
through its idle strategy, a client waiting for its answer) guesses before each sleep whether
the work it waits for usually comes within a short window (poll that long first) or usually
does not (sleep at once, and spend no polls).

A window may adapt, as the guest halt-polling of Linux's ``cpuidle-haltpoll`` does its poll
time: given a ``max_window_ns``, a wait that the window missed but that came within the most
doubles the window (up to the most), and a wait longer than the most halves it (down to the
window it was made with). Why: two waiters that each poll only while the other answers within
their windows can settle both asleep for good. The broker's session agent polls through its
long window for a one-at-a-time producer's next send, and that producer polls for its answer
only while its answers come quickly; on a host whose wake-ups cost 140-160 us the producer's
next send came 250 us after an answer it slept for, past the agent's 200 us, so the agent slept
too, its answers came late, and neither's probe could find the other awake: a producer sending
in a loop ran at 4,200-4,500 sends a second where it ran at 9,500-10,700 with a 400 us window
(``bench/results/2026-12-03d/round.md``). A window that grows to the gap it missed ends that,
where the gap is within the most.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport._errors import ConfigurationError

__all__ = ["PROBE_EVERY", "SpinPredictor"]

_SPIN_SCORE_MAX: Final = 3
_SPIN_SCORE_POLLS: Final = 1
PROBE_EVERY: Final = 64
"""By default one wait in this many polls through the window however the score stands; the
longest probe period of a predictor made with a shorter one."""
_PROBE_MAX_MASK: Final = PROBE_EVERY - 1


class SpinPredictor:
    """Whether a waiter should poll through a spin window before it sleeps (see module).

    A wake-up from a futex costs tens of microseconds of latency on a virtual machine (and the
    CPU of a cold start), more than a wait that ends quickly lasts; polling costs a core for as
    long as it goes on. While recent waits have mostly been shorter than ``window_ns`` the
    waiter polls that long first; while they have mostly been longer it sleeps at once and the
    polls are not spent. "Mostly" is a saturating count (:attr:`score`, 0 to 3, up one per short
    wait, down one per long one; poll while it is 1 or more), as a branch predictor's: one slow
    wait does not stop the polling. A wait that ended in a sleep is measured late (the
    wake-up's latency is in it), so one wait in :data:`PROBE_EVERY` polls through the window
    anyway, to find short waits again. ``probe_every`` (a power of two up to that) is a shorter
    first period: probes then come every ``probe_every`` waits once the score fell to 0, half as
    often after each probe that found a long wait, down to one in :data:`PROBE_EVERY`, and as
    often as first again after a short one (a caller whose answers came late through a stall
    finds them quick again soon, one whose answers stay late spends few probes).
    ``window_ns`` 0: never poll. ``max_window_ns`` (0: the window stays as made) lets the
    window grow to the waits it just missed (see module): :attr:`window_ns` is the window now,
    between the one made with and :attr:`max_window_ns`.

    Caller: one waiter at a time (a lost update from a race between two only shifts a guess).
    """

    __slots__ = (
        "_first_probe_mask",
        "_probe_mask",
        "_waits",
        "base_window_ns",
        "max_window_ns",
        "score",
        "window_ns",
    )

    def __init__(
        self, window_ns: int, probe_every: int = PROBE_EVERY, max_window_ns: int = 0
    ) -> None:
        if window_ns < 0:
            raise ConfigurationError(
                "the spin window must not be negative", spin_window_ns=window_ns
            )
        if max_window_ns and (max_window_ns < window_ns or not window_ns):
            raise ConfigurationError(
                "an adaptive spin window needs a window, and a most no less than it",
                spin_window_ns=window_ns,
                max_window_ns=max_window_ns,
            )
        if probe_every < 1 or probe_every > PROBE_EVERY or probe_every & (probe_every - 1):
            raise ConfigurationError(
                f"the probe period must be a power of two up to {PROBE_EVERY}",
                probe_every=probe_every,
            )
        self.window_ns = window_ns
        """The window now (it moves between :attr:`base_window_ns` and :attr:`max_window_ns`)."""
        self.base_window_ns = window_ns
        """The window made with: the least it shrinks to."""
        self.max_window_ns = max_window_ns or window_ns
        """The most it grows to (the window made with: it stays)."""
        self.score = _SPIN_SCORE_MAX
        self._waits = 0
        self._probe_mask = self._first_probe_mask = probe_every - 1

    def should_poll(self) -> bool:
        """At the start of a wait: whether to poll through the window before sleeping."""
        if not self.window_ns:
            return False
        self._waits += 1
        return self.score >= _SPIN_SCORE_POLLS or not self._waits & self._probe_mask

    def observe(self, waited_ns: int) -> None:
        """At the end of a wait that took ``waited_ns``: count it short or long."""
        if waited_ns < self.window_ns:
            self._probe_mask = self._first_probe_mask
            score = self.score + 1
            self.score = _SPIN_SCORE_MAX if score > _SPIN_SCORE_MAX else score
        else:
            self._count_long(waited_ns)

    def _count_long(self, waited_ns: int) -> None:
        """A wait of the window or longer: the window moved (when it adapts: doubled for a
        wait within the most, halved for a longer one), the score down one, and at 0 already
        (the wait of a probe) the next probe later."""
        max_ns = self.max_window_ns
        if max_ns != self.base_window_ns:
            window_ns = self.window_ns
            if waited_ns < max_ns:
                self.window_ns = max_ns if window_ns * 2 > max_ns else window_ns * 2
            elif window_ns > self.base_window_ns:
                self.window_ns = max(window_ns // 2, self.base_window_ns)
        if self.score:
            self.score -= 1
            return
        mask = self._probe_mask
        if mask < _PROBE_MAX_MASK:
            self._probe_mask = mask * 2 + 1

    def observe_then_ask(self, waited_ns: int) -> bool:
        """:meth:`observe` (when ``waited_ns`` >= 0; < 0: no wait to count), then
        :meth:`should_poll`, in one call: for a waiter whose next wait starts as the last one
        ends (the doorbell idle strategy after a cycle that settled: a call less a message)."""
        window_ns = self.window_ns
        if not window_ns:
            return False
        score = self.score
        if waited_ns >= 0:  # observe's, written out (a call less a settled cycle)
            if waited_ns < window_ns:
                self._probe_mask = self._first_probe_mask
                self.score = score = _SPIN_SCORE_MAX if score >= _SPIN_SCORE_MAX else score + 1
            else:
                self._count_long(waited_ns)  # (rare: a gap the window missed)
                score = self.score
        self._waits += 1
        return score >= _SPIN_SCORE_POLLS or not self._waits & self._probe_mask
