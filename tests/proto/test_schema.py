"""The schema agrees with the client's model: enum numbers, status codes, round trips."""

from __future__ import annotations

from google.protobuf import descriptor_pb2

from aeromq.client import ExpressionType, ResponseCode
from aeromq.common import RAW_SECTION_FIELD, RecordBatch, encode_batch
from aeromq.proto import (
    admin_pb2,
    common_pb2,
    consumer_group_pb2,
    messages_pb2,
    namesrv_pb2_grpc,
    session_pb2,
)


def test_should_number_pull_status_as_rocketmq_orders_it() -> None:
    names = ["FOUND", "NO_NEW_MSG", "NO_MATCHED_MSG", "OFFSET_ILLEGAL"]
    assert [messages_pb2.PullStatus.Value(n) for n in names] == [0, 1, 2, 3]


def test_should_number_send_status_as_rocketmq_orders_it() -> None:
    names = ["SEND_OK", "FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"]
    assert [messages_pb2.SendStatus.Value(n) for n in names] == [0, 1, 2, 3]


def test_should_name_expression_types_as_the_client_does() -> None:
    assert set(messages_pb2.ExpressionType.keys()) == {e.value for e in ExpressionType}


def test_should_carry_response_codes_in_status() -> None:
    status = common_pb2.Status(code=int(ResponseCode.TOPIC_NOT_EXIST), message="no topic")
    decoded = common_pb2.Status.FromString(status.SerializeToString())
    assert ResponseCode(decoded.code) is ResponseCode.TOPIC_NOT_EXIST
    assert common_pb2.Status().code == ResponseCode.SUCCESS


def test_should_round_trip_a_session_request_with_a_batch() -> None:
    send = messages_pb2.SendMessageRequest(
        producer_group="pg",
        topic="t",
        queue_id=3,
        batch=bytes(encode_batch(b"t", [b"x" * 10, b"y"], ["A", None])),
    )
    request = session_pb2.TransportRequest(correlation_id=7, session_id=9, send=send)
    decoded = session_pb2.TransportRequest.FromString(request.SerializeToString())
    assert decoded.WhichOneof("body") == "send"
    assert decoded.send == send
    assert RecordBatch(decoded.send.batch).tag(0) == "A"


def test_should_answer_a_request_as_a_whole_with_an_error_status() -> None:
    response = session_pb2.TransportResponse(
        correlation_id=7, error=common_pb2.Status(code=int(ResponseCode.SYSTEM_ERROR))
    )
    decoded = session_pb2.TransportResponse.FromString(response.SerializeToString())
    assert decoded.WhichOneof("body") == "error"


def test_should_refuse_an_unspecified_reset_target_by_default() -> None:
    assert admin_pb2.ResetOffsetRequest().target == admin_pb2.RESET_TARGET_UNSPECIFIED


def test_should_declare_the_services_of_the_issue() -> None:
    admin = admin_pb2.DESCRIPTOR.services_by_name["BrokerAdmin"]
    assert {m.name for m in admin.methods} >= {
        "CreateTopic",
        "UpdateTopic",
        "DeleteTopic",
        "ListTopics",
        "QueryRoute",
        "UpdateOffset",
        "QueryOffset",
        "SearchOffset",
        "GetMinOffset",
        "GetMaxOffset",
        "GetConsumerProgress",
        "GetBrokerStats",
        "ListGroups",
        "ResetOffset",
    }
    groups = consumer_group_pb2.DESCRIPTOR.services_by_name["ConsumerGroupService"]
    heartbeat = groups.methods_by_name["Heartbeat"]
    assert heartbeat.client_streaming and heartbeat.server_streaming
    assert "GetConsumerIds" in groups.methods_by_name
    assert hasattr(namesrv_pb2_grpc, "NameServerStub")


def test_should_reserve_the_raw_section_field_in_transport_responses() -> None:
    file = descriptor_pb2.FileDescriptorProto()
    session_pb2.DESCRIPTOR.CopyToProto(file)
    (response,) = [m for m in file.message_type if m.name == "TransportResponse"]
    assert any(r.start <= RAW_SECTION_FIELD < r.end for r in response.reserved_range)
    assert RAW_SECTION_FIELD not in session_pb2.TransportResponse.DESCRIPTOR.fields_by_number
