"""The example pipeline, run as its command runs it, against a real broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.pipeline.examples.window_aggregation import main
from tests.pipeline._helpers import consume_all

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)


def test_should_aggregate_events_to_parquet_and_back_to_a_topic(
    spark: SparkSession, broker: ServerProcess, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "windows"
    argv = ["--endpoints", broker.grpc_address, "--events", "ExampleEvents", "--results",
            "ExampleWindows", "--output", str(output), "--seed", "500"]  # fmt: skip
    assert main(argv) == 0

    table = spark.read.parquet(str(output)).collect()
    assert sum(r.events for r in table) == 500
    assert {r.key for r in table} == {f"sensor-{n}" for n in range(5)}
    assert len(table) >= 5 * 5  # five keys over five minutes of one-minute windows
    printed = capsys.readouterr().out
    assert f"read 500 events from ExampleEvents; wrote {len(table)} windows" in printed

    results = consume_all(broker, "ExampleWindows", len(table))
    assert len(results) == len(table)
    bodies = [json.loads(m.body) for m in results]
    assert sum(b["events"] for b in bodies) == 500
    assert all(m.tags == "window" and m.keys == (json.loads(m.body)["key"],) for m in results)
