"""``DoorbellIdleStrategy``: Agrona's backoff shape whose parks are waits on a doorbell.

Spins, yields, parks doubling from a minimum to a maximum, an optional deep park; each park a
wait on a :class:`~transport.concurrent.doorbell.Doorbell` (``doorbell.py``: the word and its
contract), which a ring ends. Its defaults skip the spins and yields, which in CPython cost
a whole empty poll each. When its owner says that every source of its work rings
(``all_rung``), each park is the longest at once (the deep park's, when it has one): a park
ends at the ring anyway, and on a virtual machine every wake-up of a thread costs 10-20 us of
CPU, a short park as much as a long one, so short parks only add wake-ups, and the first work
after a quiet minute is woken as soon as the thousandth.
An owner that can tell that a duty cycle which did work also read every source of its work to
the end (:class:`Settling`) lets the strategy park right after that cycle: the cycle came after
the strategy last read the word, so it was the poll the contract asks for, and the empty cycle
that would otherwise follow it is not run.

:class:`~transport.concurrent.spin_predictor.SpinPredictor` (re-exported here) is the guess a
waiter makes before it sleeps: whether to poll through a short window first or sleep at once;
the strategy's spin windows, and a client waiting for its answer, use it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Final, Protocol

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent._atomic import FUTEX_TIMED_OUT, HAS_FUTEX
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.concurrent.idle_strategy import (
    BackoffIdleStrategy,
    IdleStrategy,
    check_backoff_shape,
    idle_strategy_from_name,
    next_park_period_ns,
)
from aeromq.transport.concurrent.spin_predictor import SpinPredictor

__all__ = ["DoorbellIdleStrategy", "Settling", "SpinPredictor", "idle_strategy_with_doorbell"]

_DEFAULT_PARAMS: Final = "0,0,1000,1000000"


class Settling(Protocol):
    """The owner of a :class:`DoorbellIdleStrategy` that tells it, after each duty cycle that
    did work, whether that cycle settled (see :attr:`settled`): the strategy then parks at once,
    without first running the empty cycle that is otherwise the poll between reading the word
    and sleeping (the broker's session agent, ``broker/session/_agent.py``)."""

    @property
    def settled(self) -> bool:
        """Read after a cycle that did work: it read every source of work to the end (no poll
        stopped at its fragment limit, none left work for a later poll, no handler failed),
        nothing it started is left for a later cycle, and every source of work rings the
        doorbell now (as ``all_rung`` says). A cycle comes after the strategy read the word,
        so anything published before that read was taken, and anything published since rang
        it."""
        ...

    @property
    def long_spin(self) -> bool:
        """Read after a cycle that did work, only by a strategy with a long spin window
        (``long_spin_window_ns``): whether the idle gap after this cycle is one of the kind
        that window is for (the broker's session agent: a cycle of one-at-a-time sends, whose
        producer's next send comes back after its own wake-up). Such gaps are polled through
        the long window, with a predictor of their own; the others through the spin window."""
        ...


class DoorbellIdleStrategy:
    """Spin ``max_spins`` times, yield ``max_yields`` times, then park on ``doorbell`` for a
    period that doubles from ``min_park_period_ns`` to ``max_park_period_ns`` (and on to
    ``deep_park_period_ns`` after ``deep_idle_after_ns`` of parking, when that is not 0, as
    :class:`~transport.concurrent.idle_strategy.BackoffIdleStrategy`); a ring ends a park at
    once, any work resets.

    The doorbell's contract asks for a poll between reading the word and sleeping: every park
    reads the word again on waking (:meth:`Doorbell.prepare`), before the agent's next poll.
    Without spins and yields (the default) a cycle that did work reads it too, so the first
    empty cycle after work parks at once; with them, the first park only reads the word and
    returns, for the agent to poll once more. One poll per park, none wasted on spins and
    yields by default.

    ``all_rung``, when set, is asked before each park whether every source of work rings the
    doorbell now; while it says so, a park lasts the longest at once: ``deep_park_period_ns``
    when there is a deep park, else ``max_park_period_ns`` (the backoff's period walks on
    beneath, so a park after it stops saying so is as short as the backoff's). A ring ends
    the park, so the longest park costs no latency; it saves the wake-ups of the short ones.
    ``rung_park_ns`` (0: off) makes those parks longer still: an owner whose work all rings
    sleeps until its next due time (a broker's session agent, until its sweep), not the deep
    park's period; ``rung_park_for``, when set, may ask for longer (no sessions to sweep).
    :meth:`wake` ends a park (a runner stopping its thread); :meth:`wake_for_unrung` ends it
    and holds the parks to the backoff's for a while (work that rings nothing is on its way);
    :meth:`wake_to_shortest` ends it and starts the backoff over (news is expected soon).

    ``spin_window_ns`` (0: off) adapts to ping-pong traffic (:class:`SpinPredictor`): while the
    idle gaps (from the first empty cycle to the next work) have mostly been shorter than the
    window, the agent polls for up to the window before it parks; while they have mostly been
    longer, it parks at once and those polls are not spent. ``long_spin_window_ns`` (0: none)
    is a second window, with a predictor of its own, for the gaps after the cycles its
    ``settling`` owner marks (:attr:`Settling.long_spin`): one kind of exchange may come back
    later than the others and still be worth the polls (a one-at-a-time producer's next send,
    while a consumer's next pull after a drained batch is not). ``long_spin_max_window_ns`` (0:
    the long window stays) lets the long window adapt up to it (:class:`SpinPredictor`: doubled
    by a gap it missed within that, halved by a longer one), so that a producer whose next send
    comes later than the window after its own wake-up is still caught. ``state``,
    ``park_period_ns``, ``rings`` (parks a ring ended) and ``spin_score`` (the spin window
    predictor's) are readable.

    ``yield_while_polling`` (off by default) ends each poll of a spin window in ``sched_yield()``
    (as Aeron's backoff yields): a thread woken onto the agent's CPU then runs at once, not after
    the agent's time slice (a broker's session agent, ``broker.session._idle``).

    ``settling``, when set (without spins and yields), is read after each cycle that did work
    (:class:`Settling`): a cycle that settled is the poll after the word, so the strategy parks
    at once on the word it read before that cycle (or, while the spin predictor says so, polls
    through the window first, its idle gap counted from that cycle's end), and the empty cycle
    that would have read every source once more is not run: at 1,000 msgs/s one a message,
    about ten Python calls of the broker's session agent.
    """

    __slots__ = (
        "_armed",
        "_eager",
        "_gap_spin",
        "_idle_since_ns",
        "_long_spin",
        "_observed",
        "_restart",
        "_short_until_ns",
        "_spin",
        "all_rung",
        "deep_idle_after_ns",
        "deep_park_period_ns",
        "doorbell",
        "max_park_period_ns",
        "max_spins",
        "max_yields",
        "min_park_period_ns",
        "park_period_ns",
        "parked_ns",
        "rings",
        "rung_park_for",
        "rung_park_ns",
        "settling",
        "spins",
        "state",
        "yield_while_polling",
        "yields",
    )
    alias = "doorbell"

    NOT_IDLE = 0
    SPINNING = 1
    YIELDING = 2
    PARKING = 3
    POLLING = 4  # within the spin window

    DEFAULT_MAX_SPINS = 0
    DEFAULT_MAX_YIELDS = 0
    DEFAULT_MIN_PARK_PERIOD_NS = 1_000
    DEFAULT_MAX_PARK_PERIOD_NS = 1_000_000

    def __init__(
        self,
        doorbell: Doorbell,
        max_spins: int = DEFAULT_MAX_SPINS,
        max_yields: int = DEFAULT_MAX_YIELDS,
        min_park_period_ns: int = DEFAULT_MIN_PARK_PERIOD_NS,
        max_park_period_ns: int = DEFAULT_MAX_PARK_PERIOD_NS,
        deep_park_period_ns: int = 0,
        deep_idle_after_ns: int = 1_000_000_000,
        spin_window_ns: int = 0,
        long_spin_window_ns: int = 0,
        long_spin_max_window_ns: int = 0,
    ) -> None:
        self._spin = SpinPredictor(spin_window_ns)
        self._long_spin = None
        if long_spin_window_ns:
            self._long_spin = SpinPredictor(
                long_spin_window_ns, max_window_ns=long_spin_max_window_ns
            )
        elif long_spin_max_window_ns:
            raise ConfigurationError(
                "a long spin window's most needs a long spin window",
                long_spin_max_window_ns=long_spin_max_window_ns,
            )
        self._gap_spin = self._spin  # the predictor of the gap under way (or the last one)
        check_backoff_shape(
            max_spins,
            max_yields,
            min_park_period_ns,
            max_park_period_ns,
            deep_park_period_ns,
            deep_idle_after_ns,
        )
        self.doorbell = doorbell
        self.max_spins = max_spins
        self.max_yields = max_yields
        self.min_park_period_ns = min_park_period_ns
        self.max_park_period_ns = max_park_period_ns
        self.deep_park_period_ns = deep_park_period_ns
        self.deep_idle_after_ns = deep_idle_after_ns
        self.state = self.NOT_IDLE
        self.spins = 0
        self.yields = 0
        self.park_period_ns = min_park_period_ns
        self.parked_ns = 0
        self.rings = 0
        self.all_rung: Callable[[], bool] | None = None
        self.rung_park_ns = 0
        """While ``all_rung`` says so, parks last at least this long (0: the longest park's
        period): until the owner's next due time (see class)."""
        self.rung_park_for: Callable[[], int] | None = None
        """With ``rung_park_ns``: asked for a longer park still while ``all_rung`` says so (the
        owner's next due time now; see class)."""
        self.settling: Settling | None = None
        """Read after each cycle that did work: whether it settled (see class)."""
        self.yield_while_polling = False  # each window poll ends in sched_yield() (see class)
        self._eager = max_spins == 0 and max_yields == 0
        self._armed = False
        self._observed = 0
        self._idle_since_ns = 0
        self._short_until_ns = 0
        self._restart = False

    @property
    def spin_window_ns(self) -> int:
        """How long the agent may poll before it parks (0: it never does)."""
        return self._spin.window_ns

    @property
    def long_spin_window_ns(self) -> int:
        """The window of the gaps its owner marks, now (see class; 0: none)."""
        long_spin = self._long_spin
        return 0 if long_spin is None else long_spin.window_ns

    @property
    def long_spin_max_window_ns(self) -> int:
        """The most the long window grows to (see class; the long window as made: it stays)."""
        long_spin = self._long_spin
        return 0 if long_spin is None else long_spin.max_window_ns

    @property
    def spin_score(self) -> int:
        """The spin predictor's count: 1 or more, the agent polls through its window first."""
        return self._spin.score

    def idle(self, work_count: int = 0) -> None:
        """Idle after a duty cycle that did ``work_count`` pieces of work (see class).

        Work resets the backoff; an empty cycle spins, yields, polls through the spin window,
        or parks on the doorbell until a ring or the park period; so does a cycle that did work
        and settled (see class).
        """
        if work_count > 0:
            spin = gap_spin = self._gap_spin  # the gap this work ended was that one's
            waited_ns = -1  # the idle gap this work ended, if one was timed (a spin window)
            if self.state != self.NOT_IDLE:
                if self._idle_since_ns:
                    waited_ns = time.monotonic_ns() - self._idle_since_ns
                # reset(), inline (a call a working cycle), but for _armed: the word read
                # before this cycle stays for a park right after it (below)
                self.spins = self.yields = self.parked_ns = 0
                self.park_period_ns = self.min_park_period_ns
                self.state = self.NOT_IDLE
                self._idle_since_ns = 0
            if self._eager:
                settling = self.settling
                long_spin = self._long_spin
                if long_spin is not None and settling is not None:
                    # the next gap's predictor (see class); the ended gap is counted by its own
                    spin = self._gap_spin = long_spin if settling.long_spin else self._spin
                    if spin is not gap_spin and waited_ns >= 0:
                        gap_spin.observe(waited_ns)
                        waited_ns = -1
                if self._armed and settling is not None and settling.settled:
                    # this cycle was the poll after the word (see class): no empty cycle first
                    if spin.window_ns:
                        self._idle_since_ns = time.monotonic_ns()
                        if spin.observe_then_ask(waited_ns):
                            self.state = self.POLLING
                            self._observed = self.doorbell.prepare()
                            return
                    self.state = self.PARKING
                    self._park(True)
                    return
                # read the word now: the agent's next cycle is the poll after it
                self._observed = self.doorbell.prepare()
                self._armed = True
            else:
                self._armed = False
            if waited_ns >= 0:
                gap_spin.observe(waited_ns)
            return
        state = self.state
        if state == self.PARKING:
            self._park()
            return
        if state == self.NOT_IDLE:
            spin = self._gap_spin
            if spin.window_ns:
                self._idle_since_ns = time.monotonic_ns()
                if spin.should_poll():
                    self.state = self.POLLING
                    return
            self.state = state = self.SPINNING
            self.spins = 0
        elif state == self.POLLING:
            if time.monotonic_ns() - self._idle_since_ns < self._gap_spin.window_ns:
                if self.yield_while_polling:
                    os.sched_yield()  # (releases the interpreter too)
                return
            self.state = state = self.SPINNING
            self.spins = 0
        if state == self.SPINNING:
            if self.spins < self.max_spins:
                self.spins += 1
                return
            self.state = state = self.YIELDING
            self.yields = 0
        if state == self.YIELDING:
            if self.yields < self.max_yields:
                self.yields += 1
                os.sched_yield()
                return
            self.state = self.PARKING
            self.park_period_ns = self.min_park_period_ns
            self.parked_ns = 0
            self._park()

    def _park(self, rung: bool = False) -> None:
        """Park once on the word read before the last poll (``rung``: the owner said every
        source of work rings, see :class:`Settling`; else ``all_rung`` is asked)."""
        if not self._armed:  # no word read before the last poll: read it, poll once more
            self._observed = self.doorbell.prepare()
            self._armed = True
            return
        if self._restart:  # asked between parks (see wake_to_shortest)
            self._restart_backoff()
        period = self.park_period_ns
        sleep_ns = period
        longest = max(self.max_park_period_ns, self.deep_park_period_ns, self.rung_park_ns)
        if period < longest and (rung or (self.all_rung is not None and self.all_rung())):
            sleep_ns = longest  # the backoff walks on beneath it
            if longest == self.rung_park_ns:
                if time.monotonic_ns() < self._short_until_ns:
                    sleep_ns = max(period, self.max_park_period_ns, self.deep_park_period_ns)
                elif self.rung_park_for is not None:
                    sleep_ns = max(sleep_ns, self.rung_park_for())
        result = self.doorbell.await_ring(self._observed, sleep_ns)
        self._observed = self.doorbell.prepare()
        if self._restart:  # asked during the park (see wake_to_shortest)
            self._restart_backoff()
            return
        if result != FUTEX_TIMED_OUT:
            self.rings += 1
            return
        self.parked_ns += sleep_ns
        self.park_period_ns = next_park_period_ns(self, period)

    def _restart_backoff(self) -> None:
        self._restart = False
        self.park_period_ns = self.min_park_period_ns
        self.parked_ns = 0

    def wake(self) -> None:
        """End the current park now (any thread): ring the doorbell."""
        self.doorbell.ring()

    def wake_to_shortest(self) -> None:
        """End the current park and start the backoff over from its shortest park, as work
        would (any thread): its owner expects news it is not rung for (an Aeron client's
        conductor, while a session connects, an image). Its owner's thread does the reset, on
        waking; a ring that finds it between parks ends its next one."""
        self._restart = True
        self.doorbell.ring()

    def wake_for_unrung(self, for_ns: int) -> None:
        """End the current park, and for the next ``for_ns`` keep parks to the backoff's longest
        even while every source rings (no ``rung_park_ns``): work that rings nothing may come
        meanwhile (a new client's first request, sent before it knows the doorbell). From any
        thread (a race with the owner's own park only shortens or lengthens one park)."""
        self._short_until_ns = time.monotonic_ns() + for_ns
        self.doorbell.ring()

    def reset(self) -> None:
        """Back to NOT_IDLE with the shortest park; the next park first reads the word again."""
        self.spins = 0
        self.yields = 0
        self.parked_ns = 0
        self.park_period_ns = self.min_park_period_ns
        self.state = self.NOT_IDLE
        self._armed = False
        self._idle_since_ns = 0

    def __repr__(self) -> str:
        return (
            f"DoorbellIdleStrategy(max_spins={self.max_spins}, max_yields={self.max_yields}, "
            f"min_park_period_ns={self.min_park_period_ns}, "
            f"max_park_period_ns={self.max_park_period_ns}, "
            f"deep_park_period_ns={self.deep_park_period_ns}, "
            f"deep_idle_after_ns={self.deep_idle_after_ns}, "
            f"spin_window_ns={self.spin_window_ns}, "
            f"long_spin_window_ns={self.long_spin_window_ns}, "
            f"long_spin_max_window_ns={self.long_spin_max_window_ns}, "
            f"yield_while_polling={self.yield_while_polling})"
        )


def idle_strategy_with_doorbell(name: str, doorbell: Doorbell | None) -> IdleStrategy:
    """An idle strategy from its name: ``doorbell[:SPINS,YIELDS,MIN_NS,MAX_NS[,DEEP_NS,
    DEEP_AFTER_NS[,SPIN_WINDOW_NS[,LONG_SPIN_WINDOW_NS[,LONG_SPIN_MAX_NS]]]]]`` parks on
    ``doorbell`` (``None``: a doorbell of its own that nobody rings, e.g. to check a configured
    name), any other name is :func:`~transport.concurrent.idle_strategy.idle_strategy_from_name`'s.
    Without futexes (off Linux) a doorbell name gives the backoff of the same shape."""
    alias, _, params = name.strip().partition(":")
    if alias.strip().lower() != DoorbellIdleStrategy.alias:
        return idle_strategy_from_name(name)
    if not params.strip():
        params = _DEFAULT_PARAMS
    parts = [part.strip() for part in params.split(",")]
    if len(parts) not in (4, 6, 7, 8, 9):
        raise ConfigurationError(
            "idle strategy takes a different number of parameters",
            name=name,
            expected="4, 6, 7, 8 or 9",
            given=len(parts),
        )
    try:
        values = [int(part.replace("_", "")) for part in parts]
    except ValueError as exc:
        raise ConfigurationError("idle strategy parameter is not an integer", name=name) from exc
    if not HAS_FUTEX:  # no futexes here: the same shape, parked by the clock
        return BackoffIdleStrategy(*values[:6])
    return DoorbellIdleStrategy(doorbell if doorbell is not None else Doorbell.allocate(), *values)
