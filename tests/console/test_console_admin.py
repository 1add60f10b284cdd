"""The console's admin actions against a real broker process with an ACL: a POST without
credentials is asked for them, a user without admin is refused with the user, resource and
permission, an administrator creates a topic and resets a group's offsets; without an ACL the
console stays read-only."""

from __future__ import annotations

import base64
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import Credentials, GrpcClient, Message
from aeromq.producer import Producer, ProducerConfig
from tests.broker.observability._scrape import start_observed_broker
from tests.security.conftest import ACL_TOML, APP, ROOT


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    directory = tmp_path_factory.mktemp("console-admin")
    config = directory / "broker.toml"
    config.write_text('[broker]\ningress_udp_endpoint = "none"\n' + ACL_TOML)
    process = start_broker_process(directory / "data", extra_args=["--config", str(config)])
    try:
        yield process
    finally:
        process.stop()


def _post(
    process: ServerProcess, action: str, form: dict[str, str], who: Credentials | None
) -> tuple[int, str, str]:
    """(HTTP status, body, WWW-Authenticate) of a POST of ``form`` to ``action``."""
    url = process.ready["console"].rstrip("/") + f"/actions/{action}"
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode())
    if who is not None:
        token = base64.b64encode(f"{who.user}:{who.secret}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode(), ""
    except urllib.error.HTTPError as error:
        challenge = error.headers.get("WWW-Authenticate", "")
        return error.code, error.read().decode(), challenge


def _topics(process: ServerProcess) -> list[str]:
    with GrpcClient(process.grpc_address, credentials=ROOT, timeout_s=30) as admin:
        return [t.topic_name for t in admin.list_topics()]


def test_should_ask_for_credentials_then_refuse_a_user_without_admin(
    secured: ServerProcess,
) -> None:
    status, text, challenge = _post(secured, "create-topic", {"topic": "Orders1"}, None)
    assert status == 401 and challenge.startswith("Basic") and "no credentials" in text
    wrong = Credentials("app", "not-its-secret")
    assert _post(secured, "create-topic", {"topic": "Orders1"}, wrong)[0] == 401
    status, text, _ = _post(secured, "create-topic", {"topic": "Orders1"}, APP)
    assert status == 403
    assert "user='app'" in text and "topic:Orders1" in text and "'admin'" in text
    assert "Orders1" not in _topics(secured)


def test_should_create_a_topic_for_an_administrator(secured: ServerProcess) -> None:
    status, text, _ = _post(secured, "create-topic", {"topic": "Orders2", "queues": "2"}, ROOT)
    assert (status, text) == (200, "topic created: Orders2")
    assert "Orders2" in _topics(secured)
    status, text, _ = _post(secured, "create-topic", {"queues": "2"}, ROOT)
    assert status == 400 and "topic" in text


def test_should_reset_a_group_offsets_for_an_administrator(secured: ServerProcess) -> None:
    _post(secured, "create-topic", {"topic": "Orders3", "queues": "1"}, ROOT)
    config = ProducerConfig(credentials=ROOT)
    with Producer("console-admin-producer", secured.grpc_address, config=config) as producer:
        producer.send_batch([Message("Orders3", b"%d" % i) for i in range(5)])
    with GrpcClient(secured.grpc_address, credentials=ROOT, timeout_s=30) as admin:
        admin.commit_offset("orders", "Orders3", 0, 5)
    form = {"group": "orders", "topic": "Orders3", "target": "earliest"}
    status, text, _ = _post(secured, "reset-offset", form, APP)  # app may sub, not admin
    assert status == 403 and "group:orders" in text
    status, text, _ = _post(secured, "reset-offset", form, ROOT)
    assert (status, text) == (200, "offsets reset: queue 0 -> 0")
    with GrpcClient(secured.grpc_address, credentials=ROOT, timeout_s=30) as admin:
        assert admin.query_offset("orders", "Orders3", 0) == 0


def test_should_stay_read_only_without_an_acl(tmp_path: Path) -> None:
    process = start_observed_broker(tmp_path)
    try:
        status, text, _ = _post(process, "create-topic", {"topic": "Anything"}, ROOT)
        assert status == 403 and "read-only" in text
        with urllib.request.urlopen(process.ready["console"] + "topics", timeout=10) as page:
            assert "create-topic" not in page.read().decode()  # no form to post
    finally:
        process.stop()
