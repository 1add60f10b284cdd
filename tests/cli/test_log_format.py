"""``--log-format json``: every command's logs as one JSON object per line, from the one
logging setup all commands share."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from aeromq.broker.testing import start_broker_process
from aeromq.transport.util import JsonLogFormatter


def _record(message: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("aeromq.test", logging.WARNING, __file__, 1, message, args, None)
    record.__dict__.update(extra)
    return record


def test_should_format_a_record_as_one_json_object_with_its_extra_fields() -> None:
    line = JsonLogFormatter().format(_record("sent %d to %s", 3, "orders", topic="orders"))
    fields = json.loads(line)
    assert "\n" not in line
    assert list(fields)[:6] == ["ts", "level", "logger", "message", "thread", "pid"]
    assert fields["message"] == "sent 3 to orders" and fields["level"] == "WARNING"
    assert fields["logger"] == "aeromq.test" and fields["topic"] == "orders"
    assert fields["ts"].endswith("Z") and fields["ts"][10] == "T"


def test_should_keep_the_traceback_of_an_exception_in_one_line() -> None:
    try:
        raise ValueError("bad value")
    except ValueError:
        record = logging.LogRecord(
            "aeromq.test", logging.ERROR, __file__, 1, "failed", None, sys.exc_info()
        )
    fields = json.loads(JsonLogFormatter().format(record))
    assert "ValueError: bad value" in fields["exception"]


def test_should_write_a_brokers_logs_as_json_lines(tmp_path: Path) -> None:
    broker = start_broker_process(
        tmp_path / "data",
        extra_args=[
            "--ingress-udp-endpoint",
            "none",
            "--log-format",
            "json",
            "--log-level",
            "INFO",
        ],
    )
    assert broker.stop() == 0
    logged = [json.loads(line) for line in broker.log if line.startswith("{")]
    started = [r for r in logged if r["message"].startswith("broker started:")]
    assert len(started) == 1 and started[0]["logger"] == "aeromq.broker.broker"
    assert started[0]["level"] == "INFO"
    assert any(r["message"].startswith("broker stopped:") for r in logged)
    # nothing else is logged as text: the other lines are the command's own output
    assert not [line for line in broker.log if " INFO aeromq." in line]
