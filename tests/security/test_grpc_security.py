"""TLS (server certificate, mutual TLS) and the ACL on the gRPC control plane: a real server on
a loopback port, certificates made by ``openssl``, clients through ``GrpcClient``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from aeromq.broker.grpc import BrokerGrpcServer, TlsConfig
from aeromq.broker.security import load_acl
from aeromq.client import (
    AccessDeniedError,
    AuthenticationError,
    BrokerUnavailableError,
    ClientTls,
    Credentials,
    GrpcClient,
)
from aeromq.proto import consumer_group_pb2
from tests.broker.control.conftest import RunningBroker, start_broker
from tests.security._certs import Certs
from tests.security.conftest import APP, READER, ROOT


@pytest.fixture
def control(tmp_path: Path) -> Iterator[RunningBroker]:
    running = start_broker(tmp_path / "broker")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def serve(control: RunningBroker) -> Iterator[Callable[..., str]]:
    servers: list[BrokerGrpcServer] = []

    def start(**options: object) -> str:
        server = BrokerGrpcServer(control.control, "127.0.0.1", 0, **options)  # type: ignore[arg-type]
        server.start()
        servers.append(server)
        return f"127.0.0.1:{server.port}"

    yield start
    for server in servers:
        server.stop(grace_s=0.2)


def test_should_serve_tls_and_refuse_a_plaintext_client(
    serve: Callable[..., str], certs: Certs
) -> None:
    address = serve(tls=TlsConfig(certs.server_cert, certs.server_key))
    with GrpcClient(address, tls=ClientTls(ca_file=certs.ca), timeout_s=10) as client:
        client.create_topic("Secure", read_queue_nums=1, write_queue_nums=1)
        assert "Secure" in [t.topic_name for t in client.list_topics()]
    with GrpcClient(address, timeout_s=2) as plain, pytest.raises(BrokerUnavailableError):
        plain.list_topics()
    with (
        GrpcClient(address, tls=ClientTls(ca_file=certs.other_ca), timeout_s=2) as untrusting,
        pytest.raises(BrokerUnavailableError),
    ):
        untrusting.list_topics()


def test_should_require_a_client_certificate_under_mutual_tls(
    serve: Callable[..., str], certs: Certs
) -> None:
    address = serve(tls=TlsConfig(certs.server_cert, certs.server_key, certs.ca))
    tls = ClientTls(ca_file=certs.ca, cert_file=certs.client_cert, key_file=certs.client_key)
    with GrpcClient(address, tls=tls, timeout_s=10) as client:
        assert client.list_topics() is not None
    with (
        GrpcClient(address, tls=ClientTls(ca_file=certs.ca), timeout_s=2) as anonymous,
        pytest.raises(BrokerUnavailableError),
    ):
        anonymous.list_topics()


def test_should_refuse_missing_or_wrong_credentials_naming_the_user(
    serve: Callable[..., str], acl_file: Path
) -> None:
    address = serve(acl=load_acl(acl_file))
    with GrpcClient(address) as anonymous, pytest.raises(AuthenticationError, match="user=''"):
        anonymous.list_topics()
    wrong = Credentials("app", "guess")
    with GrpcClient(address, credentials=wrong) as client:
        with pytest.raises(AuthenticationError, match="user='app'") as info:
            client.list_topics()
        assert "guess" not in str(info.value)
    with grpc.insecure_channel(address) as channel:  # health checking stays open
        health = health_pb2_grpc.HealthStub(channel)
        answer = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_should_allow_and_deny_each_permission_per_topic_and_group(
    serve: Callable[..., str], acl_file: Path
) -> None:
    address = serve(acl=load_acl(acl_file))
    with (
        GrpcClient(address, credentials=ROOT) as root,
        GrpcClient(address, credentials=APP) as app,
        GrpcClient(address, credentials=READER) as reader,
    ):
        # admin: root may create topics; app (pub, sub on Orders*) may not
        root.create_topic("Orders", read_queue_nums=2, write_queue_nums=2)
        root.create_topic("Payments", read_queue_nums=2, write_queue_nums=2)
        with pytest.raises(AccessDeniedError) as info:
            app.create_topic("OrdersNew", read_queue_nums=1, write_queue_nums=1)
        text = str(info.value)
        assert "user='app'" in text and "topic:OrdersNew" in text and "'admin'" in text
        with pytest.raises(AccessDeniedError, match="permission='admin'"):
            app.delete_topic("Orders")
        with pytest.raises(AccessDeniedError, match="permission='admin'"):
            app.list_groups()
        assert root.list_groups() is not None
        # sub: offsets of a topic and a group
        assert app.max_offset("Orders", 0) == 0
        assert reader.max_offset("Orders", 0) == 0
        with pytest.raises(AccessDeniedError, match="topic:Payments"):
            app.max_offset("Payments", 0)
        app.commit_offset("orders", "Orders", 0, 0)
        with pytest.raises(AccessDeniedError, match="group:others"):
            app.commit_offset("others", "Orders", 0, 0)
        with pytest.raises(AccessDeniedError, match=r"user='reader'.*group:orders"):
            reader.query_offset("orders", "Orders", 0)
        # sub on a group: joining it with a heartbeat
        join = consumer_group_pb2.HeartbeatRequest(
            client_id="c1",
            consumers=[consumer_group_pb2.ConsumerData(consumer_group="orders")],
        )
        app.send_heartbeat(join)
        with pytest.raises(AccessDeniedError, match="group:orders"):
            reader.send_heartbeat(join)
        # any user may look routes up
        assert reader.query_route("Orders") is not None
        assert app.get_consumer_ids("orders").consumer_ids == ["c1"]


def test_should_end_a_membership_stream_that_joins_a_group_without_sub(
    serve: Callable[..., str], acl_file: Path
) -> None:
    address = serve(acl=load_acl(acl_file))
    join = consumer_group_pb2.HeartbeatRequest(
        client_id="c2", consumers=[consumer_group_pb2.ConsumerData(consumer_group="orders")]
    )
    with GrpcClient(address, credentials=APP) as app:
        allowed = app.open_heartbeat_stream()
        allowed.send(join)
        assert allowed.poll(10.0) is not None
        assert app.get_consumer_ids("orders").consumer_ids == ["c2"]
        allowed.close()
    with GrpcClient(address, credentials=READER) as reader:
        refused = reader.open_heartbeat_stream()
        refused.send(join)
        with pytest.raises(AccessDeniedError, match=r"user='reader'.*group:orders"):
            refused.poll(10.0)
        refused.close()
    with GrpcClient(address, credentials=ROOT) as root:
        assert root.get_consumer_ids("orders").consumer_ids == []
