"""Channel URIs: ``aeron:ipc`` and ``aeron:udp?endpoint=host:port|...``, parsed and validated.

Grammar (Aeron's ``ChannelUri``)::

    channel  = [ "aeron-spy:" ] "aeron:" media [ "?" param *( "|" param ) ]
    media    = "ipc" / "udp"
    param    = key "=" value        ; a key is not empty; a value runs to the next "|"

A key given twice keeps its last value. Known parameters are checked as the driver would use
them (below); unknown ones are kept as they are, so that a URI meant for a newer driver still
parses. A bad URI raises :class:`~transport.ChannelUriError` naming the URI, the key and the
value; a host that does not resolve raises :class:`~transport.UnknownHostError` when it is
resolved (``ChannelUri.resolve_endpoint``, ``canonical_form``), never while parsing.

==================================  ===========================================================
``endpoint``, ``control``           ``host:port`` or ``[ipv6]:port``, port 0..65535
``interface``                       ``host[:port][/prefix]``, prefix up to 32 (128 for IPv6)
``mtu``                             a size (``8k``) above 32, at most 65504, multiple of 32
``term-length``                     a size, a power of two from 64 KiB to 1 GiB
``init-term-id``, ``term-id``       i32; with ``term-offset`` all three or none, and
                                    ``term-id - init-term-id`` not negative
``term-offset``                     0 .. ``term-length`` (1 GiB without it), multiple of 32
``session-id``                      i32, or ``tag:N``
``so-sndbuf``, ``so-rcvbuf``        a size, 0 .. 2^31 - 1 (0 is the OS default)
``rcv-wnd``, ``pub-wnd``            a size, 1 .. 2^31 - 1
``linger``, ``nak-delay``,          a duration: digits and an optional ``ns``, ``us``, ``ms``
``untethered-*-timeout``            or ``s`` suffix (no suffix is ns)
``sparse``, ``eos``, ``tether``,    ``true`` or ``false``
``reliable``, ``group``,
``rejoin``, ``ssc``
``ttl``                             0..255
``control-mode``                    ``manual``, ``dynamic`` or ``response``
``tags``                            up to two comma-separated i64 tags (channel, entity)
``gtag``                            i64
``stream-id``                       i32
``response-correlation-id``         i64 or ``prototype``
==================================  ===========================================================

Sizes are digits with an optional ``k``, ``m`` or ``g`` suffix (either case, powers of 1024).
A UDP channel needs an ``endpoint``, a ``control``, a channel tag or a ``control-mode``; a
spy (``aeron-spy:``) watches UDP publications only.

The canonical form (Aeron's ``UdpChannel.canonicalForm``) is what the driver matches
channels by: ``UDP-<local address hex>-<local port>-<remote address hex>-<remote port>`` with
resolved addresses, so ``localhost`` and ``127.0.0.1`` give the same channel; ``aeron:ipc``
for IPC, whatever its parameters.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import socket
from collections.abc import Callable
from typing import Any, NamedTuple, Self

from aeromq.transport._errors import ChannelUriError, ConfigurationError, UnknownHostError
from aeromq.transport.logbuffer.log_buffer_descriptor import TERM_MAX_LENGTH
from aeromq.transport.protocol.data_header_flyweight import FRAME_ALIGNMENT
from aeromq.transport.protocol.setup_flyweight import (
    MAX_UDP_PAYLOAD_LENGTH,
    is_valid_mtu,
    is_valid_term_length,
)

__all__ = [
    "AERON_PREFIX",
    "IPC_CHANNEL",
    "IPC_MEDIA",
    "SPY_PREFIX",
    "UDP_MEDIA",
    "ChannelUri",
    "InterfaceAddress",
    "SocketAddress",
    "parse_duration_ns",
    "parse_size",
    "resolve_socket_address",
]

AERON_PREFIX = "aeron:"
SPY_PREFIX = "aeron-spy:"
IPC_MEDIA = "ipc"
UDP_MEDIA = "udp"
IPC_CHANNEL = "aeron:ipc"

_INT32_MAX = 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_SIZE_RE = re.compile(r"(\d+)([kKmMgG]?)")
_DURATION_RE = re.compile(r"(\d+)(ns|us|ms|s)?", re.IGNORECASE)
_INT_RE = re.compile(r"-?\d+")
_HOST_RE = re.compile(r"[A-Za-z0-9_.-]+")
_SIZE_SUFFIXES = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
_DURATION_NS = {"": 1, "ns": 1, "us": 1000, "ms": 1_000_000, "s": 1_000_000_000}
_UNIQUE_CANONICAL_SUFFIX = itertools.count()


class SocketAddress(NamedTuple):
    """A ``host:port`` from a URI; ``host`` without the brackets of an IPv6 literal."""

    host: str
    port: int


class InterfaceAddress(NamedTuple):
    """An ``interface`` value: a host, a port (0 if none) and a prefix length (None if none)."""

    host: str
    port: int
    prefix_length: int | None


class _BadValue(ValueError):
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


def _parse_socket_address(value: str) -> SocketAddress:
    return _split_host_port(value, port_required=True)


def _parse_interface(value: str) -> InterfaceAddress:
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


_CHECKS = {
    "endpoint": _parse_socket_address,
    "control": _parse_socket_address,
    "interface": _parse_interface,
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


def resolve_socket_address(
    host: str, port: int, *, uri: str = "", key: str = "endpoint"
) -> tuple[socket.AddressFamily, tuple[Any, ...]]:
    """Resolve a host for UDP: ``(family, sockaddr)``, IPv4 preferred; UnknownHostError if none.

    This is I/O (it may ask DNS): the driver's conductor calls it when it opens a channel.
    """
    last_error: socket.gaierror | None = None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            infos = socket.getaddrinfo(host, port, family, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
        except socket.gaierror as exc:
            last_error = exc
            continue
        if infos:
            info = infos[0]
            return info[0], info[4]
    raise UnknownHostError(
        "could not resolve host", uri=uri, key=key, host=host, reason=str(last_error)
    ) from last_error


class ChannelUri:
    """A parsed, validated channel URI: prefix, media and parameters (in their given order)."""

    __slots__ = ("_media", "_params", "_prefix")

    def __init__(
        self, media: str, params: dict[str, str] | None = None, *, spy: bool = False
    ) -> None:
        """Build a URI from its parts, checked as ``parse`` checks them."""
        params = params or {}
        self._init(media, params, spy, self._describe(media, params, spy))

    def _init(self, media: str, params: dict[str, str], spy: bool, source: str) -> None:
        self._prefix = SPY_PREFIX if spy else ""
        self._media = media
        self._params = {key: _checked(source, key, value) for key, value in params.items()}
        self._check_whole(source)

    @classmethod
    def parse(cls, uri: str) -> Self:
        """Parse ``uri``; raise ChannelUriError naming the URI, the key and the bad value."""
        rest = uri
        spy = rest.startswith(SPY_PREFIX)
        if spy:
            rest = rest[len(SPY_PREFIX) :]
        if not rest.startswith(AERON_PREFIX):
            raise ChannelUriError("channel URI must start with 'aeron:'", uri=uri)
        media, question, query = rest[len(AERON_PREFIX) :].partition("?")
        if ":" in media:
            raise ChannelUriError("':' in the media of a channel URI", uri=uri, media=media)
        params: dict[str, str] = {}
        if question:
            for param in query.split("|"):
                key, equals, value = param.partition("=")
                if not equals:
                    raise ChannelUriError("channel URI parameter without '='", uri=uri, param=param)
                if not key:
                    raise ChannelUriError(
                        "channel URI parameter without a key", uri=uri, value=value
                    )
                params.pop(key, None)  # the last value wins, in the last position
                params[key] = value
        instance = cls.__new__(cls)
        instance._init(media, params, spy, uri)
        return instance

    @staticmethod
    def _describe(media: str, params: dict[str, str], spy: bool) -> str:
        query = "|".join(f"{key}={value}" for key, value in params.items())
        return f"{SPY_PREFIX if spy else ''}{AERON_PREFIX}{media}{'?' + query if query else ''}"

    def _check_whole(self, uri: str) -> None:
        """The rules that span parameters: media, spy, UDP addressing, the term id set."""
        if self._media not in (IPC_MEDIA, UDP_MEDIA):
            raise ChannelUriError(
                "channel URI media must be ipc or udp", uri=uri, media=self._media
            )
        params = self._params
        if self._prefix and self._media != UDP_MEDIA:
            raise ChannelUriError("a spy channel must be udp", uri=uri, media=self._media)
        if (
            self._media == UDP_MEDIA
            and "endpoint" not in params
            and "control" not in params
            and "control-mode" not in params
            and self.channel_tag is None
        ):
            raise ChannelUriError(
                "a udp channel needs an endpoint, a control address, a tag or a control-mode",
                uri=uri,
            )
        present = [key for key in ("init-term-id", "term-id", "term-offset") if key in params]
        if present and len(present) < 3:
            raise ChannelUriError(
                "init-term-id, term-id and term-offset go together",
                uri=uri,
                present=present,
            )
        if present:
            initial_term_id = int(params["init-term-id"])
            term_id = int(params["term-id"])
            if ((term_id - initial_term_id + 2**31) % 2**32) - 2**31 < 0:
                raise ChannelUriError(
                    "term-id is behind init-term-id",
                    uri=uri,
                    key="term-id",
                    value=params["term-id"],
                    init_term_id=params["init-term-id"],
                )
            if "term-length" in params and int(params["term-offset"]) > parse_size(
                params["term-length"]
            ):
                raise ChannelUriError(
                    "term-offset is past the end of the term",
                    uri=uri,
                    key="term-offset",
                    value=params["term-offset"],
                    term_length=params["term-length"],
                )

    @property
    def prefix(self) -> str:
        """``"aeron-spy:"`` for a spy, else empty."""
        return self._prefix

    @property
    def is_spy(self) -> bool:
        return bool(self._prefix)

    @property
    def media(self) -> str:
        return self._media

    @property
    def is_ipc(self) -> bool:
        return self._media == IPC_MEDIA

    @property
    def is_udp(self) -> bool:
        return self._media == UDP_MEDIA

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._params.get(key, default)

    def put(self, key: str, value: str) -> str | None:
        """Set a parameter (checked like a parsed one); return the value it replaces."""
        checked = _checked(str(self), key, value)
        old = self._params.get(key)
        self._change(lambda params: params.__setitem__(key, checked))
        return old

    def remove(self, key: str) -> str | None:
        """Remove a parameter; return its value. A URI that would be invalid is refused."""
        old = self._params.get(key)
        if old is not None:
            self._change(lambda params: params.__delitem__(key))
        return old

    def _change(self, change: Callable[[dict[str, str]], None]) -> None:
        """Apply ``change`` to the parameters, undoing it if the URI would become invalid."""
        before = dict(self._params)
        change(self._params)
        try:
            self._check_whole(str(self))
        except ChannelUriError:
            self._params = before
            raise

    def __contains__(self, key: object) -> bool:
        return key in self._params

    @property
    def params(self) -> dict[str, str]:
        """A copy of the parameters, in order."""
        return dict(self._params)

    def get_size(self, key: str) -> int | None:
        """A size parameter in bytes (``64k`` -> 65536), or None if absent."""
        value = self._params.get(key)
        return None if value is None else parse_size(value)

    def get_duration_ns(self, key: str) -> int | None:
        value = self._params.get(key)
        return None if value is None else parse_duration_ns(value)

    def get_int(self, key: str) -> int | None:
        value = self._params.get(key)
        if value is None:
            return None
        if _INT_RE.fullmatch(value) is None:
            raise ConfigurationError(
                "channel URI parameter is not an integer", key=key, value=value
            )
        return int(value)

    def get_bool(self, key: str) -> bool | None:
        value = self._params.get(key)
        return None if value is None else value == "true"

    @property
    def endpoint(self) -> SocketAddress | None:
        value = self._params.get("endpoint")
        return None if value is None else _parse_socket_address(value)

    @property
    def control(self) -> SocketAddress | None:
        value = self._params.get("control")
        return None if value is None else _parse_socket_address(value)

    @property
    def interface(self) -> InterfaceAddress | None:
        value = self._params.get("interface")
        return None if value is None else _parse_interface(value)

    @property
    def channel_tag(self) -> int | None:
        """The first of ``tags``: channels with the same tag share an endpoint."""
        return self._tag(0)

    @property
    def entity_tag(self) -> int | None:
        """The second of ``tags``: publications or subscriptions with it share one."""
        return self._tag(1)

    def _tag(self, index: int) -> int | None:
        tags = self._params.get("tags", "").split(",")
        return int(tags[index]) if len(tags) > index and tags[index] else None

    @property
    def session_id_tag(self) -> int | None:
        """N for ``session-id=tag:N``, else None."""
        value = self._params.get("session-id", "")
        return int(value[4:]) if value.startswith("tag:") else None

    def resolve_endpoint(self) -> tuple[socket.AddressFamily, tuple[Any, ...]] | None:
        """The endpoint as a socket address for UDP, or None if there is none (I/O: DNS)."""
        endpoint = self.endpoint
        if endpoint is None:
            return None
        return resolve_socket_address(endpoint.host, endpoint.port, uri=str(self))

    def canonical_form(self) -> str:
        """The form channels are matched by (see the module docstring); resolves hosts."""
        if self.is_ipc:
            return IPC_CHANNEL
        uri = str(self)
        endpoint = self.endpoint
        control = self.control
        interface = self.interface
        remote = _resolved_bytes(endpoint, uri, "endpoint")
        if control is not None:
            local = _resolved_bytes(control, uri, "control")
        elif interface is not None:
            local = _resolved_bytes(SocketAddress(interface.host, interface.port), uri, "interface")
        else:
            local = (bytes(4), 0)
        form = f"UDP-{local[0].hex()}-{local[1]}-{remote[0].hex()}-{remote[1]}"
        if endpoint is None and control is None and self.channel_tag is None:
            form += f"-{next(_UNIQUE_CANONICAL_SUFFIX)}"
        return form

    def __str__(self) -> str:
        return self._describe(self._media, self._params, bool(self._prefix))

    def __repr__(self) -> str:
        return f"ChannelUri({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChannelUri):
            return NotImplemented
        return (self._prefix, self._media, self._params) == (
            other._prefix,
            other._media,
            other._params,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dict


def _checked(uri: str, key: str, value: str) -> str:
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


def _resolved_bytes(address: SocketAddress | None, uri: str, key: str) -> tuple[bytes, int]:
    if address is None:
        return bytes(4), 0
    family, sockaddr = resolve_socket_address(address.host, address.port, uri=uri, key=key)
    return socket.inet_pton(family, sockaddr[0].split("%")[0]), sockaddr[1]
