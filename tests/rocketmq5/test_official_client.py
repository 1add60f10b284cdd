"""The official RocketMQ 5 Python client (``rocketmq-python-client`` from PyPI) against a broker
process: sends with tags, keys and properties, SimpleConsumer receive and ack, redelivery after
the invisible duration, dead letters, tag filters, and messages across aeromq's own clients."""

from __future__ import annotations

import time

import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer
from tests.rocketmq5.conftest import MAX_ATTEMPTS, endpoint, official


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_should_send_with_tags_and_keys_and_receive_and_ack(
    broker: ServerProcess, mode: str
) -> None:
    topic, group = f"orders-{mode}", f"readers-{mode}"
    extra = ["--async"] if mode == "async" else []
    sent = official("send", endpoint(broker), topic, 3, "--tag", "created", "--key", "k1",
                    "--key", "k2", "--property", "region=eu", *extra)  # fmt: skip
    assert len(set(sent["ids"])) == 3

    got = official("receive", endpoint(broker), topic, group, 3)["messages"]

    assert sorted(m["id"] for m in got) == sorted(sent["ids"])
    assert sorted(m["body"] for m in got) == ["m-0", "m-1", "m-2"]
    for message in got:
        assert message["tag"] == "created"
        assert message["keys"] == ["k1", "k2"]
        assert message["properties"] == {"region": "eu"}
        assert message["attempt"] == 1
    again = official("receive", endpoint(broker), topic, group, 1, "--timeout-s", "2",
                     "--await-s", "1")  # fmt: skip
    assert again["messages"] == []  # acked: not delivered again


def test_should_redeliver_an_unacked_message_after_its_invisible_duration(
    broker: ServerProcess,
) -> None:
    sent = official("send", endpoint(broker), "redelivered", 1)
    first = official("receive", endpoint(broker), "redelivered", "slow", 1, "--no-ack",
                     "--invisible-s", "2")["messages"]  # fmt: skip
    hidden_until = time.monotonic() + 2

    second = official("receive", endpoint(broker), "redelivered", "slow", 1, "--timeout-s", "20")

    assert time.monotonic() >= hidden_until - 0.5  # not before its invisible duration
    assert [m["id"] for m in first] == sent["ids"]
    assert [(m["id"], m["attempt"]) for m in second["messages"]] == [(sent["ids"][0], 2)]


def test_should_move_a_message_that_keeps_failing_to_the_dlq(broker: ServerProcess) -> None:
    sent = official("send", endpoint(broker), "poison", 1, "--tag", "bad")
    for attempt in range(1, MAX_ATTEMPTS + 1):
        got = official("receive", endpoint(broker), "poison", "fails", 1, "--no-ack",
                       "--invisible-s", "1", "--timeout-s", "20")["messages"]  # fmt: skip
        assert [(m["id"], m["attempt"]) for m in got] == [(sent["ids"][0], attempt)]
    time.sleep(1.2)

    after = official("receive", endpoint(broker), "poison", "fails", 1, "--timeout-s", "3",
                     "--await-s", "1")["messages"]  # fmt: skip
    dead = official("receive", endpoint(broker), "%DLQ%fails", "dlq-readers", 1,
                    "--timeout-s", "20")["messages"]  # fmt: skip

    assert after == []
    assert [(m["id"], m["body"], m["tag"]) for m in dead] == [(sent["ids"][0], "m-0", "bad")]


def test_should_deliver_only_the_tags_a_filter_names(broker: ServerProcess) -> None:
    official("send", endpoint(broker), "tagged", 2, "--tag", "A", "--prefix", "a")
    official("send", endpoint(broker), "tagged", 2, "--tag", "B", "--prefix", "b")
    official("send", endpoint(broker), "tagged", 1, "--tag", "C", "--prefix", "c")

    got = official("receive", endpoint(broker), "tagged", "b-or-c", 3, "--filter", "B || C",
                   "--timeout-s", "10")["messages"]  # fmt: skip

    assert sorted(m["body"] for m in got) == ["b-0", "b-1", "c-0"]


def test_should_refuse_the_receipt_handle_of_an_earlier_delivery(broker: ServerProcess) -> None:
    official("send", endpoint(broker), "stale", 1)

    result = official("ack-stale", endpoint(broker), "stale", "stale-readers")

    assert result["attempts"] == [1, 2]
    assert result["error"] is not None
    assert "BadRequestException" in result["error"]
    assert "40013" in result["error"]  # Code.INVALID_RECEIPT_HANDLE
    assert "receipt handle no longer valid" in result["error"]


def test_should_read_official_producer_messages_with_the_lite_pull_consumer(
    broker: ServerProcess,
) -> None:
    sent = official("send", endpoint(broker), "to-lite", 4, "--tag", "t", "--key", "k",
                    "--property", "p=1")  # fmt: skip
    config = LitePullConsumerConfig(
        consumer_group="lite-readers",
        endpoints=(broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe("to-lite", "t")
    received = []
    deadline = time.monotonic() + 30
    with consumer:
        while len(received) < 4 and time.monotonic() < deadline:
            received += consumer.poll(timeout_ms=1000)

    assert sorted(m.body.decode() for m in received) == ["m-0", "m-1", "m-2", "m-3"]
    assert sorted(m.uniq_id or "" for m in received) == sorted(sent["ids"])
    for message in received:
        assert message.tags == "t"
        assert message.keys == ("k",)
        assert message.get_property("p") == "1"


def test_should_deliver_aeromq_producer_messages_to_the_official_simple_consumer(
    broker: ServerProcess,
) -> None:
    with Producer("aeromq-producers", broker.grpc_address) as producer:
        for i in range(3):
            producer.send(Message("from-aeromq", f"a-{i}".encode(), tags="x", keys=f"key-{i}",
                                  properties={"source": "aeromq"}))  # fmt: skip

    got = official("receive", endpoint(broker), "from-aeromq", "official-readers", 3,
                   "--timeout-s", "20")["messages"]  # fmt: skip

    assert sorted(m["body"] for m in got) == ["a-0", "a-1", "a-2"]
    assert sorted(k for m in got for k in m["keys"]) == ["key-0", "key-1", "key-2"]
    assert all(m["tag"] == "x" and m["properties"] == {"source": "aeromq"} for m in got)
