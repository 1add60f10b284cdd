"""``AeronContext``: Aeron's defaults, the directory rule, validation."""

from __future__ import annotations

import dataclasses

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.client import AeronContext
from aeromq.transport.client.context import default_aeron_dir


def test_should_default_to_aerons_values() -> None:
    ctx = AeronContext()
    assert ctx.driver_timeout_ms == 10_000
    assert ctx.keep_alive_interval_ns == 500_000_000
    assert ctx.resource_linger_duration_ns == 3_000_000_000
    assert ctx.idle_sleep_duration_ns == 16_000_000
    assert not ctx.use_conductor_agent_invoker
    assert ctx.available_image_handler is None


def test_should_take_the_directory_from_aeron_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_DIR", "/somewhere/else")
    assert AeronContext().aeron_dir == "/somewhere/else"


def test_should_default_the_directory_under_dev_shm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AERON_DIR", raising=False)
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    assert default_aeron_dir() in ("/dev/shm/aeron-alice", "/tmp/aeron-alice")


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("driver_timeout_ms", 0, "positive"),
        ("keep_alive_interval_ns", -1, "positive"),
        ("resource_linger_duration_ns", -5, ">= 0"),
        ("inter_service_timeout_ns", 1_000, "more than keep_alive_interval_ns"),
        ("aeron_dir", "", "non-empty"),
        ("error_handler", 42, "callable"),
        ("idle_sleep_duration_ns", True, "positive"),
    ],
)
def test_should_reject_a_bad_value_naming_field_value_and_rule(
    field: str, value: object, rule: str
) -> None:
    with pytest.raises(ConfigurationError, match=rule) as info:
        AeronContext(**{field: value})  # type: ignore[arg-type]
    assert info.value.field == field
    assert info.value.value == value


def test_should_derive_a_context_with_replace() -> None:
    ctx = dataclasses.replace(AeronContext(aeron_dir="/x"), driver_timeout_ms=500)
    assert (ctx.aeron_dir, ctx.driver_timeout_ms) == ("/x", 500)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.driver_timeout_ms = 1  # type: ignore[misc]
