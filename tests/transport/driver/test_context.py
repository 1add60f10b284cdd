"""MediaDriverContext: Aeron's defaults, validation naming field, value and rule, environment."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.driver import (
    MediaDriverContext,
    ThreadingMode,
    allow_termination,
    default_aeron_dir,
    deny_termination,
)
from aeromq.transport.driver.context import ENV_VARS

MIB = 1024 * 1024


def test_should_have_aerons_defaults() -> None:
    context = MediaDriverContext(aeron_dir="/dev/shm/x")
    assert context.term_buffer_length == 16 * MIB
    assert context.ipc_term_buffer_length == 64 * MIB
    assert context.mtu_length == 1408
    assert context.ipc_mtu_length == 1408
    assert context.file_page_size == 4096
    assert context.publication_term_window_length == 0
    assert context.ipc_publication_term_window_length == 0
    assert context.client_liveness_timeout_ns == 10_000_000_000
    assert context.publication_unblock_timeout_ns == 15_000_000_000
    assert context.publication_linger_timeout_ns == 5_000_000_000
    assert context.timer_interval_ns == 1_000_000_000
    assert context.counter_free_to_reuse_timeout_ns == 1_000_000_000
    assert context.driver_timeout_ms == 10_000
    assert context.to_driver_buffer_length == MIB + 768
    assert context.to_clients_buffer_length == MIB + 128
    assert context.counters_values_buffer_length == MIB
    assert context.counters_metadata_buffer_length == 4 * MIB
    assert context.error_buffer_length == MIB
    assert context.threading_mode is ThreadingMode.DEDICATED
    assert context.termination_validator is deny_termination
    assert context.counter_free_to_reuse_timeout_ms == 1000


def test_should_default_aeron_dir_under_dev_shm_named_for_the_user(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AERON_DIR", raising=False)
    path = default_aeron_dir()
    assert os.path.basename(path).startswith("aeron-")
    if os.path.isdir("/dev/shm"):
        assert path.startswith("/dev/shm/")


def test_should_take_aeron_dir_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AERON_DIR", "/tmp/elsewhere")
    assert MediaDriverContext().aeron_dir == "/tmp/elsewhere"


@pytest.mark.parametrize(
    ("field", "value", "rule"),
    [
        ("term_buffer_length", 1000, "term_buffer_length is invalid"),
        ("ipc_term_buffer_length", 3 * 65536, "ipc_term_buffer_length is invalid"),
        ("mtu_length", 1000, "multiple of 32"),
        ("ipc_mtu_length", 32, "must be > 32"),
        ("mtu_length", 65536, "<= 65504"),
        ("file_page_size", 1000, "file_page_size is invalid"),
        ("client_liveness_timeout_ns", 0, "must be positive"),
        ("timer_interval_ns", -1, "must be positive"),
        ("publication_linger_timeout_ns", -1, "must not be negative"),
        ("ipc_publication_term_window_length", -4, "must not be negative"),
        ("to_driver_buffer_length", MIB, "power of two"),
        ("to_clients_buffer_length", MIB + 768, "power of two"),
        ("counters_values_buffer_length", 1000, "multiple of 128"),
        ("error_buffer_length", 100, ">= 1024"),
        ("conductor_idle_strategy", "snooze", "conductor_idle_strategy is invalid"),
        ("aeron_dir", "", "must not be empty"),
    ],
)
def test_should_refuse_a_bad_value_naming_field_value_and_rule(
    field: str, value: object, rule: str
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        MediaDriverContext(**{"aeron_dir": "/dev/shm/x", field: value})  # type: ignore[arg-type]
    message = str(raised.value)
    assert rule in message
    assert field in message
    assert repr(value) in message


def test_should_require_unblock_timeout_longer_than_client_liveness() -> None:
    with pytest.raises(ConfigurationError, match="publication_unblock_timeout_ns must be greater"):
        MediaDriverContext(
            aeron_dir="/dev/shm/x",
            client_liveness_timeout_ns=2_000_000_000,
            publication_unblock_timeout_ns=2_000_000_000,
        )


def test_should_be_frozen_and_revalidated_on_replace() -> None:
    context = MediaDriverContext(aeron_dir="/dev/shm/x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.mtu_length = 4096  # type: ignore[misc]
    assert dataclasses.replace(context, mtu_length=4096).mtu_length == 4096
    with pytest.raises(ConfigurationError):
        dataclasses.replace(context, mtu_length=4097)


def test_should_read_aeron_environment_variables_with_aeron_value_syntax() -> None:
    env = {
        "AERON_DIR": "/dev/shm/from-env",
        "AERON_TERM_BUFFER_LENGTH": "64k",
        "AERON_IPC_TERM_BUFFER_LENGTH": "1m",
        "AERON_MTU_LENGTH": "8k",
        "AERON_CLIENT_LIVENESS_TIMEOUT": "2s",
        "AERON_PUBLICATION_UNBLOCK_TIMEOUT": "3000ms",
        "AERON_PUBLICATION_LINGER_TIMEOUT": "250000000",
        "AERON_DRIVER_TIMEOUT": "500ms",
        "AERON_DIR_DELETE_ON_SHUTDOWN": "true",
        "AERON_TERM_BUFFER_SPARSE_FILE": "1",
        "AERON_THREADING_MODE": "shared",
        "AERON_DRIVER_TERMINATION_VALIDATOR": "allow",
    }
    context = MediaDriverContext.from_env(env)
    assert context.aeron_dir == "/dev/shm/from-env"
    assert context.term_buffer_length == 65536
    assert context.ipc_term_buffer_length == MIB
    assert context.mtu_length == 8192
    assert context.client_liveness_timeout_ns == 2_000_000_000
    assert context.publication_unblock_timeout_ns == 3_000_000_000
    assert context.publication_linger_timeout_ns == 250_000_000
    assert context.driver_timeout_ms == 500
    assert context.dir_delete_on_shutdown is True
    assert context.term_buffer_sparse_file is True
    assert context.threading_mode is ThreadingMode.SHARED
    assert context.termination_validator is allow_termination


def test_should_let_explicit_overrides_win_over_the_environment() -> None:
    env = {"AERON_DIR": "/dev/shm/from-env", "AERON_MTU_LENGTH": "8k"}
    context = MediaDriverContext.from_env(env, mtu_length=4096)
    assert context.mtu_length == 4096
    assert context.aeron_dir == "/dev/shm/from-env"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("AERON_TERM_BUFFER_LENGTH", "lots"),
        ("AERON_CLIENT_LIVENESS_TIMEOUT", "10 minutes"),
        ("AERON_DIR_DELETE_ON_START", "maybe"),
        ("AERON_THREADING_MODE", "turbo"),
        ("AERON_DRIVER_TERMINATION_VALIDATOR", "sometimes"),
        ("AERON_PUBLICATION_RESERVED_SESSION_ID_LOW", "99999999999"),
    ],
)
def test_should_refuse_a_bad_environment_value_naming_the_variable(name: str, text: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        MediaDriverContext.from_env({"AERON_DIR": "/dev/shm/x", name: text})
    assert name in str(raised.value)
    assert text in str(raised.value)


def test_should_map_every_environment_variable_to_a_field() -> None:
    fields = {field.name for field in dataclasses.fields(MediaDriverContext)}
    assert {field for field, _ in ENV_VARS.values()} <= fields
    assert all(name.startswith("AERON_") for name in ENV_VARS)


def test_should_derive_paths_and_the_idle_strategy() -> None:
    context = MediaDriverContext(aeron_dir="/dev/shm/d", shared_idle_strategy="sleep-ms:2")
    assert context.cnc_file_path() == "/dev/shm/d/cnc.dat"
    assert context.publications_dir() == "/dev/shm/d/publications"
    assert context.images_dir() == "/dev/shm/d/images"
    assert context.new_conductor_idle_strategy().alias == "backoff"
    shared = dataclasses.replace(context, threading_mode=ThreadingMode.SHARED)
    assert shared.new_conductor_idle_strategy().alias == "sleep-ns"


def test_should_read_the_driver_timeout_as_milliseconds_like_aeron() -> None:
    env = {"AERON_DIR": "/dev/shm/x", "AERON_DRIVER_TIMEOUT": "2500"}
    assert MediaDriverContext.from_env(env).driver_timeout_ms == 2500
    env["AERON_DRIVER_TIMEOUT"] = "3s"
    assert MediaDriverContext.from_env(env).driver_timeout_ms == 3000


@pytest.mark.parametrize("file_mode", [0o644 & ~0o600, 0o400, 0o1777, -1])
def test_should_refuse_a_file_mode_the_owner_cannot_read_and_write(
    tmp_path: Path, file_mode: int
) -> None:
    with pytest.raises(ConfigurationError, match="file_mode"):
        MediaDriverContext(aeron_dir=str(tmp_path), file_mode=file_mode)
