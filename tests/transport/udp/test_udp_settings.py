"""UdpSettings: Aeron's defaults, validation naming the field, the environment, the window."""

from __future__ import annotations

import dataclasses

import pytest

from aeromq.transport._errors import ConfigurationError
from aeromq.transport.driver.context import MediaDriverContext
from aeromq.transport.driver.udp.udp_settings import UDP_ENV_VARS, UdpSettings
from aeromq.transport.testing.loss_generator import LossGenerator


def test_should_default_to_aerons_values() -> None:
    settings = UdpSettings()
    assert settings.socket_rcvbuf_length == 128 * 1024
    assert settings.socket_sndbuf_length == 0
    assert settings.initial_window_length == 128 * 1024
    assert settings.status_message_timeout_ns == 200_000_000
    assert settings.image_liveness_timeout_ns == 10_000_000_000
    assert settings.publication_connection_timeout_ns == 5_000_000_000
    assert settings.nak_unicast_delay_ns == 100_000
    assert settings.nak_unicast_retry_delay_ns == 10_000_000
    assert settings.nak_multicast_max_backoff_ns == 10_000_000
    assert settings.retransmit_unicast_delay_ns == 0
    assert settings.retransmit_unicast_linger_ns == 10_000_000
    assert settings.max_resend == 16
    assert settings.send_to_status_poll_ratio == 6


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("socket_rcvbuf_length", -1),
        ("socket_sndbuf_length", 2**31),
        ("initial_window_length", 0),
        ("status_message_timeout_ns", 0),
        ("nak_unicast_retry_delay_ratio", 0),
        ("max_resend", 1025),
        ("multicast_ttl", 256),
        ("sender_idle_strategy", "nonsense"),
        ("image_liveness_timeout_ns", 1.5),
    ],
)
def test_should_refuse_a_bad_value_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError) as error:
        UdpSettings(**{field: value})  # type: ignore[arg-type]
    assert error.value.values["field"] == field


def test_should_refuse_a_loss_generator_without_should_drop() -> None:
    with pytest.raises(ConfigurationError, match="should_drop"):
        UdpSettings(loss_generator=object())  # type: ignore[arg-type]
    assert UdpSettings(loss_generator=LossGenerator()).loss_generator is not None


def test_should_read_aerons_environment_variables() -> None:
    settings = UdpSettings.from_env(
        {
            "AERON_SOCKET_SO_RCVBUF": "2m",
            "AERON_RCV_INITIAL_WINDOW_LENGTH": "1m",
            "AERON_NAK_UNICAST_DELAY": "1ms",
            "AERON_RCV_STATUS_MESSAGE_TIMEOUT": "50ms",
            "AERON_MAX_RESEND": "8",
        },
        max_resend=4,
    )
    assert settings.socket_rcvbuf_length == 2 * 1024 * 1024
    assert settings.initial_window_length == 1024 * 1024
    assert settings.nak_unicast_delay_ns == 1_000_000
    assert settings.status_message_timeout_ns == 50_000_000
    assert settings.max_resend == 4
    assert all(name.startswith("AERON_") for name in UDP_ENV_VARS)


def test_should_nest_in_the_driver_context_and_come_from_its_environment() -> None:
    context = MediaDriverContext.from_env({"AERON_SOCKET_SO_SNDBUF": "64k"}, aeron_dir="/tmp/x")
    assert context.udp.socket_sndbuf_length == 64 * 1024
    changed = dataclasses.replace(context, udp=UdpSettings(receiver_idle_strategy="noop"))
    assert changed.new_receiver_idle_strategy().alias == "noop"
    with pytest.raises(ConfigurationError):
        MediaDriverContext(aeron_dir="/tmp/x", udp="no")  # type: ignore[arg-type]


def test_should_cap_the_receiver_window_at_half_a_term() -> None:
    settings = UdpSettings(initial_window_length=1024 * 1024)
    assert settings.receiver_window_length(64 * 1024) == 32 * 1024
    assert settings.receiver_window_length(16 * 1024 * 1024) == 1024 * 1024
    assert settings.receiver_window_length(16 * 1024 * 1024, 4096) == 4096
