"""``failOnDataLoss``: an offset below a queue's min offset (retention removed it) fails the
read with ``DataLossError`` by default, and reads on from the min offset with ``false``.

The broker here keeps no old segment (``--file-reserved-time-ms 0``, 64 KiB segments); its
retention runs every 10 s, so the test waits for the queue's min offset to move."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession

from aeromq.broker.testing import ServerProcess
from aeromq.client import GrpcClient, Message, MessageQueue
from aeromq.producer import Producer
from tests.consumer._broker_process import start_broker

# The first test of a session waits for the SparkSession (10-20 s, longer on a loaded machine).
pytestmark = pytest.mark.timeout(600)

_TOPIC = "SparkLost"
_RETENTION_WAIT_S = 90.0


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, int, int]]:
    """A broker whose queue 0 of ``SparkLost`` lost its first messages: (broker, min, max)."""
    broker = start_broker(
        tmp_path_factory.mktemp("lossy"), "broker-lossy",
        "--commit-log-segment-bytes", "65536", "--max-message-size", "8192",
        "--file-reserved-time-ms", "0", "--consume-queue-entries-per-segment", "64",
        timeout_s=60.0,
    )  # fmt: skip
    try:
        with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
            admin.create_topic(_TOPIC, read_queue_nums=1, write_queue_nums=1)
            with Producer("pipeline-test-producer", broker.grpc_address) as producer:
                queue = MessageQueue(_TOPIC, broker.name, 0)
                for _ in range(50):
                    producer.send_batch([Message(_TOPIC, b"x" * 200)] * 20, queue=queue)
            deadline = time.monotonic() + _RETENTION_WAIT_S
            while (min_offset := admin.min_offset(_TOPIC, 0)) == 0:
                assert time.monotonic() < deadline, "retention did not remove a segment"
                time.sleep(0.5)
            yield broker, min_offset, admin.max_offset(_TOPIC, 0)
    finally:
        broker.stop()


def _from_zero(spark: SparkSession, broker: ServerProcess, fail: bool) -> DataFrame:
    return (
        spark.read.format("aeromq")
        .option("endpoints", broker.grpc_address)
        .option("topic", _TOPIC)
        .option("startingOffsets", f'{{"{_TOPIC}": {{"{broker.name}:0": 0}}}}')
        .option("failOnDataLoss", str(fail).lower())
        .load()
    )


def test_should_fail_on_an_offset_below_the_min_offset(
    spark: SparkSession, lossy: tuple[ServerProcess, int, int]
) -> None:
    broker, min_offset, max_offset = lossy
    with pytest.raises(Exception, match="DataLossError") as caught:
        _from_zero(spark, broker, fail=True).count()
    text = str(caught.value)
    assert "offset=0" in text and "failOnDataLoss=false" in text
    reported = re.search(r"min_offset=(\d+)", text)
    assert reported is not None, text
    # the queue's min offset when the read was planned: retention may have removed more since
    # the fixture looked (a pass still deleting files then, or the next pass)
    assert min_offset <= int(reported.group(1)) < max_offset


def test_should_read_on_from_the_min_offset_without_fail_on_data_loss(
    spark: SparkSession, lossy: tuple[ServerProcess, int, int], tmp_path: Path
) -> None:
    broker, min_offset, max_offset = lossy
    rows = _from_zero(spark, broker, fail=False).select("queueOffset").collect()
    offsets = sorted(r.queueOffset for r in rows)
    assert offsets[0] >= min_offset and offsets[-1] == max_offset - 1
    assert offsets == list(range(offsets[0], max_offset))
