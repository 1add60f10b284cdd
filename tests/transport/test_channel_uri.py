from __future__ import annotations

import re
import socket
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.transport._errors import ChannelUriError, ConfigurationError, UnknownHostError
from aeromq.transport.channel_uri import ChannelUri
from aeromq.transport.channel_uri_params import (
    InterfaceAddress,
    SocketAddress,
    parse_duration_ns,
    parse_size,
)


@pytest.mark.parametrize(
    "uri",
    [
        "aeron:ipc",
        "aeron:ipc?term-length=64k|mtu=8k",
        "aeron:udp?endpoint=localhost:40123",
        "aeron:udp?endpoint=127.0.0.1:40123|interface=127.0.0.1/8|mtu=1408|ttl=4",
        "aeron:udp?endpoint=[::1]:40123|so-sndbuf=2m|so-rcvbuf=2m|rcv-wnd=128k",
        "aeron:udp?control=localhost:40124|control-mode=dynamic",
        "aeron:udp?control-mode=manual|tags=1001,1002|alias=fan-out",
        "aeron-spy:aeron:udp?endpoint=localhost:40123",
        "aeron:ipc?init-term-id=-5|term-id=-3|term-offset=4096|term-length=64k",
        "aeron:ipc?session-id=tag:77|linger=5s|sparse=true|eos=false|tether=false",
        "aeron:udp?endpoint=localhost:0|reliable=false|nak-delay=60us|future-param=anything=goes",
    ],
)
def test_should_round_trip_through_str(uri: str) -> None:
    parsed = ChannelUri.parse(uri)
    assert str(parsed) == uri
    assert ChannelUri.parse(str(parsed)) == parsed
    assert repr(parsed) == f"ChannelUri({uri!r})"


def test_should_split_prefix_media_and_params() -> None:
    uri = ChannelUri.parse("aeron-spy:aeron:udp?endpoint=localhost:40123|term-length=1m")
    assert (uri.prefix, uri.is_spy, uri.media, uri.is_udp, uri.is_ipc) == (
        "aeron-spy:",
        True,
        "udp",
        True,
        False,
    )
    assert uri.params == {"endpoint": "localhost:40123", "term-length": "1m"}
    assert uri.get("term-length") == "1m"
    assert uri.get("mtu") is None
    assert uri.get("mtu", "8k") == "8k"
    assert "endpoint" in uri
    assert uri.get_size("term-length") == 1024 * 1024


def test_should_keep_the_last_value_of_a_repeated_key() -> None:
    uri = ChannelUri.parse("aeron:ipc?mtu=8k|term-length=64k|mtu=4k")
    assert str(uri) == "aeron:ipc?term-length=64k|mtu=4k"


def test_should_keep_equals_signs_inside_values() -> None:
    assert ChannelUri.parse("aeron:ipc?alias=a=b").get("alias") == "a=b"


@pytest.mark.parametrize(
    ("text", "size"),
    [("0", 0), ("1408", 1408), ("64k", 65536), ("8K", 8192), ("2m", 2 * 1024**2), ("1G", 1024**3)],
)
def test_should_parse_sizes_with_suffixes(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize(
    ("text", "duration_ns"),
    [
        ("250", 250),
        ("250ns", 250),
        ("60us", 60_000),
        ("5ms", 5_000_000),
        ("5s", 5 * 10**9),
        ("3MS", 3_000_000),
    ],
)
def test_should_parse_durations_with_suffixes(text: str, duration_ns: int) -> None:
    assert parse_duration_ns(text) == duration_ns


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (parse_size, "64kb", "size must be digits with an optional k, m or g suffix"),
        (parse_size, "", "size must be digits"),
        (parse_duration_ns, "5 s", "duration must be digits with an optional ns, us, ms or s"),
        (parse_duration_ns, "-5s", "duration must be digits"),
    ],
)
def test_should_refuse_bad_sizes_and_durations(
    parse: Callable[[str], int], text: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(f"{message}")) as caught:
        parse(text)
    assert caught.value.value == text  # type: ignore[attr-defined]


