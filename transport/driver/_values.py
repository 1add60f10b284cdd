"""Parsing the text values of environment variables and channel URI parameters (private).

Aeron's rules (``aeron_parse_util.c``, ``SystemUtil``), so that a value that works for the real
driver works here:

- sizes: a whole number of bytes with an optional ``k``, ``m`` or ``g`` suffix (powers of 1024,
  either case): ``64k`` is 65536;
- durations: a whole number with an optional unit ``ns``, ``us``, ``ms`` or ``s``; a bare number
  is nanoseconds: ``10s``, ``500ms``, ``1000000``;
- booleans: ``true``/``false``, ``on``/``off``, ``yes``/``no``, ``1``/``0`` (any case).

Each function raises :class:`~transport.ConfigurationError` naming the field, the text and the
rule it broke.
"""

from __future__ import annotations

from aeromq.transport._errors import ConfigurationError

__all__ = ["format_duration_ns", "parse_bool", "parse_duration_ns", "parse_int32", "parse_size"]

_SIZE_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
_DURATION_SUFFIXES = (("ns", 1), ("us", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000))
_TRUE = frozenset(("true", "on", "yes", "1"))
_FALSE = frozenset(("false", "off", "no", "0"))
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1


def _whole_number(field: str, text: str, digits: str, rule: str) -> int:
    if not digits.isdigit():
        raise ConfigurationError("value is not a " + rule, field=field, value=text)
    return int(digits)


def parse_size(field: str, text: str) -> int:
    """Bytes from ``64k``, ``1m``, ``1g`` or a plain number."""
    value = text.strip()
    multiplier = _SIZE_SUFFIXES.get(value[-1:].lower(), 1)
    digits = value[:-1] if multiplier != 1 else value
    return _whole_number(field, text, digits, "size (bytes with optional k, m or g)") * multiplier


def parse_duration_ns(field: str, text: str) -> int:
    """Nanoseconds from ``10s``, ``500ms``, ``250us``, ``100ns`` or a plain number (ns)."""
    value = text.strip().lower()
    for suffix, unit_ns in _DURATION_SUFFIXES:
        if value.endswith(suffix) and value[: -len(suffix)].isdigit():
            return int(value[: -len(suffix)]) * unit_ns
    return _whole_number(field, text, value, "duration (a number with ns, us, ms or s)")


def parse_bool(field: str, text: str) -> bool:
    """A boolean from ``true``/``false``, ``on``/``off``, ``yes``/``no``, ``1``/``0``."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError("value is not a boolean (true or false)", field=field, value=text)


def parse_int32(field: str, text: str) -> int:
    """A signed 32-bit integer (decimal, or ``0x`` hexadecimal)."""
    try:
        value = int(text.strip(), 0)
    except ValueError:
        raise ConfigurationError("value is not an integer", field=field, value=text) from None
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ConfigurationError("value is outside the int32 range", field=field, value=text)
    return value


def format_duration_ns(duration_ns: int) -> str:
    """A duration as Aeron writes it in labels: the largest unit that divides it exactly."""
    for unit_ns, suffix in ((1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")):
        if duration_ns >= unit_ns and duration_ns % unit_ns == 0:
            return f"{duration_ns // unit_ns}{suffix}"
    return f"{duration_ns}ns"
