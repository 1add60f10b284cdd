"""``UdpSettings``: the media driver's UDP configuration, typed and validated.

Aeron's UDP knobs of ``MediaDriver.Context`` / ``aeron_driver_context_t``, with Aeron's defaults
(1.48-1.53) and units in the names. Construction validates every field and raises
:class:`~transport.ConfigurationError` naming the field, the value and the rule; the settings are
frozen (derive changed ones with :func:`dataclasses.replace`). :meth:`UdpSettings.from_env` reads
Aeron's environment variables (``AERON_SOCKET_SO_RCVBUF``, ``AERON_RCV_INITIAL_WINDOW_LENGTH``,
``AERON_NAK_UNICAST_DELAY``, ...; see ``UDP_ENV_VARS``) in Aeron's value syntax.

==========================================  =================================================
``socket_sndbuf_length`` / ``..._rcvbuf_..``  SO_SNDBUF / SO_RCVBUF (0: the OS default)
``initial_window_length``                   receiver window sent in status messages (``rcv-wnd``
                                            overrides it per channel; at most half a term)
``status_message_timeout_ns``               longest gap between two status messages
``image_liveness_timeout_ns``               an image with no packet for this long goes
``publication_connection_timeout_ns``       a publication without status messages for this
                                            long has no receivers
``nak_unicast_delay_ns``,                   first NAK after a gap is seen, and the retries
``nak_unicast_retry_delay_ratio``           (delay x ratio)
``nak_multicast_max_backoff_ns``,           random NAK back-off of a multicast receiver
``nak_multicast_group_size``
``retransmit_unicast_delay_ns``,            a NAK's resend waits ``delay`` and then lingers,
``retransmit_unicast_linger_ns``            ignoring the same NAK, for ``linger``
``max_resend``                              retransmissions in progress per publication
``send_to_status_poll_ratio``               data sends between two polls for control frames
``network_publication_max_messages_per_send``  datagrams per publication per duty cycle
``min_flow_control_receiver_timeout_ns``    a receiver silent this long leaves the min group
``pending_setup_timeout_ns``                a session waiting for SETUP is asked again after
``multicast_ttl``                           default multicast TTL (0: the OS default)
``sender_idle_strategy``,                   idle strategies of the sender and receiver threads,
``receiver_idle_strategy``,                 and of their shared thread (``SHARED_NETWORK``)
``shared_network_idle_strategy``
``loss_generator``                          drops received datagrams (tests only; see
                                            :mod:`transport.testing.loss_generator`)
==========================================  =================================================

Three more are this driver's own (not Aeron's; read from ``AEROMQ_*`` variables), the bounds of
what SETUPs from the network may make it hold (:mod:`~transport.driver.udp.image_admission`):

==========================================  =================================================
``image_max_term_length``                   the largest term a sender may give an image (0:
                                            the larger of 64 MiB and ``term_buffer_length``);
                                            a subscription's ``max-term-length`` overrides it
``max_images_per_source``                   images one source address (IP) may hold at once
``max_image_bytes_per_source``              bytes of image logs one source address may hold
==========================================  =================================================
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.concurrent import AtomicBuffer
from aeromq.transport.concurrent.idle_strategy import idle_strategy_from_name
from aeromq.transport.driver._values import parse_duration_ns, parse_int32, parse_size
from aeromq.transport.logbuffer.log_buffer_descriptor import check_term_length

__all__ = ["OWN_ENV_VARS", "UDP_ENV_VARS", "DatagramFilter", "UdpSettings"]

_INT32_MAX = 2**31 - 1


class DatagramFilter(Protocol):
    """Decides whether a received datagram is dropped before it is looked at (loss tests)."""

    def should_drop(self, buffer: AtomicBuffer, length: int) -> bool: ...


@dataclass(frozen=True, kw_only=True)
class UdpSettings:
    """The UDP side of the media driver's configuration (see module)."""

    socket_sndbuf_length: int = 0
    socket_rcvbuf_length: int = 128 * 1024
    initial_window_length: int = 128 * 1024
    status_message_timeout_ns: int = 200_000_000
    image_liveness_timeout_ns: int = 10_000_000_000
    publication_connection_timeout_ns: int = 5_000_000_000
    nak_unicast_delay_ns: int = 100_000
    nak_unicast_retry_delay_ratio: int = 100
    nak_multicast_max_backoff_ns: int = 10_000_000
    nak_multicast_group_size: int = 10
    retransmit_unicast_delay_ns: int = 0
    retransmit_unicast_linger_ns: int = 10_000_000
    max_resend: int = 16
    send_to_status_poll_ratio: int = 6
    network_publication_max_messages_per_send: int = 2
    min_flow_control_receiver_timeout_ns: int = 5_000_000_000
    pending_setup_timeout_ns: int = 1_000_000_000
    multicast_ttl: int = 0
    sender_idle_strategy: str = "backoff"
    receiver_idle_strategy: str = "backoff"
    shared_network_idle_strategy: str = "backoff"
    loss_generator: DatagramFilter | None = None
    image_max_term_length: int = 0
    max_images_per_source: int = 64
    max_image_bytes_per_source: int = 4 * 1024**3

    def __post_init__(self) -> None:
        for name in ("socket_sndbuf_length", "socket_rcvbuf_length"):
            _check_range(name, getattr(self, name), 0, _INT32_MAX)
        _check_range("retransmit_unicast_delay_ns", self.retransmit_unicast_delay_ns, 0, None)
        _check_range("initial_window_length", self.initial_window_length, 1, _INT32_MAX)
        for name in (
            "status_message_timeout_ns",
            "image_liveness_timeout_ns",
            "publication_connection_timeout_ns",
            "nak_unicast_delay_ns",
            "nak_multicast_max_backoff_ns",
            "retransmit_unicast_linger_ns",
            "min_flow_control_receiver_timeout_ns",
            "pending_setup_timeout_ns",
        ):
            _check_range(name, getattr(self, name), 1, None)
        for name in (
            "nak_unicast_retry_delay_ratio",
            "nak_multicast_group_size",
            "max_resend",
            "send_to_status_poll_ratio",
            "network_publication_max_messages_per_send",
        ):
            _check_range(name, getattr(self, name), 1, 1024 if name == "max_resend" else None)
        _check_range("multicast_ttl", self.multicast_ttl, 0, 255)
        _check_range("max_images_per_source", self.max_images_per_source, 1, None)
        _check_range("max_image_bytes_per_source", self.max_image_bytes_per_source, 1, None)
        if self.image_max_term_length:
            try:
                check_term_length(self.image_max_term_length)
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"image_max_term_length is invalid ({exc}; 0 for the default)",
                    field="image_max_term_length",
                    value=self.image_max_term_length,
                ) from exc
        for name in (
            "sender_idle_strategy",
            "receiver_idle_strategy",
            "shared_network_idle_strategy",
        ):
            try:
                idle_strategy_from_name(getattr(self, name))
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"{name} is invalid ({exc})", field=name, value=getattr(self, name)
                ) from exc
        if self.loss_generator is not None and not callable(
            getattr(self.loss_generator, "should_drop", None)
        ):
            raise ConfigurationError(
                "loss_generator must have should_drop(buffer, length)",
                field="loss_generator",
                value=self.loss_generator,
            )

    def receiver_window_length(self, term_length: int, requested_window: int | None = None) -> int:
        """Aeron's receiver window: the requested (or initial) window, at most half a term."""
        window = self.initial_window_length if requested_window is None else requested_window
        return min(window, term_length // 2)

    @property
    def nak_unicast_retry_delay_ns(self) -> int:
        """The delay before a unicast NAK is sent again, in ns: the NAK delay times the ratio."""
        return self.nak_unicast_delay_ns * self.nak_unicast_retry_delay_ratio

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> UdpSettings:
        """Defaults, then the environment (Aeron's ``UDP_ENV_VARS`` and this driver's
        ``OWN_ENV_VARS``), then ``overrides``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, (field_name, parse) in (UDP_ENV_VARS | OWN_ENV_VARS).items():
            text = env.get(name)
            if text:
                values[field_name] = parse(name, text)
        values.update(overrides)
        return cls(**values)


def _check_range(name: str, value: object, low: int, high: int | None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigurationError(f"{name} must be an int", field=name, value=value)
    if value < low or (high is not None and value > high):
        rule = f"must be in {low}..{high}" if high is not None else f"must be >= {low}"
        raise ConfigurationError(f"{name} {rule}", field=name, value=value)


def _text(name: str, text: str) -> str:
    return text


UDP_ENV_VARS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "AERON_SOCKET_SO_SNDBUF": ("socket_sndbuf_length", parse_size),
    "AERON_SOCKET_SO_RCVBUF": ("socket_rcvbuf_length", parse_size),
    "AERON_RCV_INITIAL_WINDOW_LENGTH": ("initial_window_length", parse_size),
    "AERON_RCV_STATUS_MESSAGE_TIMEOUT": ("status_message_timeout_ns", parse_duration_ns),
    "AERON_IMAGE_LIVENESS_TIMEOUT": ("image_liveness_timeout_ns", parse_duration_ns),
    "AERON_PUBLICATION_CONNECTION_TIMEOUT": (
        "publication_connection_timeout_ns",
        parse_duration_ns,
    ),
    "AERON_NAK_UNICAST_DELAY": ("nak_unicast_delay_ns", parse_duration_ns),
    "AERON_NAK_UNICAST_RETRY_DELAY_RATIO": ("nak_unicast_retry_delay_ratio", parse_int32),
    "AERON_NAK_MULTICAST_MAX_BACKOFF": ("nak_multicast_max_backoff_ns", parse_duration_ns),
    "AERON_NAK_MULTICAST_GROUP_SIZE": ("nak_multicast_group_size", parse_int32),
    "AERON_RETRANSMIT_UNICAST_DELAY": ("retransmit_unicast_delay_ns", parse_duration_ns),
    "AERON_RETRANSMIT_UNICAST_LINGER": ("retransmit_unicast_linger_ns", parse_duration_ns),
    "AERON_MAX_RESEND": ("max_resend", parse_int32),
    "AERON_SEND_TO_STATUS_POLL_RATIO": ("send_to_status_poll_ratio", parse_int32),
    "AERON_NETWORK_PUBLICATION_MAX_MESSAGES_PER_SEND": (
        "network_publication_max_messages_per_send",
        parse_int32,
    ),
    "AERON_MIN_MULTICAST_FLOW_CONTROL_RECEIVER_TIMEOUT": (
        "min_flow_control_receiver_timeout_ns",
        parse_duration_ns,
    ),
    "AERON_SOCKET_MULTICAST_TTL": ("multicast_ttl", parse_int32),
    "AERON_SENDER_IDLE_STRATEGY": ("sender_idle_strategy", _text),
    "AERON_RECEIVER_IDLE_STRATEGY": ("receiver_idle_strategy", _text),
    "AERON_SHARED_NETWORK_IDLE_STRATEGY": ("shared_network_idle_strategy", _text),
}
"""Aeron's environment variable -> (field, parser) for the UDP settings."""

OWN_ENV_VARS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "AEROMQ_IMAGE_MAX_TERM_LENGTH": ("image_max_term_length", parse_size),
    "AEROMQ_MAX_IMAGES_PER_SOURCE": ("max_images_per_source", parse_int32),
    "AEROMQ_MAX_IMAGE_BYTES_PER_SOURCE": ("max_image_bytes_per_source", parse_size),
}
"""This driver's own environment variables (not Aeron's) -> (field, parser)."""
