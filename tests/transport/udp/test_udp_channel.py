"""UdpChannel: addresses from endpoint / control / interface, multicast rules, parameters."""

from __future__ import annotations

import socket

import pytest

from aeromq.transport._errors import ChannelUriError, UnknownHostError
from aeromq.transport.driver.udp.udp_channel import UdpChannel, format_sockaddr


def test_should_resolve_a_unicast_channel() -> None:
    channel = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40123")
    assert channel.family == socket.AF_INET
    assert channel.remote_data == ("127.0.0.1", 40123)
    assert channel.remote_control == ("127.0.0.1", 40123)
    assert channel.local_data == ("127.0.0.1", 40123)
    assert channel.local_control == ("0.0.0.0", 0)
    assert not channel.is_multicast
    assert not channel.has_explicit_control
    assert channel.unsupported_reason is None
    assert str(channel) == "aeron:udp?endpoint=127.0.0.1:40123"


def test_should_bind_a_publication_to_its_control_or_interface_address() -> None:
    control = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40123|control=127.0.0.1:40124")
    assert control.local_control == ("127.0.0.1", 40124)
    assert control.has_explicit_control
    interface = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40123|interface=127.0.0.1")
    assert interface.local_control == ("127.0.0.1", 0)


def test_should_share_the_canonical_form_of_equal_addresses() -> None:
    by_name = UdpChannel.parse("aeron:udp?endpoint=localhost:40123|mtu=4096")
    by_address = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40123")
    other_port = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:40124")
    assert by_name.canonical_form == by_address.canonical_form
    assert by_name.canonical_form != other_port.canonical_form
    assert by_address.canonical_form.startswith("UDP-")


def test_should_derive_the_multicast_control_group_from_an_odd_data_group() -> None:
    channel = UdpChannel.parse("aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1|ttl=4")
    assert channel.is_multicast
    assert channel.remote_data == ("224.0.1.1", 40456)
    assert channel.remote_control == ("224.0.1.2", 40456)
    assert channel.interface_address == "127.0.0.1"
    assert channel.multicast_ttl == 4
    with pytest.raises(ChannelUriError, match="odd"):
        UdpChannel.parse("aeron:udp?endpoint=224.0.1.2:40456")


def test_should_read_the_per_channel_parameters() -> None:
    channel = UdpChannel.parse(
        "aeron:udp?endpoint=127.0.0.1:1|mtu=8k|term-length=128k|session-id=77|so-sndbuf=1m"
        "|so-rcvbuf=2m|rcv-wnd=256k|fc=min|nak-delay=1ms",
        default_multicast_ttl=8,
    )
    assert channel.mtu_length == 8192
    assert channel.term_length == 128 * 1024
    assert channel.session_id == 77
    assert channel.socket_sndbuf_length == 1024 * 1024
    assert channel.socket_rcvbuf_length == 2 * 1024 * 1024
    assert channel.receiver_window_length == 256 * 1024
    assert channel.flow_control == "min"
    assert channel.nak_delay_ns == 1_000_000
    assert channel.multicast_ttl == 8
    plain = UdpChannel.parse("aeron:udp?endpoint=127.0.0.1:1")
    assert plain.mtu_length is None and plain.receiver_window_length is None


@pytest.mark.parametrize(
    "uri",
    [
        "aeron:udp?control=127.0.0.1:40123|control-mode=dynamic",
        "aeron:udp?endpoint=127.0.0.1:40123|control-mode=manual",
        "aeron:udp?endpoint=127.0.0.1:40123|response-correlation-id=5",
    ],
)
def test_should_mark_multi_destination_and_response_channels_unsupported(uri: str) -> None:
    assert UdpChannel.parse(uri).unsupported_reason is not None


def test_should_refuse_ipc_and_unknown_hosts() -> None:
    with pytest.raises(ChannelUriError, match="udp"):
        UdpChannel.parse("aeron:ipc")
    with pytest.raises(UnknownHostError):
        UdpChannel.parse("aeron:udp?endpoint=no-such-host.invalid:40123")


def test_should_format_source_identities_as_aeron_does() -> None:
    assert format_sockaddr(("127.0.0.1", 40123)) == "127.0.0.1:40123"
    assert format_sockaddr(("::1", 40123, 0, 0)) == "[::1]:40123"
