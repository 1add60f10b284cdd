"""``CounterFilter`` and ``parse_id_list``: AeronStat's filters over snapshots."""

from __future__ import annotations

import re

import pytest

from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent.counters_descriptor import MAX_KEY_LENGTH
from aeromq.transport.driver.stream_counters import stream_counter_key
from aeromq.transport.driver.udp.network_counters import (
    SEND_CHANNEL_STATUS_TYPE_ID,
    channel_status_key,
)
from aeromq.transport.tools import CounterFilter, CounterSnapshot, parse_id_list


def snapshot(
    counter_id: int, type_id: int, label: str, key: bytes, registration_id: int = 0
) -> CounterSnapshot:
    return CounterSnapshot(
        counter_id, type_id, 0, label, key.ljust(MAX_KEY_LENGTH, b"\0"), registration_id, 0, 0
    )


SYSTEM = snapshot(15, 0, "Errors", (15).to_bytes(4, "little"), registration_id=15)
SUB_POS = snapshot(
    50, 4, "sub-pos: 9 -7 1001 aeron:ipc @0", stream_counter_key(9, -7, 1001, "aeron:ipc"), 9
)
PUB_LMT = snapshot(
    51, 1, "pub-lmt: 8 3 2002 aeron:udp", stream_counter_key(8, 3, 2002, "aeron:udp"), 8
)
CHANNEL = snapshot(52, SEND_CHANNEL_STATUS_TYPE_ID, "snd-channel", channel_status_key("aeron:udp"))
HEARTBEAT = snapshot(53, 11, "client-heartbeat: 4", (4).to_bytes(8, "little"), registration_id=4)
ALL = [SYSTEM, SUB_POS, PUB_LMT, CHANNEL, HEARTBEAT]


def shown(counter_filter: CounterFilter) -> list[int]:
    return [counter.counter_id for counter in ALL if counter_filter.matches(counter)]


def test_should_match_every_counter_without_filters() -> None:
    assert shown(CounterFilter()) == [15, 50, 51, 52, 53]


@pytest.mark.parametrize(
    ("counter_filter", "expected"),
    [
        (CounterFilter(type_ids=frozenset({0, 11})), [15, 53]),
        (CounterFilter(label=re.compile("^(sub|pub)-")), [50, 51]),
        (CounterFilter(label=re.compile("Err")), [15]),
        (CounterFilter(identities=frozenset({15, 8, 4})), [15, 51, 53]),
        (CounterFilter(session_ids=frozenset({-7})), [50]),
        (CounterFilter(stream_ids=frozenset({1001, 2002})), [50, 51]),
        (CounterFilter(channel=re.compile("udp")), [51, 52]),
        (CounterFilter(channel=re.compile("ipc"), stream_ids=frozenset({2002})), []),
        (CounterFilter(type_ids=frozenset({1, 4}), session_ids=frozenset({3})), [51]),
    ],
)
def test_should_show_only_counters_passing_every_set_filter(
    counter_filter: CounterFilter, expected: list[int]
) -> None:
    assert shown(counter_filter) == expected


def test_should_parse_comma_separated_ids() -> None:
    assert parse_id_list("1,4, 12") == frozenset({1, 4, 12})
    assert parse_id_list("-5") == frozenset({-5})


@pytest.mark.parametrize("text", ["", "1,,2", "one", "1.5"])
def test_should_refuse_anything_but_integers(text: str) -> None:
    with pytest.raises(ConfigurationError, match="comma-separated list of integers") as caught:
        parse_id_list(text)
    assert caught.value.text == text
