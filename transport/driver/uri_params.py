"""What a channel URI asks of a publication or a subscription, with the context's defaults.

Aeron's ``aeron_driver_uri.c``: the driver reads these parameters itself (the client passes the
channel through untouched). Syntax is :class:`transport.channel_uri.ChannelUri`'s; the values are
checked here. Any problem raises :class:`~transport.RegistrationError` (see
:mod:`~transport.driver.command_error`) with ``INVALID_CHANNEL`` and a text naming the channel,
the parameter and the value.

Publication: ``term-length``, ``mtu``, ``linger``, ``session-id``, the position triple
``init-term-id`` + ``term-id`` + ``term-offset`` (all three or none), ``sparse``, ``eos``,
``ssc`` (spies simulate connection), ``tags`` (the entity tag), ``response-correlation-id``.
Subscription: ``session-id``, ``tether``, ``sparse``, ``reliable``, ``rejoin``, and one of this
driver's own (not Aeron's, which ignores it): ``max-term-length``, the largest term a sender may
give an image of this subscription (a power of two, 64 KiB to 1 GiB; default the driver's cap,
:mod:`~transport.driver.udp.image_admission`), so a receiver that expects large terms (a
replication follower) raises it for its own channel only; and ``doorbell``, the id of a
counter of this driver that holds a :class:`~transport.concurrent.Doorbell` (one of
``DOORBELL_TYPE_ID``), which the receiver rings after each duty cycle that brought new data to
an image of the subscription (UDP only: a subscriber asleep on it wakes as the bytes land,
``transport/driver/udp/receiver.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aeromq.transport._errors import ChannelUriError, ConfigurationError, RegistrationError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.command import ErrorCode
from aeromq.transport.driver._values import parse_bool, parse_duration_ns, parse_int32, parse_size
from aeromq.transport.driver.command_error import command_error
from aeromq.transport.driver.context import MediaDriverContext, check_mtu_length
from aeromq.transport.logbuffer.frame_descriptor import FRAME_ALIGNMENT
from aeromq.transport.logbuffer.log_buffer_descriptor import check_term_length

__all__ = [
    "IPC_MEDIA",
    "UDP_MEDIA",
    "PublicationParams",
    "SubscriptionParams",
    "parse_channel",
    "publication_params",
    "subscription_params",
    "with_doorbell",
]

IPC_MEDIA = "ipc"
UDP_MEDIA = "udp"
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class PublicationParams:
    term_length: int
    mtu_length: int
    linger_timeout_ns: int
    has_term_length: bool = False
    has_mtu_length: bool = False
    session_id: int | None = None
    initial_term_id: int | None = None
    term_id: int = 0
    term_offset: int = 0
    is_sparse: bool = False
    signal_eos: bool = True
    spies_simulate_connection: bool = False
    entity_tag: int | None = None
    response_correlation_id: int = -1

    @property
    def has_position(self) -> bool:
        return self.initial_term_id is not None


@dataclass(frozen=True, slots=True)
class SubscriptionParams:
    session_id: int | None
    is_tether: bool
    is_sparse: bool
    is_reliable: bool
    is_rejoin: bool
    max_term_length: int | None = None
    doorbell_counter_id: int | None = None
    """The ``doorbell`` parameter: a counter to ring when data comes (see module)."""


def with_doorbell(channel: str, counter_id: int) -> str:
    """``channel`` with this driver's ``doorbell`` parameter naming counter ``counter_id``: the
    receiver rings that doorbell when data comes to the subscription (see module)."""
    return f"{channel}{'|' if '?' in channel else '?'}doorbell={counter_id}"


def parse_channel(channel: str) -> ChannelUri:
    """Parse ``channel``; a bad one is an ``INVALID_CHANNEL`` command error."""
    try:
        return ChannelUri.parse(channel)
    except ChannelUriError as exc:
        raise command_error(
            ErrorCode.INVALID_CHANNEL, f"invalid channel ({exc})", channel=channel
        ) from exc


class _Reader:
    """Reads one URI's parameters, turning value errors into INVALID_CHANNEL errors."""

    __slots__ = ("channel", "uri")

    def __init__(self, channel: str, uri: ChannelUri) -> None:
        self.channel = channel
        self.uri = uri

    def fail(self, key: str, value: str, rule: str) -> RegistrationError:
        return command_error(
            ErrorCode.INVALID_CHANNEL,
            f"invalid channel parameter: {rule}",
            channel=self.channel,
            key=key,
            value=value,
        )

    def get(self, key: str) -> str | None:
        return self.uri.get(key)

    def size(self, key: str) -> int | None:
        text = self.get(key)
        if text is None:
            return None
        try:
            return parse_size(key, text)
        except ConfigurationError:
            raise self.fail(key, text, "not a size") from None

    def boolean(self, key: str, default: bool) -> bool:
        text = self.get(key)
        if text is None:
            return default
        try:
            return parse_bool(key, text)
        except ConfigurationError:
            raise self.fail(key, text, "not a boolean") from None

    def int32(self, key: str) -> int | None:
        text = self.get(key)
        if text is None:
            return None
        try:
            return parse_int32(key, text)
        except ConfigurationError:
            raise self.fail(key, text, "not an int32") from None

    def session_id(self, for_publication: bool) -> int | None:
        text = self.get("session-id")
        if text is not None and text.startswith("tag:"):
            rule = "a tagged session-id must reference a network publication"
            raise self.fail("session-id", text, rule if for_publication else "not an int32")
        return self.int32("session-id")


