"""The ACL on the consume-retry RPCs: a send-back, a retry topic and queue locks need ``sub`` on
the group (and the topic), viewing a queue ``sub`` on its topic, a dead letter's re-send
``admin`` on the dead-letter topic."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.grpc import BrokerGrpcServer
from aeromq.broker.security import load_acl
from aeromq.client import AccessDeniedError, GrpcClient
from aeromq.common import dlq_topic
from tests.broker.control.conftest import RunningBroker, start_broker
from tests.security.conftest import APP, ROOT


@pytest.fixture
def address(tmp_path: Path, acl_file: Path) -> Iterator[str]:
    running: RunningBroker = start_broker(tmp_path / "broker")
    server = BrokerGrpcServer(running.control, "127.0.0.1", 0, acl=load_acl(acl_file))
    server.start()
    try:
        yield f"127.0.0.1:{server.port}"
    finally:
        server.stop(grace_s=0.2)
        running.stop()


def test_should_check_the_group_topic_and_admin_of_each_consume_retry_rpc(
    address: str, tmp_path: Path
) -> None:
    with GrpcClient(address, credentials=ROOT) as root, GrpcClient(address, credentials=APP) as app:
        root.create_topic("Orders", read_queue_nums=1, write_queue_nums=1)
        root.create_topic("Payments", read_queue_nums=1, write_queue_nums=1)
        with pytest.raises(AccessDeniedError, match="topic:Payments"):
            app.view_messages("Payments", 0, 0)
        assert app.view_messages("Orders", 0, 0) == []
        assert app.create_retry_topic("orders") == "%RETRY%orders"
        with pytest.raises(AccessDeniedError, match="group:others"):
            app.create_retry_topic("others")
        with pytest.raises(AccessDeniedError, match="group:others"):
            app.send_back("others", 0, topic="Orders")
        with pytest.raises(AccessDeniedError, match="topic:Payments"):
            app.send_back("orders", 0, topic="Payments")
        with pytest.raises(AccessDeniedError, match="group:others"):
            app.lock_queues("others", "c1", "Orders", [0])
        with pytest.raises(AccessDeniedError, match="topic:Payments"):
            app.lock_queues("orders", "c1", "Payments", [0])
        with pytest.raises(AccessDeniedError, match="permission='admin'"):
            app.resend_message(dlq_topic("orders"), 0, 0)
