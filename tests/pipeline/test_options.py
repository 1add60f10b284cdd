"""The data source options: parsed into typed options, bad ones rejected with OptionError."""

from __future__ import annotations

import pytest

from aeromq.pipeline import OptionError, sink_options, source_options


def test_should_parse_the_source_options_case_insensitively() -> None:
    options = source_options(
        {
            "nameServer": "127.0.0.1:1;127.0.0.1:2",
            "subscribe": "A, B",
            "MAXOFFSETSPERTRIGGER": "10",
            "failOnDataLoss": "false",
            "includeProperties": "TRUE",
            "checkpointLocation": "/tmp/x",
        }
    )
    assert options.endpoints == ("127.0.0.1:1", "127.0.0.1:2")
    assert options.topics == ("A", "B")
    assert options.max_offsets_per_trigger == 10
    assert not options.fail_on_data_loss and options.include_properties
    assert options.starting_offsets == "earliest" and options.ending_offsets == "latest"


def test_should_parse_assign() -> None:
    options = source_options({"endpoints": "h:1", "assign": '{"T": [2, 0, 2]}'})
    assert options.assign == (("T", (0, 2)),)


@pytest.mark.parametrize(
    ("given", "fragment"),
    [
        ({"topic": "T"}, "endpoints"),
        ({"endpoints": "h:1"}, "exactly one of"),
        ({"endpoints": "h:1", "topic": "T", "subscribe": "U"}, "exactly one of"),
        ({"endpoints": "h:1", "topic": "T", "maxOffsetsPerTrigger": "0"}, "must be >= 1"),
        ({"endpoints": "h:1", "topic": "T", "minPartitions": "x"}, "must be an integer"),
        ({"endpoints": "h:1", "topic": "T", "failOnDataLoss": "yes"}, "true or false"),
        ({"endpoints": "h:1", "topic": "T", "startingOffsets": "first"}, "startingOffsets"),
        ({"endpoints": "h:1", "topic": "T", "startingOffsets": "{oops"}, "not valid JSON"),
        ({"endpoints": "h:1", "assign": '{"T": ["0"]}'}, "list of queue ids"),
        ({"endpoints": "h:1", "subscribePattern": "("}, "not a regex"),
        ({"endpoints": "h:1", "topic": "T", "startingOffset": "earliest"}, "unknown source"),
    ],
)
def test_should_reject_bad_source_options(given: dict[str, str], fragment: str) -> None:
    with pytest.raises(OptionError, match=fragment):
        source_options(given)


def test_should_parse_the_sink_options_and_reject_unknown_ones() -> None:
    options = sink_options({"endpoints": "h:1", "topic": "T", "sendBatchSize": "16"})
    assert (options.topic, options.send_batch_size) == ("T", 16)
    with pytest.raises(OptionError, match="unknown sink options"):
        sink_options({"endpoints": "h:1", "tpoic": "T"})