def test_should_refuse_typed_reads_of_values_of_another_type() -> None:
    uri = ChannelUri.parse("aeron:ipc?custom=abc")
    with pytest.raises(ConfigurationError, match="key='custom' value='abc'"):
        uri.get_int("custom")
    with pytest.raises(ConfigurationError, match="value='abc'"):
        uri.get_size("custom")


def test_should_give_typed_values() -> None:
    uri = ChannelUri.parse(
        "aeron:udp?endpoint=[fe80::1]:40123|interface=192.168.1.0:7/24|control=host-a.example:9"
        "|linger=2ms|ttl=8|sparse=true|tags=5,6|session-id=tag:9"
    )
    assert uri.endpoint == SocketAddress("fe80::1", 40123)
    assert uri.interface == InterfaceAddress("192.168.1.0", 7, 24)
    assert uri.control == SocketAddress("host-a.example", 9)
    assert uri.get_duration_ns("linger") == 2_000_000
    assert uri.get_int("ttl") == 8
    assert uri.get_bool("sparse") is True
    assert (uri.channel_tag, uri.entity_tag, uri.session_id_tag) == (5, 6, 9)
    bare = ChannelUri.parse("aeron:ipc?session-id=12|interface=eth0-host")
    assert (bare.channel_tag, bare.entity_tag, bare.session_id_tag, bare.endpoint) == (
        None,
        None,
        None,
        None,
    )
    assert bare.interface == InterfaceAddress("eth0-host", 0, None)
    assert bare.get_size("mtu") is None
    assert bare.get_bool("eos") is None


