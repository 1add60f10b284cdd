"""``RefusalLog``: a refusal logged at WARNING at most once per key (a source) and interval.

What a peer can send over and over (SETUPs the driver refuses, CONNECTs a broker refuses) must
not flood the log, and an operator still needs to see each source that is refused and how often.
The first refusal of a key is logged at once; later ones within ``interval_ns`` are only counted,
and the next line, once the interval has passed, says how many there were (``refused_since=``).
At most ``max_keys`` keys are remembered (least recently refused forgotten first), so a peer that
forges many source addresses costs a bounded amount of memory. No I/O but the logger's; one
thread at a time (the caller's).
"""

from __future__ import annotations

import logging
from collections import OrderedDict

__all__ = ["RefusalLog"]


class RefusalLog:
    """Refusals of ``logger``'s, rate-limited per key (see module)."""

    __slots__ = ("_interval_ns", "_keys", "_logger", "_max_keys")

    def __init__(self, logger: logging.Logger, interval_ns: int, max_keys: int = 1024) -> None:
        self._logger = logger
        self._interval_ns = interval_ns
        self._max_keys = max_keys
        self._keys: OrderedDict[str, tuple[int, int]] = OrderedDict()  # key -> (logged ns, since)

    def refused(self, key: str, now_ns: int, text: str) -> bool:
        """Count a refusal of ``key`` at ``now_ns`` described by ``text`` (``what: key=value``);
        log it if ``key`` was not logged within the interval. True when it was logged."""
        keys = self._keys
        last = keys.get(key)
        if last is not None and now_ns - last[0] < self._interval_ns:
            keys[key] = (last[0], last[1] + 1)
            keys.move_to_end(key)
            return False
        since = 0 if last is None else last[1]
        keys[key] = (now_ns, 0)
        keys.move_to_end(key)
        while len(keys) > self._max_keys:
            keys.popitem(last=False)
        self._logger.warning("%s source=%s refused_since_last_line=%d", text, key, since)
        return True

    def __len__(self) -> int:
        return len(self._keys)
