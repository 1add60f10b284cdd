"""Durations and sizes written as text for people: parse and format (Agrona's
``SystemUtil.parseDuration``/``parseSize`` role, with this project's units).

- :func:`parse_duration_ms`: ``500ms``, ``5s``, ``2m``, ``1h``, ``250us``, ``0.5s``; a bare
  number is milliseconds (the unit of every ``*_ms`` setting);
- :func:`format_duration_ms`: the largest whole unit, so the text parses back to the value;
- :func:`format_size`: bytes in the largest whole binary unit (``1GiB``).

Callers: the broker's and the name server's configuration (TOML values, environment variables,
the reference of every setting) and the command line's duration options. The media driver's
values follow Aeron's own rules instead (a bare number is nanoseconds:
:func:`~transport.driver.parse_duration_ns`). Standard library only.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["format_duration_ms", "format_size", "parse_duration_ms"]

_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s|m|h)?\s*$", re.IGNORECASE)
_UNIT_MS: Final = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3_600e3}


def parse_duration_ms(text: str) -> float:
    """Milliseconds from ``500ms``, ``5s``, ``2m``, ``1h``, ``250us``, ``0.5s`` or a bare number
    (milliseconds). Raises ValueError naming the text and the rule."""
    match = _DURATION.match(str(text))
    if match is None:
        raise ValueError(
            f"not a duration: value={text!r} (a number with ns, us, ms, s, m or h, e.g. 500ms, 5s)"
        )
    number, unit = match.groups()
    return float(number) * _UNIT_MS[(unit or "ms").lower()]


def format_duration_ms(value_ms: float) -> str:
    """The largest whole unit: ``259200000`` -> ``72h``, ``1500`` -> ``1500ms``, ``0`` -> ``0``."""
    if value_ms == 0:
        return "0"
    for unit, scale in (("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if value_ms % scale == 0:
            return f"{int(value_ms // scale)}{unit}"
    return f"{value_ms:g}ms"


def format_size(value: int) -> str:
    """Bytes in the largest whole binary unit: ``1073741824`` -> ``1GiB``, ``1000`` -> ``1000``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value and value % scale == 0:
            return f"{value // scale}{unit}"
    return str(value)
