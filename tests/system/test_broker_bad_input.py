"""Every kind of bad input to a broker process gets a clear code and text (when there is a way
back), is counted in the broker's stats, and the broker keeps serving."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import Message, ResponseCode, TopicNotFoundError
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import SESSION_CLOSED_CODE, encode_batch
from aeromq.producer import Producer
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from tests._servers import serving
from tests.broker.data._raw import RawClient
from tests.system.conftest import ADMIN_TIMEOUT_S, wait_for


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path / "data",
        extra_args=["--max-message-size", "4096", "--ingress-udp-endpoint", "none",
                    "--index-enabled", "false", "--commit-log-segment-bytes", "16MiB",
                    "--session-timeout-ms", "2000"],
    )  # fmt: skip
    with serving(process, {"good": 2}, clean_exit=True):
        yield process


@pytest.fixture
def aeron(broker: ServerProcess) -> Iterator[Aeron]:
    with Aeron.connect(AeronContext(aeron_dir=broker.ready["aeron_dir"])) as client:
        yield client


def _send(topic: str, body: bytes, queue_id: int = 0) -> messages_pb2.SendMessageRequest:
    batch = bytes(encode_batch(topic.encode(), [body]))
    return messages_pb2.SendMessageRequest(
        producer_group="bad", topic=topic, queue_id=queue_id, batch=batch
    )


@pytest.mark.slow
def test_should_answer_count_and_survive_every_kind_of_bad_input(
    broker: ServerProcess, aeron: Aeron
) -> None:
    session = ClientSession.connect(aeron, SessionConfig())
    assert session.max_message_size == 4096

    refused = {
        "unknown topic": (session.request(_send("missing", b"x")), ResponseCode.TOPIC_NOT_EXIST),
        "over max size": (session.request(_send("good", b"x" * 5000)), ResponseCode.MESSAGE_ILLEGAL),
        "bad queue id": (session.request(_send("good", b"x", 9)), ResponseCode.INVALID_PARAMETER),
    }  # fmt: skip
    texts = {"unknown topic": "auto-create is off", "over max size": "max_message_size=4096",
             "bad queue id": "bad queue id"}  # fmt: skip
    for case, (response, code) in refused.items():
        assert response.status.code == code and texts[case] in response.status.message, case
    bad_filter = session.request(
        messages_pb2.PullMessageRequest(consumer_group="g", topic="good", sub_expression="A ||")
    )
    assert bad_filter.status.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "bad tag expression" in bad_filter.status.message
    with Producer("bad-input", broker.grpc_address) as producer, pytest.raises(TopicNotFoundError):
        producer.send(Message("missing", b"x"))

    raw = RawClient(aeron)
    raw.connect()
    raw.offer(b"\x08\x05\x10" + b"\xff" * 11)  # malformed, from a known image: answered
    malformed = raw.answer()
    assert malformed.error.code == ResponseCode.INVALID_PARAMETER
    assert "malformed request" in malformed.error.message
    raw.request("close", correlation_id=6)
    raw.request("send", _send("good", b"late").SerializeToString(), correlation_id=7)
    late = raw.answer()
    assert late.correlation_id == 7 and late.error.code == SESSION_CLOSED_CODE
    assert "closed by the client" in late.error.message
    stranger = RawClient(aeron)
    stranger.offer(b"\x00\x01\x02 not protobuf")  # no route back: counted only

    ok = session.request(_send("good", b"still serving"))
    assert ok.status.code == ResponseCode.SUCCESS and ok.base_queue_offset == 0
    session.close()

    with GrpcClient(broker.grpc_address, timeout_s=ADMIN_TIMEOUT_S) as admin:
        wait_for(
            lambda: admin.broker_stats().counters["session.unanswerable"] >= 1,
            what="the stranger's bytes to be counted",
        )
        counters = admin.broker_stats().counters
    assert counters["send.errors.topic_not_exist"] == 1
    assert counters["send.errors.message_illegal"] == 1
    assert counters["send.errors.invalid_parameter"] == 1
    assert counters["pull.errors.subscription_parse_failed"] == 1
    assert counters["session.malformed"] == 2
    assert counters["session.closed_session"] == 1
    assert counters["send.messages"] == 1
