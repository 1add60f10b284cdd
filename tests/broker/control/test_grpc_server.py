"""The gRPC server itself: health checking, reflection, binding, and the client's translation of
gRPC failures into client errors."""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from aeromq.broker import BrokerError, BrokerStateError
from aeromq.broker.grpc import ADMIN_SERVICE, CONSUMER_GROUP_SERVICE, BrokerGrpcServer
from aeromq.client import (
    BrokerUnavailableError,
    IllegalArgumentError,
    IllegalStateError,
    RequestTimeoutError,
)
from aeromq.client.grpc_client import GrpcClient

from .conftest import RunningBroker


def test_should_report_serving_for_the_server_and_each_service(broker: RunningBroker) -> None:
    with grpc.insecure_channel(broker.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", ADMIN_SERVICE, CONSUMER_GROUP_SERVICE):
            answer = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert answer.status == health_pb2.HealthCheckResponse.SERVING, service
        with pytest.raises(grpc.RpcError) as info:
            health.Check(health_pb2.HealthCheckRequest(service="no.Such"), timeout=5)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND


def test_should_report_not_serving_when_stopping(broker: RunningBroker) -> None:
    with grpc.insecure_channel(broker.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        broker.server.stop(grace_s=1.0)
        statuses = []
        with contextlib.suppress(grpc.RpcError):  # the server goes away after saying so
            for answer in watch:
                statuses.append(answer.status)
        assert health_pb2.HealthCheckResponse.NOT_SERVING in statuses


def test_should_leave_no_handler_thread_behind_a_health_watch(broker: RunningBroker) -> None:
    # a handler thread blocked for good keeps the process from exiting (the executor's threads
    # are joined at exit): the sync health servicer's Watch did that under grpc.aio
    with grpc.insecure_channel(broker.address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        watch = health.Watch(health_pb2.HealthCheckRequest(service=""), timeout=10)
        assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
        watch.cancel()
    broker.server.stop(grace_s=1.0)
    deadline = time.monotonic() + 10.0
    while _health_watchers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _health_watchers() == []


def _health_watchers() -> list[str]:
    """The threads now running inside grpc_health's code (a Watch handler that blocks)."""
    frames = sys._current_frames()
    names = []
    for thread in threading.enumerate():
        frame = frames.get(thread.ident or -1)
        while frame is not None and "grpc_health" not in frame.f_code.co_filename:
            frame = frame.f_back
        if frame is not None:
            names.append(thread.name)
    return names


def test_should_describe_its_services_by_reflection(broker: RunningBroker) -> None:
    with grpc.insecure_channel(broker.address) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        requests = [
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(file_containing_symbol=ADMIN_SERVICE),
        ]
        listed, described = list(stub.ServerReflectionInfo(iter(requests), timeout=5))
    names = {s.name for s in listed.list_services_response.service}
    assert {ADMIN_SERVICE, CONSUMER_GROUP_SERVICE, "grpc.health.v1.Health"} <= names
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in described.file_descriptor_response.file_descriptor_proto
    ]
    admin = next(f for f in files if f.name == "aeromq/proto/admin.proto")
    [service] = admin.service
    assert service.name == "BrokerAdmin"
    assert "GetConsumerProgress" in {m.name for m in service.method}


def test_should_bind_port_zero_and_refuse_a_taken_port(broker: RunningBroker) -> None:
    assert broker.server.port > 0
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = BrokerGrpcServer(broker.control, "127.0.0.1", port)
        with pytest.raises(BrokerError, match="cannot bind"):
            server.start()
    with pytest.raises(BrokerStateError):
        broker.server.start()


def test_should_refuse_services_added_after_start(broker: RunningBroker) -> None:
    with pytest.raises(BrokerStateError):
        broker.server.add_service("x.Y", lambda server: None)


def test_should_translate_an_unreachable_server() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with GrpcClient(f"127.0.0.1:{free_port}", timeout_s=1.0) as grpc_client:
        with pytest.raises(BrokerUnavailableError) as info:
            grpc_client.list_topics()
        assert info.value.retriable
        assert isinstance(info.value.__cause__, grpc.RpcError)
        with pytest.raises(BrokerUnavailableError):
            grpc_client.wait_ready(timeout_s=0.2)


def test_should_translate_a_deadline() -> None:
    def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
        time.sleep(1.0)
        return b""

    handler = grpc.method_handlers_generic_handler(
        ADMIN_SERVICE, {"ListTopics": grpc.unary_unary_rpc_method_handler(slow)}
    )
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with (
            GrpcClient(f"127.0.0.1:{port}") as grpc_client,
            pytest.raises(RequestTimeoutError) as info,
        ):
            grpc_client.list_topics(timeout_s=0.2)
        assert info.value.grpc_code == "DEADLINE_EXCEEDED"
        assert isinstance(info.value, TimeoutError)
    finally:
        server.stop(None)


def test_should_refuse_calls_on_a_closed_client(broker: RunningBroker) -> None:
    grpc_client = GrpcClient(broker.address)
    grpc_client.close()
    with pytest.raises(IllegalStateError):
        grpc_client.list_topics()
    with pytest.raises(IllegalArgumentError):
        GrpcClient(broker.address, timeout_s=0)


def test_should_refuse_a_second_server_on_the_port_of_a_running_one(broker: RunningBroker) -> None:
    second = BrokerGrpcServer(broker.control, "127.0.0.1", broker.server.port)
    with pytest.raises(BrokerError, match="cannot bind") as info:
        second.start()
    assert info.value.values["address"] == broker.address
    assert not second.running
    with GrpcClient(broker.address) as grpc_client:  # the first one still serves
        assert grpc_client.list_topics() is not None


def test_should_log_one_line_without_traceback_per_bad_call(
    broker: RunningBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="grpc")
    with grpc.insecure_channel(broker.address) as channel:
        for method in ("ListTopics", "CreateTopic", "ResetOffset"):
            garbage = channel.unary_unary(f"/{ADMIN_SERVICE}/{method}")
            with pytest.raises(grpc.RpcError):
                garbage(b"\xff\xff\xff\xff", timeout=5)
    bad = [r for r in caplog.records if r.name.startswith("grpc") and r.levelno >= logging.WARNING]
    assert len(bad) == 3
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in bad)
    assert "ListTopics" in bad[0].getMessage() and "DecodeError" in bad[0].getMessage()


def test_should_keep_the_traceback_of_a_bad_call_at_debug(
    broker: RunningBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="grpc")
    with grpc.insecure_channel(broker.address) as channel:
        garbage = channel.unary_unary(f"/{ADMIN_SERVICE}/ListTopics")
        with pytest.raises(grpc.RpcError):
            garbage(b"\xff\xff\xff\xff", timeout=5)
    bad = [r for r in caplog.records if r.name.startswith("grpc") and r.levelno >= logging.WARNING]
    assert len(bad) == 1 and bad[0].exc_info is not None
