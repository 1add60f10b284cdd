"""BrokerConfig: defaults, precedence of file < environment < arguments, and clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from aeromq.broker import ConfigError
from aeromq.broker.config import (
    DEFAULT_SESSION_IDLE_STRATEGY,
    BrokerConfig,
    BrokerConfigError,
    add_arguments,
    describe_default,
)
from aeromq.broker.store import FlushMode
from aeromq.common import DEFAULT_GC_THRESHOLD


def test_should_work_with_no_arguments() -> None:
    config = BrokerConfig.load([], environ={})
    assert config == BrokerConfig()
    assert config.grpc_address == "127.0.0.1:8081"
    assert config.aeron_dir is None
    assert config.auto_create_topic is False
    assert config.max_message_size == 4 * 1024 * 1024
    assert config.flush_mode is FlushMode.ASYNC
    assert config.ingress_ipc_channel == "aeron:ipc"
    assert config.ingress_udp_channel == "aeron:udp?endpoint=127.0.0.1:40456"
    assert config.session_idle_strategy == DEFAULT_SESSION_IDLE_STRATEGY
    assert config.driver_threading_mode == "SHARED"
    assert config.gc_freeze is True
    assert config.gc_threshold_numbers == DEFAULT_GC_THRESHOLD


def test_should_read_the_garbage_collector_settings(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text('gc_threshold = "50000,10,10"\n')
    environ = {"AEROMQ_BROKER_GC_FREEZE": "off"}
    config = BrokerConfig.load(["--config", str(path)], environ=environ)
    assert config.gc_freeze is False
    assert config.gc_threshold_numbers == (50_000, 10, 10)
    assert BrokerConfig.load(["--gc-threshold", "2000"], environ={}).gc_threshold_numbers == (
        2_000,
        *DEFAULT_GC_THRESHOLD[1:],
    )
    with pytest.raises(BrokerConfigError) as info:
        BrokerConfig.load([], environ={"AEROMQ_BROKER_GC_THRESHOLD": "0,10,10"})
    assert info.value.key == "gc_threshold"
    assert info.value.source == "environment AEROMQ_BROKER_GC_THRESHOLD"


def test_should_apply_file_then_environment_then_arguments(tmp_path: Path) -> None:
    path = tmp_path / "aeromq.broker.toml"
    path.write_text(
        'broker_name = "from-file"\ncluster_name = "c-file"\ngrpc_port = 1111\n'
        'flush_mode = "SYNC"\ndefault_queue_count = 4\n'
    )
    environ = {
        "AEROMQ_BROKER_CONFIG": str(path),
        "AEROMQ_BROKER_CLUSTER_NAME": "c-env",
        "AEROMQ_BROKER_GRPC_PORT": "2222",
        "UNRELATED": "x",
    }
    config = BrokerConfig.load(["--grpc-port", "0"], environ=environ)
    assert config.broker_name == "from-file"  # file only
    assert config.flush_mode is FlushMode.SYNC
    assert config.default_queue_count == 4
    assert config.cluster_name == "c-env"  # environment over file
    assert config.grpc_port == 0  # argument over environment


def test_should_read_a_broker_table_and_the_config_argument(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text('[broker]\nbroker_name = "tabled"\nauto_create_topic = true\n')
    config = BrokerConfig.load(["--config", str(path)], environ={})
    assert config.broker_name == "tabled"
    assert config.auto_create_topic is True


def test_should_parse_typed_strings() -> None:
    config = BrokerConfig.load(
        [
            "--max-message-size",
            "1MiB",
            "--flush-mode",
            "sync",
            "--auto-create-topic",
            "yes",
            "--ingress-udp-endpoint",
            "none",
            "--aeron-dir",
            "/dev/shm/x",
            "--flush-interval-ms",
            "1_000",
        ],
        environ={},
    )
    assert config.max_message_size == 1 << 20
    assert config.flush_mode is FlushMode.SYNC
    assert config.auto_create_topic is True
    assert config.ingress_udp_endpoint is None
    assert config.ingress_udp_channel is None
    assert config.aeron_dir == Path("/dev/shm/x")
    assert config.flush_interval_ms == 1000


def test_should_name_key_value_rule_and_source_of_a_bad_value() -> None:
    with pytest.raises(BrokerConfigError) as info:
        BrokerConfig.load([], environ={"AEROMQ_BROKER_GRPC_PORT": "70000"})
    error = info.value
    assert error.key == "grpc_port"
    assert error.value == 70000
    assert error.rule == "0..65535"
    assert error.source == "environment AEROMQ_BROKER_GRPC_PORT"
    assert "key='grpc_port'" in str(error)
    assert isinstance(error, ConfigError)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["--grpc-port", "abc"], "grpc_port"),
        (["--broker-name", "bad name"], "broker_name"),
        (["--flush-mode", "SOMETIMES"], "flush_mode"),
        (["--namesrv-address", "nohost"], "namesrv_address"),
        (["--ingress-ipc-channel", "aeron:udp?endpoint=x:1"], "ingress_ipc_channel"),
        (["--default-queue-count", "0"], "default_queue_count"),
        (["--max-message-size", "100"], "max_message_size"),
        (["--session-timeout-ms", "1"], "session_timeout_ms"),
        (["--flush-index-interval-ms", "0"], "flush_index_interval_ms"),
        (["--auto-create-topic", "maybe"], "auto_create_topic"),
        (["--session-idle-strategy", "backoff:1,2"], "session_idle_strategy"),
        (["--session-idle-strategy", "snooze"], "session_idle_strategy"),
        (["--driver-threading-mode", "INVOKER"], "driver_threading_mode"),
        (["--driver-threading-mode", "shared-ish"], "driver_threading_mode"),
        (["--gc-threshold", "700,10,10,10"], "gc_threshold"),
        (["--gc-threshold", "none"], "gc_threshold"),
        (["--gc-freeze", "sometimes"], "gc_freeze"),
        (["--commit-log-segment-bytes", "65536", "--max-message-size", "1MiB"], "max_message_size"),
    ],
)
def test_should_refuse_bad_values(argv: list[str], key: str) -> None:
    with pytest.raises(BrokerConfigError) as info:
        BrokerConfig.load(argv, environ={})
    assert info.value.key == key
    assert info.value.source.startswith("argument --")


def test_should_refuse_unknown_keys_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "b.toml"
    path.write_text("grpc_prot = 1\n")
    with pytest.raises(BrokerConfigError, match="unknown broker config key") as info:
        BrokerConfig.load(["--config", str(path)], environ={})
    assert info.value.key == "grpc_prot"
    with pytest.raises(BrokerConfigError, match="unknown broker environment variable"):
        BrokerConfig.load([], environ={"AEROMQ_BROKER_GRPC_PROT": "1"})
    with pytest.raises(BrokerConfigError, match="unknown broker arguments"):
        BrokerConfig.load(["--grpc-prot", "1"], environ={})


def test_should_refuse_a_missing_or_malformed_file(tmp_path: Path) -> None:
    with pytest.raises(BrokerConfigError, match="cannot read"):
        BrokerConfig.load(["--config", str(tmp_path / "absent.toml")], environ={})
    path = tmp_path / "bad.toml"
    path.write_text("broker_name = \n")
    with pytest.raises(BrokerConfigError, match="not valid TOML"):
        BrokerConfig.load(["--config", str(path)], environ={})


def test_should_refuse_a_bad_value_in_the_constructor() -> None:
    with pytest.raises(BrokerConfigError) as info:
        BrokerConfig(grpc_port=-1)
    assert info.value.key == "grpc_port"


def test_should_build_the_store_config(tmp_path: Path) -> None:
    config = BrokerConfig(
        data_dir=tmp_path,
        grpc_port=9999,
        flush_mode=FlushMode.SYNC,
        commit_log_segment_bytes=1 << 20,
        max_message_size=65536,
        index_slots=31,
        index_entries=64,
        flush_index_interval_ms=2_500,
    )
    store = config.to_store_config()
    assert store.data_dir == tmp_path
    assert store.flush_index_interval_ms == 2_500
    assert store.flush_mode is FlushMode.SYNC
    assert store.commit_log_segment_bytes == 1 << 20
    assert store.max_message_bytes == 65536 + 336 + 28 + 32767  # a header, a record's framing
    assert store.store_host == "127.0.0.1:9999"
    assert config.to_store_config("10.0.0.1:1").store_host == "10.0.0.1:1"


def test_should_let_a_command_add_its_own_options() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verbose", action="store_true")
    add_arguments(parser)
    namespace = parser.parse_args(["--verbose", "--broker-name", "cmd"])
    config = BrokerConfig.from_sources(namespace, environ={})
    assert namespace.verbose is True
    assert config.broker_name == "cmd"


def test_should_let_the_store_hold_a_batch_of_the_largest_body_clients_may_send() -> None:
    from aeromq.common import encode_batch

    config = BrokerConfig(max_message_size=70_000)
    store = config.to_store_config()
    properties = b"k\x01" + b"v" * (32767 - 3) + b"\x02"  # RocketMQ's longest property string
    largest = encode_batch(b"T" * 255, [b"x" * config.max_message_size], None, [properties])
    assert store.max_message_bytes >= len(largest) > config.max_message_size


def test_should_read_the_file_mode_as_octal_and_pass_it_and_the_watermark_to_the_store(
    tmp_path: Path,
) -> None:
    config = BrokerConfig.load(
        ["--file-mode", "0640", "--min-free-disk-bytes", "8MiB", "--max-disk-used-percent", "95"],
        environ={},
    )
    store = config.to_store_config()
    assert (store.file_mode, store.min_free_disk_bytes, store.max_disk_used_percent) == (
        0o640,
        8 << 20,
        95,
    )
    assert describe_default("file_mode") == "0o600"
    with pytest.raises(BrokerConfigError, match="file_mode"):
        BrokerConfig.load(["--file-mode", "0400"], environ={})