BAD_URIS = [
    ("udp:aeron?endpoint=localhost:1", None, None, "must start with 'aeron:'"),
    ("aeron-spy:udp?endpoint=localhost:1", None, None, "must start with 'aeron:'"),
    ("aeron:ud:p", None, None, "':' in the media"),
    ("aeron:tcp?endpoint=localhost:1", None, None, "media must be ipc or udp"),
    ("aeron:ipc?", None, None, "parameter without '='"),
    ("aeron:ipc?mtu=8k|", None, None, "parameter without '='"),
    ("aeron:ipc?mtu", None, None, "parameter without '='"),
    ("aeron:ipc?=8k", None, None, "parameter without a key"),
    ("aeron-spy:aeron:ipc", None, None, "a spy channel must be udp"),
    ("aeron:udp", None, None, "needs an endpoint, a control address, a tag or a control-mode"),
    ("aeron:udp?mtu=8k", None, None, "needs an endpoint"),
    ("aeron:udp?endpoint=localhost", "endpoint", "localhost", "the port is missing"),
    ("aeron:udp?endpoint=:40123", "endpoint", ":40123", "needs a host"),
    ("aeron:udp?endpoint=local host:1", "endpoint", "local host:1", "not a name or an address"),
    ("aeron:udp?endpoint=localhost:65536", "endpoint", "localhost:65536", "not 0..65535"),
    ("aeron:udp?endpoint=localhost:-1", "endpoint", "localhost:-1", "not 0..65535"),
    (
        "aeron:udp?endpoint=300.1.1.1:1",
        "endpoint",
        "300.1.1.1:1",
        "IPv4 address that does not parse",
    ),
    ("aeron:udp?endpoint=::1:40123", "endpoint", "::1:40123", "not in brackets"),
    ("aeron:udp?endpoint=[::1:40123", "endpoint", "[::1:40123", "without its closing"),
    ("aeron:udp?endpoint=[::g]:1", "endpoint", "[::g]:1", "IPv6 address that does not parse"),
    ("aeron:udp?endpoint=[::1]40123", "endpoint", "[::1]40123", "must be [ipv6]:port"),
    ("aeron:udp?control=localhost", "control", "localhost", "the port is missing"),
    ("aeron:udp?endpoint=h:1|interface=10.0.0.0/33", "interface", "10.0.0.0/33", "from 0 to 32"),
    ("aeron:udp?endpoint=h:1|interface=[::1]/129", "interface", "[::1]/129", "from 0 to 128"),
    (
        "aeron:udp?endpoint=h:1|interface=10.0.0.1/x",
        "interface",
        "10.0.0.1/x",
        "must be an integer",
    ),
    ("aeron:ipc?mtu=1400", "mtu", "1400", "multiple of 32 above 32 and at most 65504"),
    ("aeron:ipc?mtu=32", "mtu", "32", "multiple of 32"),
    ("aeron:ipc?mtu=65536", "mtu", "65536", "at most 65504"),
    ("aeron:ipc?mtu=8kb", "mtu", "8kb", "digits with an optional k, m or g suffix"),
    ("aeron:ipc?mtu=-64", "mtu", "-64", "digits with an optional k, m or g suffix"),
    ("aeron:ipc?term-length=3", "term-length", "3", "power of two from 64 KiB to 1 GiB"),
    ("aeron:ipc?term-length=32k", "term-length", "32k", "power of two from 64 KiB to 1 GiB"),
    ("aeron:ipc?term-length=2g", "term-length", "2g", "power of two from 64 KiB to 1 GiB"),
    ("aeron:ipc?term-length=96k", "term-length", "96k", "power of two"),
    ("aeron:ipc?session-id=2147483648", "session-id", "2147483648", "from -2147483648 to"),
    ("aeron:ipc?session-id=abc", "session-id", "abc", "must be an integer"),
    ("aeron:ipc?session-id=tag:x", "session-id", "tag:x", "must be an integer"),
    ("aeron:ipc?so-sndbuf=2g", "so-sndbuf", "2g", "at most 2147483647"),
    ("aeron:ipc?so-rcvbuf=lots", "so-rcvbuf", "lots", "optional k, m or g suffix"),
    ("aeron:ipc?rcv-wnd=0", "rcv-wnd", "0", "from 1 to 2147483647"),
    ("aeron:ipc?linger=5 s", "linger", "5 s", "optional ns, us, ms or s suffix"),
    ("aeron:ipc?linger=5min", "linger", "5min", "optional ns, us, ms or s suffix"),
    ("aeron:ipc?sparse=yes", "sparse", "yes", "must be true or false"),
    ("aeron:ipc?eos=True", "eos", "True", "must be true or false"),
    ("aeron:ipc?tether=1", "tether", "1", "must be true or false"),
    ("aeron:udp?endpoint=h:1|reliable=no", "reliable", "no", "must be true or false"),
    ("aeron:udp?endpoint=h:1|ttl=256", "ttl", "256", "from 0 to 255"),
    ("aeron:udp?control-mode=auto", "control-mode", "auto", "manual, dynamic or response"),
    ("aeron:ipc?tags=1,2,3", "tags", "1,2,3", "more than two tags"),
    ("aeron:ipc?tags=a", "tags", "a", "must be an integer"),
    ("aeron:ipc?init-term-id=x|term-id=1|term-offset=0", "init-term-id", "x", "an integer"),
    ("aeron:ipc?init-term-id=1|term-id=1|term-offset=33", "term-offset", "33", "multiple of 32"),
    ("aeron:ipc?init-term-id=1|term-id=1|term-offset=-32", "term-offset", "-32", "from 0 to"),
    ("aeron:ipc?init-term-id=1|term-offset=0", None, None, "go together"),
    ("aeron:ipc?init-term-id=5|term-id=4|term-offset=0", "term-id", "4", "behind init-term-id"),
    (
        "aeron:ipc?init-term-id=0|term-id=0|term-offset=131072|term-length=64k",
        "term-offset",
        "131072",
        "past the end of the term",
    ),
    ("aeron:ipc?response-correlation-id=proto", "response-correlation-id", "proto", "an integer"),
    ("aeron:ipc?gtag=9223372036854775808", "gtag", "9223372036854775808", "from -9223"),
    ("aeron:ipc?stream-id=1.5", "stream-id", "1.5", "must be an integer"),
]


