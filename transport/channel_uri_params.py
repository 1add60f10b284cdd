"""The values of a channel URI's parameters: their grammar and the check of each known key.

Caller: :class:`~transport.channel_uri.ChannelUri`, for every parameter it parses or is given
(:func:`check_param`), and for the typed getters (``get_size``, ``endpoint``, ``interface``...).
The value grammar (sizes ``64k``, durations ``5s``, ``host:port``, ``[ipv6]:port``,
``host[:port][/prefix]``) is pure and does no I/O: resolving a host is
:mod:`~transport.channel_address`'s. The table of what each key accepts is in the module
docstring of :mod:`~transport.channel_uri`. The media driver applies the values to a publication
or a subscription with its defaults in :mod:`~transport.driver.uri_params`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import NamedTuple

from aeromq.transport._errors import ChannelUriError, ConfigurationError
from aeromq.transport.logbuffer.log_buffer_descriptor import TERM_MAX_LENGTH
from aeromq.transport.protocol.data_header_flyweight import FRAME_ALIGNMENT
from aeromq.transport.protocol.setup_flyweight import (
    MAX_UDP_PAYLOAD_LENGTH,
    is_valid_mtu,
    is_valid_term_length,
)

__all__ = [
    "InterfaceAddress",
    "SocketAddress",
    "check_param",
    "is_int",
    "parse_duration_ns",
    "parse_interface",
    "parse_size",
    "parse_socket_address",
]

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SIZE_RE = re.compile(r"(\d+)([kKmMgG]?)")
_DURATION_RE = re.compile(r"(\d+)(ns|us|ms|s)?", re.IGNORECASE)
_INT_RE = re.compile(r"-?\d+")
_HOST_RE = re.compile(r"[A-Za-z0-9_.-]+")
_SIZE_SUFFIXES = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_DURATION_NS = {"": 1, "ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000}


class SocketAddress(NamedTuple):
    """A ``host:port`` from a URI; ``host`` without the brackets of an IPv6 literal."""

    host: str
    port: int


class InterfaceAddress(NamedTuple):
    """An ``interface`` value: a host, a port (0 if none) and a prefix length (None if none)."""

    host: str
    port: int
    prefix_length: int | None


class _BadValue(ConfigurationError):
    """Raised by a value parser; ChannelUri turns it into a ChannelUriError with the URI."""


def _size(value: str) -> int:
    match = _SIZE_RE.fullmatch(value)
    if match is None:
        raise _BadValue("must be digits with an optional k, m or g suffix")
    return int(match[1]) * _SIZE_SUFFIXES[match[2].lower()]


def _duration_ns(value: str) -> int:
    match = _DURATION_RE.fullmatch(value)
    if match is None:
        raise _BadValue("must be digits with an optional ns, us, ms or s suffix")
    return int(match[1]) * _DURATION_NS[(match[2] or "").lower()]


def parse_size(value: str) -> int:
    """``"64k"`` -> 65536: digits and an optional k, m or g suffix (powers of 1024)."""
    try:
        return _size(value)
    except _BadValue as exc:
        raise ConfigurationError(f"size {exc}", value=value) from None


def parse_duration_ns(value: str) -> int:
    """``"5s"`` -> 5_000_000_000: digits and an optional ns, us, ms or s suffix (ns if none)."""
    try:
        return _duration_ns(value)
    except _BadValue as exc:
        raise ConfigurationError(f"duration {exc}", value=value) from None


def _parse_int(value: str, low: int, high: int) -> int:
    if _INT_RE.fullmatch(value) is None:
        raise _BadValue("must be an integer")
    number = int(value)
    if not low <= number <= high:
        raise _BadValue(f"must be from {low} to {high}")
    return number


def _parse_host(host: str) -> str:
    if not host:
        raise _BadValue("needs a host")
    if _HOST_RE.fullmatch(host) is None:
        raise _BadValue("has a host that is not a name or an address")
    if host.replace(".", "").isdigit():
        try:
            ipaddress.IPv4Address(host)
        except ValueError as exc:
            raise _BadValue("has an IPv4 address that does not parse") from exc
    return host


def _split_host_port(value: str, port_required: bool) -> SocketAddress:
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            raise _BadValue("has an IPv6 address without its closing ']'")
        host, rest = value[1:close], value[close + 1 :]
        try:
            ipaddress.IPv6Address(host)
        except ValueError as exc:
            raise _BadValue("has an IPv6 address that does not parse") from exc
        if rest and not rest.startswith(":"):
            raise _BadValue("must be [ipv6]:port")
        port_text = rest[1:] if rest else None
    else:
        host, separator, port_text = value.rpartition(":")
        if not separator:
            host, port_text = value, None
        elif ":" in host:
            raise _BadValue("has an IPv6 address that is not in brackets")
        host = _parse_host(host)
    if port_text is None:
        if port_required:
            raise _BadValue("must be host:port (the port is missing)")
        return SocketAddress(host, 0)
    if not port_text.isdigit() or int(port_text) > 65535:
        raise _BadValue("has a port that is not 0..65535")
    return SocketAddress(host, int(port_text))


def parse_socket_address(value: str) -> SocketAddress:
    """An ``endpoint`` or ``control`` value: ``host:port`` or ``[ipv6]:port``."""
    return _split_host_port(value, port_required=True)


def parse_interface(value: str) -> InterfaceAddress:
    """An ``interface`` value: ``host[:port][/prefix]``."""
    address, slash, prefix_text = value.partition("/")
    host, port = _split_host_port(address, port_required=False)
    if not slash:
        return InterfaceAddress(host, port, None)
    max_prefix = 128 if ":" in host else 32
    return InterfaceAddress(host, port, _parse_int(prefix_text, 0, max_prefix))


def _check_mtu(value: str) -> None:
    if not is_valid_mtu(_size(value)):
        raise _BadValue(f"must be a multiple of 32 above 32 and at most {MAX_UDP_PAYLOAD_LENGTH}")


def _check_term_length(value: str) -> None:
    if not is_valid_term_length(_size(value)):
        raise _BadValue("must be a power of two from 64 KiB to 1 GiB")


def _check_term_offset(value: str) -> None:
    if _parse_int(value, 0, TERM_MAX_LENGTH) % FRAME_ALIGNMENT:
        raise _BadValue("must be a multiple of 32")


def _check_session_id(value: str) -> None:
    if value.startswith("tag:"):
        _parse_int(value[4:], _INT64_MIN, _INT64_MAX)
    else:
        _parse_int(value, -(2**31), _INT32_MAX)


def _check_socket_buffer(value: str) -> None:
    if _size(value) > _INT32_MAX:
        raise _BadValue(f"must be at most {_INT32_MAX}")


def _check_window(value: str) -> None:
    if not 0 < _size(value) <= _INT32_MAX:
        raise _BadValue(f"must be from 1 to {_INT32_MAX}")


def _check_bool(value: str) -> None:
    if value not in ("true", "false"):
        raise _BadValue("must be true or false")


def _check_control_mode(value: str) -> None:
    if value not in ("manual", "dynamic", "response"):
        raise _BadValue("must be manual, dynamic or response")


def _check_tags(value: str) -> None:
    tags = value.split(",")
    if len(tags) > 2:
        raise _BadValue("has more than two tags (channel, entity)")
    for tag in tags:
        if tag:
            _parse_int(tag, _INT64_MIN, _INT64_MAX)


def _check_response_correlation_id(value: str) -> None:
    if value != "prototype":
        _parse_int(value, _INT64_MIN, _INT64_MAX)


def _check_int32(value: str) -> None:
    _parse_int(value, -(2**31), _INT32_MAX)


def _check_int64(value: str) -> None:
    _parse_int(value, _INT64_MIN, _INT64_MAX)


def _check_duration(value: str) -> None:
    _duration_ns(value)


_CHECKS: dict[str, Callable[[str], object]] = {
    "endpoint": parse_socket_address,
    "control": parse_socket_address,
    "interface": parse_interface,
    "mtu": _check_mtu,
    "term-length": _check_term_length,
    "init-term-id": _check_int32,
    "term-id": _check_int32,
    "term-offset": _check_term_offset,
    "session-id": _check_session_id,
    "so-sndbuf": _check_socket_buffer,
    "so-rcvbuf": _check_socket_buffer,
    "rcv-wnd": _check_window,
    "pub-wnd": _check_window,
    "linger": _check_duration,
    "nak-delay": _check_duration,
    "untethered-window-limit-timeout": _check_duration,
    "untethered-resting-timeout": _check_duration,
    "untethered-linger-timeout": _check_duration,
    "sparse": _check_bool,
    "eos": _check_bool,
    "tether": _check_bool,
    "reliable": _check_bool,
    "group": _check_bool,
    "rejoin": _check_bool,
    "ssc": _check_bool,
    "ttl": lambda value: _parse_int(value, 0, 255),
    "control-mode": _check_control_mode,
    "tags": _check_tags,
    "gtag": _check_int64,
    "stream-id": _check_int32,
    "response-correlation-id": _check_response_correlation_id,
}


def is_int(value: str) -> bool:
    """Whether ``value`` is an optionally signed decimal integer."""
    return _INT_RE.fullmatch(value) is not None


def check_param(uri: str, key: str, value: str) -> str:
    """``value`` if ``key=value`` may stand in ``uri``; else ChannelUriError naming all three."""
    if not key or "=" in key or "|" in key or "|" in value:
        raise ChannelUriError(
            "channel URI keys must be non-empty without '=' or '|', values without '|'",
            uri=uri,
            key=key,
            value=value,
        )
    check = _CHECKS.get(key)
    if check is not None:
        try:
            check(value)
        except _BadValue as exc:
            raise ChannelUriError(
                f"channel URI parameter {key} {exc}", uri=uri, key=key, value=value
            ) from None
    return value
