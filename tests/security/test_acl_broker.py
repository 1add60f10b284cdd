"""A real ``aeromq broker`` with TLS and its ACL in its TOML config: the same users are checked
on gRPC and on the transport (a session's CONNECT, then each send and pull), and clients raise
``AuthenticationError`` / ``AccessDeniedError`` naming user, resource and permission."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.security import load_acl, warn_if_exposed
from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import (
    AccessDeniedError,
    AuthenticationError,
    ClientTls,
    Credentials,
    GrpcClient,
    Message,
    MessageQueue,
)
from aeromq.common import ResponseCode
from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig
from aeromq.producer import Producer, ProducerConfig
from tests.security._certs import Certs
from tests.security.conftest import ACL_TOML, APP, READER, ROOT


@pytest.fixture
def secured(tmp_path: Path, certs: Certs) -> Iterator[ServerProcess]:
    config = tmp_path / "broker.toml"
    config.write_text(
        "[broker]\n"
        f'tls_cert_file = "{certs.server_cert}"\n'
        f'tls_key_file = "{certs.server_key}"\n'
        "flush_interval_ms = 50\n"
        'ingress_udp_endpoint = "none"\n' + ACL_TOML
    )
    process = start_broker_process(tmp_path / "store", "broker-secure", ["--config", str(config)])
    try:
        tls = ClientTls(ca_file=certs.ca)
        with GrpcClient(process.grpc_address, credentials=ROOT, tls=tls, timeout_s=30) as root:
            for topic in ("Orders", "Payments"):
                root.create_topic(topic, read_queue_nums=1, write_queue_nums=1)
            root.create_retry_topic("readers")
        yield process
    finally:
        process.stop()


def _producer(process: ServerProcess, certs: Certs, credentials: Credentials) -> Producer:
    config = ProducerConfig(credentials=credentials, tls=ClientTls(ca_file=certs.ca))
    return Producer("secure-producer", process.grpc_address, config=config)


def _consumer(
    process: ServerProcess, certs: Certs, credentials: Credentials, group: str
) -> DefaultLitePullConsumer:
    return DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=group,
            endpoints=(process.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            broker_suspend_max_time_ms=500,
            pull_time_delay_ms_when_exception=100,
            credentials=credentials,
            tls=ClientTls(ca_file=certs.ca),
        )
    )


def test_should_check_send_and_pull_over_the_transport_against_the_acl(
    secured: ServerProcess, certs: Certs
) -> None:
    with _producer(secured, certs, APP) as producer:
        assert producer.send(Message("Orders", b"allowed")).msg_id
        with pytest.raises(AccessDeniedError) as info:
            producer.send(Message("Payments", b"denied"))
        text = str(info.value)
        assert "user='app'" in text and "topic:Payments" in text and "'pub'" in text
    with _producer(secured, certs, READER) as reader, pytest.raises(AccessDeniedError, match="pub"):
        reader.send(Message("Orders", b"reader may not publish"))
    with (
        _producer(secured, certs, Credentials("app", "wrong")) as impostor,
        pytest.raises(AuthenticationError, match="user='app'"),
    ):
        impostor.send(Message("Orders", b"impostor"))

    consumer = _consumer(secured, certs, APP, "orders")
    try:
        consumer.assign([MessageQueue("Orders", "broker-secure", 0)])
        consumer.start()
        got: list[bytes] = []
        for _ in range(50):
            got.extend(m.body for m in consumer.poll(200))
            if got:
                break
        assert got == [b"allowed"]
    finally:
        consumer.shutdown()


def test_should_refuse_a_pull_for_a_group_the_user_may_not_join(
    secured: ServerProcess, certs: Certs
) -> None:
    from aeromq.client import BrokerSessions, RouteResolver
    from aeromq.proto import messages_pb2

    with RouteResolver(
        secured.grpc_address, credentials=READER, tls=ClientTls(ca_file=certs.ca)
    ) as routes:
        broker = routes.route("Orders").broker("broker-secure")
        sessions = BrokerSessions(
            client_id="reader-1", request_timeout_ms=10_000, offer_timeout_ms=1_000,
            credentials=READER,
        )  # fmt: skip
        try:
            session = sessions.session(broker)
            pull = messages_pb2.PullMessageRequest(
                consumer_group="orders", topic="Orders", queue_id=0, queue_offset=0,
                max_msg_nums=10,
            )  # fmt: skip
            with pytest.raises(AccessDeniedError, match=r"user='reader'.*group:orders.*'sub'"):
                session.request(pull)
            pull.consumer_group = "readers"
            assert session.request(pull).status.code == 0
            # sub on a group covers its retry topic (a push consumer pulls it), not another's
            retry = messages_pb2.PullMessageRequest(
                consumer_group="readers", topic="%RETRY%readers", queue_id=0, queue_offset=0,
                max_msg_nums=10,
            )  # fmt: skip
            assert session.request(retry).status.code != ResponseCode.FORBIDDEN
            retry.topic = "%RETRY%orders"
            with pytest.raises(AccessDeniedError, match=r"user='reader'.*topic:%RETRY%orders"):
                session.request(retry)
        finally:
            sessions.close()
        impostor = BrokerSessions(
            client_id="impostor", request_timeout_ms=10_000, offer_timeout_ms=1_000,
            credentials=Credentials("reader", "wrong"),
        )  # fmt: skip
        try:
            with pytest.raises(AuthenticationError, match="user='reader'"):
                impostor.session(broker)  # the CONNECT itself is refused
        finally:
            impostor.close()


def test_should_warn_loudly_when_listening_beyond_loopback_unsecured(
    caplog: pytest.LogCaptureFixture, acl_file: Path, certs: Certs
) -> None:
    from aeromq.broker.grpc import TlsConfig

    caplog.set_level(logging.WARNING)
    acl = load_acl(acl_file)
    tls = TlsConfig(certs.server_cert, certs.server_key)
    assert warn_if_exposed("0.0.0.0", None, None)
    assert "without TLS and ACL" in caplog.text and "host=0.0.0.0" in caplog.text
    assert warn_if_exposed("10.1.2.3", tls, None)
    assert not warn_if_exposed("0.0.0.0", tls, acl)
    assert not warn_if_exposed("127.0.0.1", None, None)
    assert not warn_if_exposed("::1", None, None)


def test_should_keep_the_rocketmq5_endpoint_closed_on_a_secured_broker(
    secured: ServerProcess,
) -> None:
    # the RocketMQ 5 endpoint checks neither TLS nor the ACL: open, it would bypass both
    assert secured.ready["rocketmq"] == "none"