@pytest.mark.parametrize(("uri", "key", "value", "message"), BAD_URIS)
def test_should_refuse_a_bad_uri_naming_uri_key_and_value(
    uri: str, key: str | None, value: str | None, message: str
) -> None:
    with pytest.raises(ChannelUriError, match=re.escape(message)) as caught:
        ChannelUri.parse(uri)
    error = caught.value
    assert isinstance(error, ConfigurationError)
    assert error.uri == uri  # type: ignore[attr-defined]
    assert f"uri={uri!r}" in str(error)
    if key is not None:
        assert (error.key, error.value) == (key, value)  # type: ignore[attr-defined]
        assert f"key={key!r} value={value!r}" in str(error)


def test_should_accept_the_term_id_set_across_the_int32_wrap() -> None:
    uri = ChannelUri.parse("aeron:ipc?init-term-id=2147483647|term-id=-2147483648|term-offset=0")
    assert uri.get_int("term-id") == -(2**31)


def test_should_check_what_is_put_and_keep_the_uri_valid() -> None:
    uri = ChannelUri.parse("aeron:udp?endpoint=localhost:40123")
    assert uri.put("mtu", "8k") is None
    assert uri.put("mtu", "4k") == "8k"
    with pytest.raises(ChannelUriError, match="key='mtu' value='1400'"):
        uri.put("mtu", "1400")
    with pytest.raises(ChannelUriError, match="go together"):
        uri.put("term-id", "5")
    with pytest.raises(ChannelUriError, match=re.escape("values without '|'")):
        uri.put("alias", "a|b")
    with pytest.raises(ChannelUriError, match="needs an endpoint"):
        uri.remove("endpoint")
    assert str(uri) == "aeron:udp?endpoint=localhost:40123|mtu=4k"
    assert uri.remove("mtu") == "4k"
    assert uri.remove("mtu") is None
    assert str(uri) == "aeron:udp?endpoint=localhost:40123"


def test_should_build_from_parts_with_the_same_checks() -> None:
    uri = ChannelUri("udp", {"endpoint": "localhost:40123"}, spy=True)
    assert str(uri) == "aeron-spy:aeron:udp?endpoint=localhost:40123"
    assert uri == ChannelUri.parse(str(uri))
    assert uri != ChannelUri("udp", {"endpoint": "localhost:40124"}, spy=True)
    assert uri != "aeron-spy:aeron:udp?endpoint=localhost:40123"
    with pytest.raises(ChannelUriError, match="key='term-length' value='1k'"):
        ChannelUri("ipc", {"term-length": "1k"})
    with pytest.raises(ChannelUriError, match="keys must be non-empty"):
        ChannelUri("ipc", {"": "x"})


def test_should_resolve_endpoints_to_socket_addresses() -> None:
    literal = ChannelUri.parse("aeron:udp?endpoint=127.0.0.1:40123").resolve_endpoint()
    assert literal == (socket.AF_INET, ("127.0.0.1", 40123))
    named = ChannelUri.parse("aeron:udp?endpoint=localhost:40123").resolve_endpoint()
    assert named is not None and named[1][1] == 40123
    assert ChannelUri.parse("aeron:udp?control-mode=manual").resolve_endpoint() is None


