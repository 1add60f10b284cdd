"""``LossDetector``: finds the first gap in a term being rebuilt and times the NAKs for it.

Aeron's ``LossDetector`` / ``aeron_loss_detector.c``. On each scan, from the rebuilt position
up to the high-water mark (within one term), the term gap scanner finds the first hole. A hole
that is not the one already being tracked becomes the active gap and starts a timer from the
delay generator; when the timer expires the gap is reported (the image sends a NAK) and the
timer restarts with the retry delay. When the hole fills, the scan moves past it and the next
hole (if any) becomes active; a scan that finds no hole stops the timer (``expiry_ns`` back to
:data:`TIMER_INACTIVE`: an image with a timer running owes a NAK soon, which keeps a settled
driver from its long park; a timer left running after the one loss it timed kept the driver
of every replica that ever lost a datagram waking about twice as often for good).

Delays, as Aeron's defaults:

- unicast (:class:`StaticDelayGenerator`): 100 us before the first NAK for a gap, then 100 times
  that (10 ms) between retries, so a lost retransmission is asked for again but a NAK in flight
  is not repeated at once;
- multicast (:class:`OptimalMulticastDelayGenerator`): a random back-off of at most 10 ms drawn
  from Aeron's exponential distribution for a group of 10 receivers, so that receivers which
  all lost the same packet do not all NAK at once; retries draw again.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Protocol

from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.logbuffer.term_gap_scanner import scan_for_gap

__all__ = [
    "TIMER_INACTIVE",
    "FeedbackDelayGenerator",
    "LossDetector",
    "OptimalMulticastDelayGenerator",
    "StaticDelayGenerator",
]

TIMER_INACTIVE = -1
"""``LossDetector.expiry_ns`` while no gap is timed."""


class FeedbackDelayGenerator(Protocol):
    """How long a receiver waits before sending a NAK for a gap, and between retries."""

    @property
    def should_feedback_immediately(self) -> bool: ...

    def generate_delay_ns(self) -> int: ...

    def retry_delay_ns(self) -> int: ...


class StaticDelayGenerator:
    """A fixed first delay and a fixed retry delay (unicast)."""

    __slots__ = ("_delay_ns", "_retry_delay_ns", "should_feedback_immediately")

    def __init__(
        self, delay_ns: int, retry_delay_ns: int, *, feedback_immediately: bool = False
    ) -> None:
        self._delay_ns = delay_ns
        self._retry_delay_ns = retry_delay_ns
        self.should_feedback_immediately = feedback_immediately

    def generate_delay_ns(self) -> int:
        return self._delay_ns

    def retry_delay_ns(self) -> int:
        return self._retry_delay_ns


class OptimalMulticastDelayGenerator:
    """Aeron's randomised NAK back-off for a multicast group (see module)."""

    __slots__ = ("_base_x", "_constant_t", "_factor_t", "_rand_max", "_random")

    should_feedback_immediately = False

    def __init__(
        self, max_backoff_ns: int, group_size: int, rng: random.Random | None = None
    ) -> None:
        lam = math.log(group_size) + 1.0
        max_backoff = float(max_backoff_ns)
        self._rand_max = lam / max_backoff
        self._base_x = lam / (max_backoff * (math.exp(lam) - 1.0))
        self._constant_t = max_backoff / lam
        self._factor_t = (math.exp(lam) - 1.0) * (max_backoff / lam)
        self._random = rng if rng is not None else random.Random()

    def generate_delay_ns(self) -> int:
        x = self._random.random() * self._rand_max + self._base_x
        return int(self._constant_t * math.log(x * self._factor_t))

    def retry_delay_ns(self) -> int:
        return self.generate_delay_ns()


class LossDetector:
    """Tracks one image's active gap (see module). Receiver thread only."""

    __slots__ = (
        "_active_length",
        "_active_term_id",
        "_active_term_offset",
        "_delay_generator",
        "_on_gap",
        "_on_scanned",
        "_scanned_length",
        "_scanned_term_id",
        "_scanned_term_offset",
        "expiry_ns",
    )

    def __init__(
        self, delay_generator: FeedbackDelayGenerator, on_gap: Callable[[int, int, int], None]
    ) -> None:
        self._delay_generator = delay_generator
        self._on_gap = on_gap
        self._on_scanned = self._on_scanned_gap
        self.expiry_ns = TIMER_INACTIVE
        self._active_term_id = 0
        self._active_term_offset = -1
        self._active_length = 0
        self._scanned_term_id = 0
        self._scanned_term_offset = -1
        self._scanned_length = 0

    def scan(
        self,
        term_buffer: AtomicBuffer,
        rebuild_position: int,
        hwm_position: int,
        now_ns: int,
        term_length_mask: int,
        position_bits_to_shift: int,
        initial_term_id: int,
    ) -> tuple[int, bool]:
        """Scan from ``rebuild_position``; return ``(rebuild term offset, loss found)``."""
        rebuild_offset = rebuild_position & term_length_mask
        if rebuild_position >= hwm_position:
            self.expiry_ns = TIMER_INACTIVE  # no gap: no NAK owed (an image's owes_soon)
            return rebuild_offset, False
        rebuild_term_count = rebuild_position >> position_bits_to_shift
        hwm_term_count = hwm_position >> position_bits_to_shift
        rebuild_term_id = _wrap_i32(initial_term_id + rebuild_term_count)
        limit_offset = (
            hwm_position & term_length_mask
            if rebuild_term_count == hwm_term_count
            else term_length_mask + 1
        )
        rebuild_offset = scan_for_gap(
            term_buffer, rebuild_term_id, rebuild_offset, limit_offset, self._on_scanned
        )
        loss_found = False
        if rebuild_offset < limit_offset:
            if (
                self._scanned_term_id != self._active_term_id
                or self._scanned_term_offset != self._active_term_offset
            ):
                self._activate_gap(now_ns)
                loss_found = True
            self._check_timer_expiry(now_ns)
        else:
            self.expiry_ns = TIMER_INACTIVE
        return rebuild_offset, loss_found

    def _on_scanned_gap(self, term_id: int, term_offset: int, length: int) -> None:
        self._scanned_term_id = term_id
        self._scanned_term_offset = term_offset
        self._scanned_length = length

    def _activate_gap(self, now_ns: int) -> None:
        self._active_term_id = self._scanned_term_id
        self._active_term_offset = self._scanned_term_offset
        self._active_length = self._scanned_length
        generator = self._delay_generator
        if generator.should_feedback_immediately:
            self.expiry_ns = now_ns
        else:
            self.expiry_ns = now_ns + generator.generate_delay_ns()

    def _check_timer_expiry(self, now_ns: int) -> None:
        if now_ns >= self.expiry_ns:
            self._on_gap(self._active_term_id, self._active_term_offset, self._active_length)
            self.expiry_ns = now_ns + self._delay_generator.retry_delay_ns()


def _wrap_i32(value: int) -> int:
    return ((value + 2**31) & 0xFFFF_FFFF) - 2**31
