"""``LossGenerator``: drops a seeded share of received datagrams, chosen by frame type.

Aeron's ``RandomLossGenerator`` and its frame-type filters, for tests and benchmarks: set it as
the media driver's ``UdpSettings.loss_generator`` (or pass it to a channel transport) and every
socket of that driver asks it, for each datagram it receives, whether to drop it before the
frame is looked at. A receiving driver sees DATA (and PAD, and heartbeats); a sending driver
sees status messages and NAKs, so one generator serves both sides.

Each rate is a probability in ``[0, 1]``; the draws come from a ``random.Random(seed)``, so a
run with the same seed and the same traffic drops the same datagrams. ``dropped`` and
``passed`` count what it decided, per frame type name.

>>> generator = LossGenerator(data_loss_rate=0.05, nak_loss_rate=0.05, seed=7)
"""

from __future__ import annotations

import random
from collections import Counter

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.protocol import (
    HDR_TYPE_DATA,
    HDR_TYPE_NAK,
    HDR_TYPE_PAD,
    HDR_TYPE_SETUP,
    HDR_TYPE_SM,
    MIN_HEADER_LENGTH,
    TYPE_FIELD_OFFSET,
)

__all__ = ["LossGenerator"]

_NAMES = {
    HDR_TYPE_DATA: "data",
    HDR_TYPE_PAD: "data",
    HDR_TYPE_SM: "sm",
    HDR_TYPE_NAK: "nak",
    HDR_TYPE_SETUP: "setup",
}


class LossGenerator:
    """Drops DATA/PAD, status message, NAK or SETUP datagrams at the given rates (see module)."""

    __slots__ = ("_random", "_rates", "dropped", "passed")

    def __init__(
        self,
        *,
        data_loss_rate: float = 0.0,
        sm_loss_rate: float = 0.0,
        nak_loss_rate: float = 0.0,
        setup_loss_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        rates = {
            "data": data_loss_rate,
            "sm": sm_loss_rate,
            "nak": nak_loss_rate,
            "setup": setup_loss_rate,
        }
        for name, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ConfigurationError(
                    "loss rate must be in [0, 1]", field=f"{name}_loss_rate", value=rate
                )
        self._rates = {
            frame_type: rates[name] for frame_type, name in _NAMES.items() if rates[name] > 0.0
        }
        self._random = random.Random(seed)
        self.dropped: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()

    def should_drop(self, buffer: AtomicBuffer, length: int) -> bool:
        """Whether to drop the datagram of ``length`` bytes at offset 0 of ``buffer``."""
        if length < MIN_HEADER_LENGTH:
            return False
        frame_type = buffer.get_uint16(TYPE_FIELD_OFFSET)
        rate = self._rates.get(frame_type)
        if rate is None:
            return False
        name = _NAMES[frame_type]
        if self._random.random() < rate:
            self.dropped[name] += 1
            return True
        self.passed[name] += 1
        return False

    def __repr__(self) -> str:
        return f"LossGenerator(dropped={dict(self.dropped)}, passed={dict(self.passed)})"