def test_should_raise_unknown_host_naming_uri_key_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_such_host(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", no_such_host)
    uri = ChannelUri.parse("aeron:udp?endpoint=nowhere.invalid:40123")  # parsing does no I/O
    with pytest.raises(UnknownHostError) as caught:
        uri.resolve_endpoint()
    assert isinstance(caught.value, ChannelUriError)
    assert str(caught.value) == (
        "could not resolve host: uri='aeron:udp?endpoint=nowhere.invalid:40123' "
        "key='endpoint' host='nowhere.invalid' reason='[Errno -2] Name or service not known'"
    )
    with pytest.raises(UnknownHostError, match="key='endpoint'"):
        uri.canonical_form()


def test_should_give_the_same_canonical_form_to_the_same_udp_address() -> None:
    by_name = ChannelUri.parse("aeron:udp?endpoint=localhost:40123|mtu=8k").canonical_form()
    by_address = ChannelUri.parse("aeron:udp?endpoint=127.0.0.1:40123").canonical_form()
    assert by_name == by_address == "UDP-00000000-0-7f000001-40123"
    other_port = ChannelUri.parse("aeron:udp?endpoint=127.0.0.1:40124").canonical_form()
    assert other_port != by_address


def test_should_use_control_or_interface_as_the_local_address() -> None:
    control = ChannelUri.parse("aeron:udp?endpoint=127.0.0.1:40123|control=127.0.0.2:40124")
    assert control.canonical_form() == "UDP-7f000002-40124-7f000001-40123"
    interface = ChannelUri.parse("aeron:udp?endpoint=127.0.0.1:40123|interface=127.0.0.1:5/8")
    assert interface.canonical_form() == "UDP-7f000001-5-7f000001-40123"
    ipv6 = ChannelUri.parse("aeron:udp?endpoint=[::1]:40123")
    assert ipv6.canonical_form() == "UDP-00000000-0-" + "0" * 31 + "1-40123"
    tagged = ChannelUri.parse("aeron:udp?tags=7")
    assert tagged.canonical_form() == "UDP-00000000-0-00000000-0"


def test_should_make_channels_without_an_address_or_tag_unique() -> None:
    first = ChannelUri.parse("aeron:udp?control-mode=manual").canonical_form()
    second = ChannelUri.parse("aeron:udp?control-mode=manual").canonical_form()
    assert first != second
    assert first.startswith("UDP-00000000-0-00000000-0-")


def test_should_give_ipc_one_canonical_form() -> None:
    assert ChannelUri.parse("aeron:ipc?term-length=64k|alias=x").canonical_form() == "aeron:ipc"


KEYS = st.sampled_from(["alias", "custom-key", "x"])
VALUES = st.text(
    alphabet=st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="|"),
    max_size=12,
)
KNOWN = st.fixed_dictionaries(
    {},
    optional={
        "mtu": st.sampled_from(["64", "1408", "8k", "65504"]),
        "term-length": st.sampled_from(["64k", "128k", "1m", "16m", "1g"]),
        "session-id": st.integers(-(2**31), 2**31 - 1).map(str),
        "linger": st.sampled_from(["0", "5s", "100ms", "7us", "9ns"]),
        "sparse": st.sampled_from(["true", "false"]),
        "so-sndbuf": st.sampled_from(["0", "64k", "2m"]),
        "tags": st.sampled_from(["1", "1,2", ",2"]),
    },
)


@settings(max_examples=200, deadline=None)
@given(
    media=st.sampled_from(["ipc", "udp"]),
    known=KNOWN,
    unknown=st.dictionaries(KEYS, VALUES, max_size=3),
    port=st.integers(0, 65535),
)
def test_should_round_trip_generated_uris(
    media: str, known: dict[str, str], unknown: dict[str, str], port: int
) -> None:
    params = {**unknown, **known}
    if media == "udp":
        params["endpoint"] = f"127.0.0.1:{port}"
    uri = ChannelUri(media, params)
    text = str(uri)
    assert ChannelUri.parse(text) == uri
    assert str(ChannelUri.parse(text)) == text


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.text(max_size=60),
        st.builds(
            lambda media, query: f"aeron:{media}?{query}",
            st.sampled_from(["ipc", "udp", "x"]),
            st.text(alphabet="=|:[]/,-.abcdefghimnoprstuw0123456789kKgG", max_size=60),
        ),
    )
)
def test_should_raise_only_channel_uri_error_on_random_text(text: str) -> None:
    try:
        uri = ChannelUri.parse(text)
    except ChannelUriError:
        return
    assert ChannelUri.parse(str(uri)) == uri
