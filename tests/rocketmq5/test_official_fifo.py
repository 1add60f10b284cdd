"""The official RocketMQ 5 Python client's FIFO messages and SimpleConsumer against aeromq: on a
topic with the ``order`` flag, a message group is held back while one of its messages is in
flight (a receive that does not ack gets the first message of each group only), and each group
is then consumed in order, its unacked first message again before the rest."""

from __future__ import annotations

from collections import defaultdict

from aeromq.broker.testing import ServerProcess
from aeromq.client import GrpcClient
from tests.rocketmq5.conftest import endpoint, official

PER_GROUP = 4


def test_should_hold_each_message_group_back_while_one_of_its_messages_is_in_flight(
    broker: ServerProcess,
) -> None:
    topic, group = "fifo-orders", "fifo-readers"
    with GrpcClient(broker.grpc_address) as admin:
        admin.create_topic(topic, read_queue_nums=2, write_queue_nums=2, order=True)
    for name in ("ga", "gb"):
        official("send", endpoint(broker), topic, PER_GROUP, "--group", name, "--prefix", name)

    first = official("receive", endpoint(broker), topic, group, 2 * PER_GROUP, "--no-ack",
                     "--invisible-s", "3", "--timeout-s", "1.5", "--await-s", "1")  # fmt: skip
    assert sorted(m["body"] for m in first["messages"]) == ["ga-0", "gb-0"]

    rest = official("receive", endpoint(broker), topic, group, 2 * PER_GROUP, "--timeout-s", "30")
    by_group: defaultdict[str, list[tuple[str, int]]] = defaultdict(list)
    for message in rest["messages"]:
        by_group[message["body"].split("-")[0]].append((message["body"], message["attempt"]))
    for name in ("ga", "gb"):
        expected = [(f"{name}-{i}", 2 if i == 0 else 1) for i in range(PER_GROUP)]
        assert by_group[name] == expected
