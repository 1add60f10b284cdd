"""``aeromq admin dlq`` against a real broker: a group's dead letters listed, browsed with the
topic each first came from, and re-sent to that topic."""

from __future__ import annotations

import io
import json

from aeromq._cli.admin import main as admin_main
from aeromq.client import Message
from aeromq.common import dlq_topic
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, client, create_topic
from tests.consumer.push._push import unique


def _admin(broker: ServerProcess, *args: str) -> list[dict[str, object]]:
    out = io.StringIO()
    code = admin_main(["--endpoints", broker.grpc_address, "--broker", "--json", *args], out=out)
    assert code == 0, out.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_should_list_browse_and_resend_a_groups_dead_letters(
    real_broker: ServerProcess, producer: Producer
) -> None:
    topic, group = unique("DlqTopic"), unique("dlq-group")
    create_topic(real_broker, topic, 2)
    producer.send(Message(topic, b"poison", tags="T"))
    with client(real_broker) as grpc:
        stored = [m for q in (0, 1) for m in grpc.view_messages(topic, q, 0)]
        assert len(stored) == 1
        answer = grpc.send_back(group, stored[0].commit_log_offset, delay_level=-1)
        assert answer.topic == dlq_topic(group)

    listed = _admin(real_broker, "dlq", "list")
    assert {
        "group": group,
        "broker": "broker-a",
        "topic": dlq_topic(group),
        "messages": 1,
    } in listed
    browsed = _admin(real_broker, "dlq", "browse", group)
    assert [(b["origin_topic"], b["reconsume_times"], b["body"]) for b in browsed] == [
        (topic, "1", "poison")
    ]
    resent = _admin(real_broker, "dlq", "resend", group, "--offset", "0")
    assert [(r["topic"], r["offset"]) for r in resent] == [(topic, 0)]
    with client(real_broker) as grpc:
        again = [m for q in (0, 1) for m in grpc.view_messages(topic, q, 0)]
    assert sorted(m.body for m in again) == [b"poison", b"poison"]
    assert all("RETRY_TOPIC" not in m.properties for m in again)
