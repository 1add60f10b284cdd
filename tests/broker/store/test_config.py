from __future__ import annotations

from pathlib import Path

import pytest

from aeromq.broker import ConfigError
from aeromq.broker.store import FlushMode, StoreConfig


def test_should_default_to_rocketmq_values(tmp_path: Path) -> None:
    config = StoreConfig(tmp_path)
    assert config.commit_log_segment_bytes == 1 << 30
    assert config.consume_queue_entries_per_segment == 300_000
    assert config.flush_mode is FlushMode.ASYNC
    assert config.flush_interval_ms == 500
    assert config.sync_flush_timeout_ms == 5_000
    assert config.max_message_bytes == 4 << 20
    assert config.file_reserved_time_ms == 72 * 3_600_000
    assert config.max_record_bytes == 4 << 20
    assert config.commit_log_dir == tmp_path / "commitlog"


def test_should_bound_the_record_by_the_segment(tmp_path: Path) -> None:
    config = StoreConfig(tmp_path, commit_log_segment_bytes=8192)
    assert config.max_record_bytes == 8192 - 8


def test_should_accept_a_string_path(tmp_path: Path) -> None:
    assert StoreConfig(str(tmp_path)).data_dir == tmp_path  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("commit_log_segment_bytes", 100, "commit_log_segment_bytes must be >= 4096"),
        ("commit_log_segment_bytes", 1 << 31, "must be <= 2147483647"),
        ("consume_queue_entries_per_segment", 1, "must be >= 2"),
        ("flush_interval_ms", 0, "flush_interval_ms must be >= 1"),
        ("max_store_bytes", 10, "max_store_bytes must be >="),
        ("index_entries", 1, "index_entries must be >= 2"),
        ("flush_mode", "SYNC", "flush_mode must be a FlushMode"),
        ("store_host", "localhost", "store_host must be"),
        ("store_host", "1.2.3.4:99999", "store_host must be"),
        ("sync_flush_timeout_ms", 1.5, "must be an int"),
        ("index_slots", True, "must be an int"),
    ],
)
def test_should_reject_bad_values_naming_them(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        StoreConfig(tmp_path, **{field: value})  # type: ignore[arg-type]
    assert repr(value) in str(caught.value) or field == "flush_mode"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("file_mode", 0o400),
        ("file_mode", 0o1600),
        ("min_free_disk_bytes", -1),
        ("max_disk_used_percent", 0),
        ("max_disk_used_percent", 101),
        ("disk_check_interval_ms", 0),
    ],
)
def test_should_refuse_bad_file_mode_and_disk_watermarks(
    tmp_path: Path, field: str, value: int
) -> None:
    with pytest.raises(ConfigError, match=field):
        StoreConfig(data_dir=tmp_path, **{field: value})
