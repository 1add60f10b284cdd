"""Aeron's value syntax for sizes, durations, booleans and int32, and duration labels."""

from __future__ import annotations

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.driver._values import (
    format_duration_ns,
    parse_bool,
    parse_duration_ns,
    parse_int32,
    parse_size,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("0", 0), ("4096", 4096), ("64k", 65536), ("64K", 65536), ("1m", 1 << 20), ("2g", 2 << 30)],
)
def test_should_parse_sizes_with_binary_suffixes(text: str, expected: int) -> None:
    assert parse_size("f", text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("100", 100), ("100ns", 100), ("7us", 7000), ("5ms", 5_000_000), ("10s", 10_000_000_000)],
)
def test_should_parse_durations_with_units_bare_numbers_being_ns(text: str, expected: int) -> None:
    assert parse_duration_ns("f", text) == expected


@pytest.mark.parametrize("text", ["", "k", "-1", "1.5m", "12x"])
def test_should_refuse_a_bad_size_naming_field_and_text(text: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        parse_size("term-length", text)
    assert "term-length" in str(raised.value)


@pytest.mark.parametrize("text", ["", "s", "1.5s", "10 s", "1h"])
def test_should_refuse_a_bad_duration(text: str) -> None:
    with pytest.raises(ConfigurationError, match="duration"):
        parse_duration_ns("linger", text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("ON", True), ("yes", True), ("1", True), ("false", False), ("0", False)],
)
def test_should_parse_booleans(text: str, expected: bool) -> None:
    assert parse_bool("f", text) is expected


def test_should_refuse_a_bad_boolean() -> None:
    with pytest.raises(ConfigurationError, match="boolean"):
        parse_bool("sparse", "perhaps")


def test_should_parse_int32_and_refuse_out_of_range() -> None:
    assert parse_int32("f", "-2147483648") == -(2**31)
    assert parse_int32("f", "0x10") == 16
    with pytest.raises(ConfigurationError, match="int32"):
        parse_int32("f", "2147483648")
    with pytest.raises(ConfigurationError, match="integer"):
        parse_int32("f", "ten")


@pytest.mark.parametrize(
    ("duration_ns", "text"),
    [(100_000_000, "100ms"), (5_000_000_000, "5s"), (1_500_000, "1500us"), (999, "999ns")],
)
def test_should_format_durations_in_the_largest_exact_unit(duration_ns: int, text: str) -> None:
    assert format_duration_ns(duration_ns) == text