def publication_params(
    channel: str, uri: ChannelUri, context: MediaDriverContext
) -> PublicationParams:
    """The parameters of a publication on ``uri``, defaults from ``context`` (see module)."""
    read = _Reader(channel, uri)
    is_ipc = uri.media == IPC_MEDIA
    term_length = context.ipc_term_buffer_length if is_ipc else context.term_buffer_length
    mtu_length = context.ipc_mtu_length if is_ipc else context.mtu_length

    requested_term_length = _term_length(read, "term-length")
    if requested_term_length is not None:
        term_length = requested_term_length
    requested_mtu = read.size("mtu")
    if requested_mtu is not None:
        try:
            check_mtu_length("mtu", requested_mtu)
        except ConfigurationError as exc:
            raise read.fail("mtu", str(read.get("mtu")), str(exc)) from None
        mtu_length = requested_mtu

    linger_timeout_ns = context.publication_linger_timeout_ns
    linger_text = read.get("linger")
    if linger_text is not None:
        try:
            linger_timeout_ns = parse_duration_ns("linger", linger_text)
        except ConfigurationError:
            raise read.fail("linger", linger_text, "not a duration") from None

    entity_tag = None
    tags = read.get("tags")
    if tags:
        tag_text = tags.split(",")[0].strip()
        try:
            entity_tag = int(tag_text)
        except ValueError:
            raise read.fail("tags", tags, "entity tag not an int64") from None

    response_correlation_id = -1
    response_text = read.get("response-correlation-id")
    if response_text is not None:
        try:
            response_correlation_id = int(response_text)
        except ValueError:
            raise read.fail("response-correlation-id", response_text, "not an int64") from None

    initial_term_id, term_id, term_offset = _position(read, term_length)
    return PublicationParams(
        term_length=term_length,
        mtu_length=mtu_length,
        linger_timeout_ns=linger_timeout_ns,
        has_term_length=requested_term_length is not None,
        has_mtu_length=requested_mtu is not None,
        session_id=read.session_id(True),
        initial_term_id=initial_term_id,
        term_id=term_id,
        term_offset=term_offset,
        is_sparse=read.boolean("sparse", context.term_buffer_sparse_file),
        signal_eos=read.boolean("eos", True),
        spies_simulate_connection=read.boolean("ssc", False),
        entity_tag=entity_tag,
        response_correlation_id=response_correlation_id,
    )


def _term_length(read: _Reader, key: str) -> int | None:
    """A term length parameter (``term-length``, ``max-term-length``), checked; None if unset."""
    value = read.size(key)
    if value is not None:
        try:
            check_term_length(value)
        except ConfigurationError as exc:
            raise read.fail(key, str(read.get(key)), str(exc)) from None
    return value


def _counter_id(read: _Reader, key: str) -> int | None:
    """A counter id parameter (``doorbell``): an int32 of at least 0; None if unset."""
    value = read.int32(key)
    if value is not None and value < 0:
        raise read.fail(key, str(value), "a counter id is not negative")
    return value


def _position(read: _Reader, term_length: int) -> tuple[int | None, int, int]:
    initial_term_id = read.int32("init-term-id")
    term_id = read.int32("term-id")
    offset_text = read.get("term-offset")
    given = sum(value is not None for value in (initial_term_id, term_id, offset_text))
    if given == 0:
        return None, 0, 0
    if initial_term_id is None or term_id is None or offset_text is None:
        raise read.fail(
            "init-term-id",
            str(read.get("init-term-id")),
            "init-term-id, term-id and term-offset must be used as a complete set",
        )
    try:
        term_offset = parse_size("term-offset", offset_text)
    except ConfigurationError:
        raise read.fail("term-offset", offset_text, "not a whole number") from None
    if term_id - initial_term_id > _INT32_MAX or term_id - initial_term_id < 0:
        raise read.fail("term-id", str(term_id), "term-id - init-term-id must be in 0..2^31-1")
    if term_offset > term_length:
        raise read.fail("term-offset", offset_text, f"greater than term-length {term_length}")
    if term_offset % FRAME_ALIGNMENT:
        raise read.fail("term-offset", offset_text, f"not a multiple of {FRAME_ALIGNMENT}")
    return initial_term_id, term_id, term_offset


def subscription_params(
    channel: str, uri: ChannelUri, context: MediaDriverContext
) -> SubscriptionParams:
    """The parameters of a subscription on ``uri``, defaults from ``context`` (see module)."""
    read = _Reader(channel, uri)
    return SubscriptionParams(
        session_id=read.session_id(False),
        is_tether=read.boolean("tether", context.tether_subscriptions),
        is_sparse=read.boolean("sparse", context.term_buffer_sparse_file),
        is_reliable=read.boolean("reliable", True),
        is_rejoin=read.boolean("rejoin", True),
        max_term_length=_term_length(read, "max-term-length"),
        doorbell_counter_id=_counter_id(read, "doorbell"),
    )
