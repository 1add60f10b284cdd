"""The text and JSON formats of ``stat`` (pure)."""

from __future__ import annotations

import json
import time
from datetime import UTC, timedelta, timezone

from aeromq.transport.cnc import CNC_VERSION
from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.driver.stream_counters import stream_counter_key
from aeromq.transport.tools import CounterSnapshot
from aeromq.transport.tools.stat_format import (
    RULE,
    counter_json,
    error_json,
    format_counter,
    format_counters,
    format_error,
    format_errors,
    format_header,
    format_timestamp_ms,
)


def counter(counter_id: int, value: int, label: str = "x") -> CounterSnapshot:
    return CounterSnapshot(counter_id, 0, value, label, bytes(MAX_KEY_LENGTH), 0, 0, 0)


def test_should_format_a_counter_as_aeron_stat_does() -> None:
    assert format_counter(counter(3, 1_234_567, "Bytes sent")) == (
        "  3:            1,234,567 - Bytes sent"
    )
    assert format_counter(counter(1234, -1)) == "1234:                   -1 - x"
    assert format_counter(counter(0, 2**63 - 1)) == "  0: 9,223,372,036,854,775,807 - x"


def test_should_format_the_header_with_version_pid_and_heartbeat_age() -> None:
    now_ms = 1_700_000_000_000
    clock = time.strftime("%H:%M:%S", time.localtime(now_ms // 1000))
    assert format_header(CNC_VERSION, 99, now_ms - 250, now_ms) == (
        f"{clock} - Aeron Stat (CnC v0.2.0), pid 99, heartbeat age 250ms"
    )
    assert format_header(CNC_VERSION, 99, -1, now_ms).endswith("pid 99, no driver heartbeat")
    # A heartbeat the driver stamped after now_ms was read: age 0, never negative.
    assert format_header(CNC_VERSION, 99, now_ms + 1, now_ms).endswith("heartbeat age 0ms")


def test_should_frame_a_snapshot_with_the_rule_and_dashes() -> None:
    assert format_counters("HEAD", [counter(1, 2)]) == (
        f"HEAD\n{RULE}\n  1:                    2 - x\n--\n"
    )
    assert format_counters("HEAD", []) == f"HEAD\n{RULE}\n--\n"


def test_should_give_stream_fields_in_json_only_for_stream_counters() -> None:
    key = stream_counter_key(5, 6, 7, "aeron:ipc").ljust(MAX_KEY_LENGTH, b"\0")
    position = CounterSnapshot(2, 12, 4096, "pub-pos (sampled): 5 6 7 aeron:ipc", key, 5, 1, 0)
    assert json.loads(counter_json(position, 123)) == {
        "counter_id": 2,
        "type_id": 12,
        "value": 4096,
        "label": "pub-pos (sampled): 5 6 7 aeron:ipc",
        "registration_id": 5,
        "owner_id": 1,
        "reference_id": 0,
        "session_id": 6,
        "stream_id": 7,
        "channel": "aeron:ipc",
        "timestamp_ms": 123,
    }
    other = json.loads(counter_json(counter(1, 2), 123))
    assert (other["session_id"], other["stream_id"], other["channel"]) == (None, None, None)
    assert "\n" not in counter_json(position, 123)


def test_should_format_timestamps_as_error_stat_does() -> None:
    assert format_timestamp_ms(1_700_000_000_007, UTC) == "2023-11-14 22:13:20.007+0000"
    plus_two = timezone(timedelta(hours=2))
    assert format_timestamp_ms(1_700_000_000_999, plus_two) == "2023-11-15 00:13:20.999+0200"
    assert format_timestamp_ms(1_700_000_000_000).startswith("2023-11-1")


def test_should_format_errors_as_error_stat_does() -> None:
    entry = (3, 1_700_000_000_000, 1_700_000_001_500, "boom\n  at here")
    assert format_error(*entry, tz=UTC) == (
        "***\n3 observations from 2023-11-14 22:13:20.000+0000 to "
        "2023-11-14 22:13:21.500+0000 for:\n boom\n  at here\n"
    )
    assert format_errors([entry, entry], UTC) == (
        format_error(*entry, tz=UTC) * 2 + "\n2 distinct errors observed.\n"
    )
    assert format_errors([], UTC) == "\n0 distinct errors observed.\n"
    assert json.loads(error_json(*entry)) == {
        "observation_count": 3,
        "first_observation_ms": 1_700_000_000_000,
        "last_observation_ms": 1_700_000_001_500,
        "text": "boom\n  at here",
    }
