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

This module holds the parsed URI (:class:`ChannelUri`: the syntax, the rules that span
parameters, typed getters). Each value's grammar and check are in
:mod:`~transport.channel_uri_params`; resolving hosts and the canonical form of a UDP channel
in :mod:`~transport.channel_address`. Users: clients and the broker parse channels with it, the
media driver reads what a channel asks for through it (:mod:`~transport.driver.uri_params`,
:mod:`~transport.driver.udp.udp_channel`), the fake driver of :mod:`transport.testing`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any, Self

from aeromq.transport._errors import ChannelUriError, ConfigurationError
from aeromq.transport.channel_address import resolve_socket_address, udp_canonical_form
from aeromq.transport.channel_uri_params import (
    InterfaceAddress,
    SocketAddress,
    check_param,
    is_int,
    parse_duration_ns,
    parse_interface,
    parse_size,
    parse_socket_address,
)

__all__ = [
    "AERON_PREFIX",
    "IPC_CHANNEL",
    "IPC_MEDIA",
    "SPY_PREFIX",
    "UDP_MEDIA",
    "ChannelUri",
]

AERON_PREFIX = "aeron:"
SPY_PREFIX = "aeron-spy:"
IPC_MEDIA = "ipc"
UDP_MEDIA = "udp"
IPC_CHANNEL = "aeron:ipc"


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
        self._params = {key: check_param(source, key, value) for key, value in params.items()}
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
        checked = check_param(str(self), key, value)
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
        if not is_int(value):
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
        return None if value is None else parse_socket_address(value)

    @property
    def control(self) -> SocketAddress | None:
        value = self._params.get("control")
        return None if value is None else parse_socket_address(value)

    @property
    def interface(self) -> InterfaceAddress | None:
        value = self._params.get("interface")
        return None if value is None else parse_interface(value)

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

    # the address: socket's tuple, its shape by family
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
        return udp_canonical_form(
            str(self), self.endpoint, self.control, self.interface, self.channel_tag
        )

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
