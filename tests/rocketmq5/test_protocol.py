"""The endpoint over raw gRPC (aeromq's compiled ``apache.rocketmq.v2`` stubs) against a broker
process: the settings answered on ``Telemetry``, the ``Code`` of each refusal, and receipt
handles across a broker restart."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2, service_pb2_grpc
from tests.rocketmq5.conftest import MAX_ATTEMPTS, endpoint, start_broker
from tests.rocketmq5.conftest import receive as _receive
from tests.rocketmq5.conftest import resource as _resource

Code = definition_pb2.Code
TIMEOUT_S = 30.0


@pytest.fixture
def stub(broker: ServerProcess) -> Iterator[service_pb2_grpc.MessagingServiceStub]:
    with grpc.insecure_channel(endpoint(broker)) as channel:
        yield service_pb2_grpc.MessagingServiceStub(channel)


def _send(
    stub: service_pb2_grpc.MessagingServiceStub, topic: str, body: bytes, group: str = ""
) -> str:
    message = definition_pb2.Message(topic=_resource(topic), body=body)
    message.system_properties.message_id = f"id-{body.decode()}"
    message.system_properties.message_type = definition_pb2.NORMAL
    if group:
        message.system_properties.message_type = definition_pb2.FIFO
        message.system_properties.message_group = group
    response = stub.SendMessage(
        service_pb2.SendMessageRequest(messages=[message]), timeout=TIMEOUT_S
    )
    assert response.status.code == Code.OK, response
    return response.entries[0].message_id


def _ack(
    stub: service_pb2_grpc.MessagingServiceStub, topic: str, group: str, handle: str
) -> service_pb2.AckMessageResponse:
    entry = service_pb2.AckMessageEntry(receipt_handle=handle)
    request = service_pb2.AckMessageRequest(
        group=_resource(group), topic=_resource(topic), entries=[entry]
    )
    response: service_pb2.AckMessageResponse = stub.AckMessage(request, timeout=TIMEOUT_S)
    return response


def test_should_answer_a_consumer_settings_with_the_retry_policy_and_long_polling(
    stub: service_pb2_grpc.MessagingServiceStub,
) -> None:
    settings = definition_pb2.Settings(client_type=definition_pb2.SIMPLE_CONSUMER)
    settings.subscription.group.name = "settings-readers"
    settings.subscription.long_polling_timeout.seconds = 3600

    (answer,) = list(stub.Telemetry(iter([service_pb2.TelemetryCommand(settings=settings)]),
                                    timeout=TIMEOUT_S))  # fmt: skip

    assert answer.status.code == Code.OK
    assert answer.settings.backoff_policy.max_attempts == MAX_ATTEMPTS
    assert answer.settings.subscription.long_polling_timeout.seconds == 20  # the broker's max
    assert answer.settings.subscription.receive_batch_size == 32
    assert not answer.settings.metric.on


def test_should_answer_each_refusal_with_its_code(
    stub: service_pb2_grpc.MessagingServiceStub,
) -> None:
    bad_topic = stub.QueryRoute(
        service_pb2.QueryRouteRequest(topic=_resource("no spaces")), timeout=TIMEOUT_S
    )
    transaction = stub.EndTransaction(
        service_pb2.EndTransactionRequest(
            topic=_resource("t"), transaction_id="x", resolution=definition_pb2.COMMIT
        ),
        timeout=TIMEOUT_S,
    )
    pull = list(stub.PullMessage(service_pb2.PullMessageRequest(), timeout=TIMEOUT_S))
    _send(stub, "codes", b"c")
    too_short = _receive(stub, "codes", "codes-readers", invisible_s=0)
    bad_handle = _ack(stub, "codes", "codes-readers", "garbage")
    empty = stub.SendMessage(service_pb2.SendMessageRequest(), timeout=TIMEOUT_S)

    assert bad_topic.status.code == Code.ILLEGAL_TOPIC
    assert transaction.status.code == Code.INVALID_TRANSACTION_ID
    assert "'x'" in transaction.status.message
    assert [p.status.code for p in pull] == [Code.UNSUPPORTED]
    assert [r.status.code for r in too_short] == [Code.ILLEGAL_INVISIBLE_TIME]
    assert bad_handle.status.code == Code.INVALID_RECEIPT_HANDLE
    assert bad_handle.entries[0].status.code == Code.INVALID_RECEIPT_HANDLE
    assert empty.status.code == Code.BAD_REQUEST


def test_should_keep_a_fifo_message_group_in_one_queue_in_order(
    stub: service_pb2_grpc.MessagingServiceStub,
) -> None:
    bodies = [f"f{i}".encode() for i in range(6)]
    for body in bodies:
        _send(stub, "fifo", body, group="order-42")

    got = [r.message for r in _receive(stub, "fifo", "fifo-readers") if r.HasField("message")]

    assert [m.body for m in got] == bodies
    assert len({m.system_properties.queue_id for m in got}) == 1
    assert {m.system_properties.message_group for m in got} == {"order-42"}
    assert {m.system_properties.message_type for m in got} == {definition_pb2.FIFO}


def test_should_keep_receipt_handles_across_a_broker_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    broker = start_broker(data_dir)
    try:
        with grpc.insecure_channel(endpoint(broker)) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            sent = [_send(stub, "durable", b"a"), _send(stub, "durable", b"b")]
            got = [r.message for r in _receive(stub, "durable", "keepers") if r.HasField("message")]
    finally:
        assert broker.stop() == 0
    assert sorted(m.system_properties.message_id for m in got) == sorted(sent)
    acked, unacked = got

    broker = start_broker(data_dir)
    try:
        with grpc.insecure_channel(endpoint(broker)) as channel:
            stub = service_pb2_grpc.MessagingServiceStub(channel)
            ack = _ack(stub, "durable", "keepers", acked.system_properties.receipt_handle)
            again = [
                r.message for r in _receive(stub, "durable", "keepers") if r.HasField("message")
            ]
    finally:
        assert broker.stop() == 0

    assert ack.status.code == Code.OK
    assert [m.system_properties.message_id for m in again] == [unacked.system_properties.message_id]


def test_should_name_no_endpoint_when_turned_off(tmp_path: Path) -> None:
    broker = start_broker_process(tmp_path / "data", extra_args=["--rocketmq-enabled", "false"])
    try:
        assert broker.ready["rocketmq"] == "none"
    finally:
        assert broker.stop() == 0
