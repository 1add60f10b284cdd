"""The official RocketMQ 5 Python client's delayed send (``delivery_timestamp``, message type
DELAY) against a broker process: held until its time, then received with its delivery time;
too far ahead refused. The client runs in a process of its own (``tests/rocketmq5/conftest.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess
from tests.rocketmq5.conftest import endpoint, official, start_broker


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path / "data")
    yield process
    process.stop()


def test_should_hold_the_official_clients_delayed_message_until_its_time(
    broker: ServerProcess,
) -> None:
    sent_ms = time.time_ns() // 1_000_000
    sent = official("send", endpoint(broker), "delayed", 1, "--delay-s", "3")
    early = official("receive", endpoint(broker), "delayed", "readers", 1, "--timeout-s", "1",
                     "--await-s", "1")["messages"]  # fmt: skip
    got = official("receive", endpoint(broker), "delayed", "readers", 1, "--timeout-s", "20")
    received_ms = time.time_ns() // 1_000_000

    assert early == []
    assert [m["id"] for m in got["messages"]] == sent["ids"]
    due_ms = got["messages"][0]["delivery_ms"]
    assert due_ms is not None and due_ms >= (sent_ms // 1000 + 3) * 1000  # whole seconds
    assert received_ms >= due_ms
