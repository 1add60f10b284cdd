"""``aeromq produce`` against a broker in this process (``tests/producer``'s, see the conftest)."""

from __future__ import annotations

import struct

import pytest

from aeromq._cli.produce import main
from aeromq.broker.broker import Broker
from aeromq.common.record_batch import ATTRIBUTES_OFFSET, CompressionType, compression_type
from tests.producer.conftest import Puller


def _summary(out: str) -> dict[str, str]:
    line = [ln for ln in out.splitlines() if ln.startswith("sent=")][-1]
    return dict(part.split("=", 1) for part in line.split())


def test_should_send_the_count_in_batches_and_print_a_summary(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--endpoints", broker.grpc_address, "--topic", "events", "--count", "100",
                 "--size", "64", "--batch", "8", "--window", "4"])  # fmt: skip
    summary = _summary(capsys.readouterr().out)
    assert code == 0
    assert (summary["sent"], summary["failed"], summary["of"]) == ("100", "0", "100")
    assert float(summary["msgs_per_s"]) > 0 and "p99_us" in summary


def test_should_send_a_body_with_tags_keys_and_properties_at_a_rate(
    broker: Broker, puller: Puller, capsys: pytest.CaptureFixture[str]
) -> None:
    before = sum(puller.pull("keyed", q).max_offset for q in range(4))
    code = main(["--endpoints", broker.grpc_address, "--topic", "keyed", "--count", "5",
                 "--body", "hi", "--tags", "T", "--keys", "k1 k2", "--property", "a=b",
                 "--rate", "100"])  # fmt: skip
    summary = _summary(capsys.readouterr().out)
    assert code == 0 and summary["sent"] == "5"
    assert float(summary["elapsed_s"]) >= 0.035  # 5 at 100/s: four intervals
    pulled = [m for q in range(4) for m in puller.messages("keyed", q)]
    assert len(pulled) == before + 5
    last = pulled[-1]
    assert (last.body, last.tags, list(last.keys)) == (b"hi", "T", ["k1", "k2"])
    assert last.properties["a"] == "b"


def test_should_send_compressed_batches_that_read_back_as_sent(
    broker: Broker, puller: Puller, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {q: puller.pull("orders", q).max_offset for q in range(4)}
    code = main(["--endpoints", broker.grpc_address, "--topic", "orders", "--count", "32",
                 "--size", "200", "--batch", "32", "--compression", "zstd"])  # fmt: skip
    assert code == 0 and _summary(capsys.readouterr().out)["sent"] == "32"
    pulled = [m for q in range(4) for m in puller.messages("orders", q, before[q])]
    assert len(pulled) == 32 and len({m.body for m in pulled}) == 1  # one request: 6,400 B
    assert len(pulled[0].body) == 200
    stored = puller.pull("orders", pulled[0].queue_id, before[pulled[0].queue_id]).batches
    attributes = struct.unpack_from("<H", stored, ATTRIBUTES_OFFSET)[0]
    assert compression_type(attributes) == CompressionType.ZSTD  # stored as it was sent


def test_should_exit_1_when_sends_fail_and_2_on_bad_arguments(
    broker: Broker, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--endpoints", broker.grpc_address, "--topic", "missing-topic"]) == 1
    captured = capsys.readouterr()
    assert "TopicNotFoundError" in captured.err and _summary(captured.out)["failed"] == "1"
    assert main(["--endpoints", broker.grpc_address, "--topic", "events", "--size",
                 "5000000"]) == 1  # fmt: skip
    assert "MessageTooLargeError" in capsys.readouterr().err
    assert main(["--endpoints", broker.grpc_address, "--topic", "bad topic!"]) == 2
    with pytest.raises(SystemExit) as raised:
        main(["--endpoints", broker.grpc_address, "--topic", "t", "--batch", "0"])
    assert raised.value.code == 2
