"""``/metrics`` of a live ``aeromq broker`` process under load: the counters match exactly what
producer threads sent and a consumer group consumed; a stopped group's lag grows by what is
produced meanwhile and returns to 0 once it catches up."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aeromq.broker.testing import ServerProcess, start_broker_process, start_namesrv_process
from aeromq.client import Message, MessageExt, MessageQueue
from aeromq.client.grpc_client import GrpcClient
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from tests.broker.observability._scrape import (
    scrape,
    start_observed_broker,
    total,
    value,
    wait_for_metric,
)

DOCS = Path(__file__).resolve().parents[3] / "docs" / "guides"
QUEUES = 4
PRODUCERS = 4
BATCHES = 20  # per producer thread
BATCH = 8  # messages per batch


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_observed_broker(tmp_path_factory.mktemp("metrics"))
    try:
        yield process
    finally:
        process.stop()


def _topic(broker: ServerProcess, name: str) -> str:
    with GrpcClient(broker.grpc_address, timeout_s=30.0) as admin:
        admin.create_topic(name, read_queue_nums=QUEUES, write_queue_nums=QUEUES)
    return name


def _consumer(broker: ServerProcess, group: str, topic: str) -> DefaultLitePullConsumer:
    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=group,
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            broker_suspend_max_time_ms=1000,
        )
    )
    consumer.subscribe(topic)
    consumer.start()
    return consumer


def _poll(
    consumer: DefaultLitePullConsumer, count: int, timeout_s: float = 60.0
) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout_s
    while len(got) < count and time.monotonic() < deadline:
        got += consumer.poll(500)
    return got


def _send(producer: Producer, topic: str, batches: int, tag: str) -> int:
    """``batches`` batches of ``BATCH`` messages round the queues; the bytes of their bodies."""
    body_bytes = 0
    for index in range(batches):
        bodies = [b"%s-%d-%d" % (tag.encode(), index, n) for n in range(BATCH)]
        body_bytes += sum(map(len, bodies))
        queue = MessageQueue(topic, "broker-a", index % QUEUES)
        producer.send_batch(
            [Message(topic, body, keys=f"{tag}-{index}") for body in bodies], queue=queue
        )
    return body_bytes


def test_should_name_the_metrics_and_console_urls_in_the_ready_line(broker: ServerProcess) -> None:
    metrics, console = broker.ready["metrics"], broker.ready["console"]
    assert metrics.startswith("http://127.0.0.1:") and metrics.endswith("/metrics")
    assert console == metrics.removesuffix("metrics") + "console/"
    with urllib.request.urlopen(metrics, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        assert b"# TYPE aeromq_store_free_bytes gauge" in response.read()


def test_should_count_exactly_what_was_sent_and_consumed_under_load(broker: ServerProcess) -> None:
    topic = _topic(broker, "LoadedTopic")
    sent = PRODUCERS * BATCHES * BATCH
    consumer = _consumer(broker, "loaded-group", topic)
    body_bytes: list[int] = []
    errors: list[BaseException] = []

    def produce(worker: int) -> None:
        try:
            with Producer(f"load-{worker}", broker.grpc_address) as producer:
                body_bytes.append(_send(producer, topic, BATCHES, f"w{worker}"))
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(PRODUCERS)]
    for thread in threads:
        thread.start()
    try:
        got = _poll(consumer, sent)  # consumed while the producers send
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        assert len(got) == sent and len({(m.queue.queue_id, m.queue_offset) for m in got}) == sent
        consumer.commit_sync()
    finally:
        consumer.shutdown()
    url = broker.ready["metrics"]
    samples = wait_for_metric(  # the lag is 0 at once; the ASYNC flush comes within 500 ms
        url,
        lambda s: (
            total(s, "aeromq_group_lag_messages", group="loaded-group") == 0
            and total(s, "aeromq_store_flush_latency_seconds_count") >= 1
        ),
    )
    assert value(samples, "aeromq_topic_messages_in_total", topic=topic) == sent
    assert value(samples, "aeromq_topic_messages_out_total", topic=topic) == sent
    assert value(samples, "aeromq_topic_bytes_in_total", topic=topic) > sum(body_bytes)
    assert value(samples, "aeromq_topic_bytes_out_total", topic=topic) == value(
        samples, "aeromq_topic_bytes_in_total", topic=topic
    )
    batches = PRODUCERS * BATCHES
    assert value(samples, "aeromq_topic_produce_latency_seconds_count", topic=topic) == batches
    assert (
        value(samples, "aeromq_topic_produce_latency_seconds_bucket", topic=topic, le="+Inf")
        == batches
    )
    # bounds, not figures: every append took some time and none the 30 s of the last bucket
    produce_sum = value(samples, "aeromq_topic_produce_latency_seconds_sum", topic=topic)
    assert 0 < produce_sum < batches * 30
    assert (
        value(samples, "aeromq_topic_produce_latency_seconds_bucket", topic=topic, le="30.0")
        == batches
    )
    pulls = value(samples, "aeromq_topic_pull_latency_seconds_count", topic=topic)
    assert pulls >= batches / QUEUES  # at least one pull answered per queue's batch run
    assert total(samples, "aeromq_queue_max_offset", topic=topic) == sent
    assert total(samples, "aeromq_group_committed_offset", group="loaded-group") == sent
    assert total(samples, "aeromq_group_max_offset", group="loaded-group") == sent
    assert value(samples, "aeromq_group_last_commit_timestamp_seconds", group="loaded-group",
                 topic=topic, queue_id="0") > time.time() - 600  # fmt: skip
    assert total(samples, "aeromq_request_errors_total", kind="send") == 0
    assert value(samples, "aeromq_store_commit_log_max_offset_bytes") >= value(
        samples, "aeromq_topic_bytes_in_total", topic=topic
    )
    assert value(samples, "aeromq_store_size_bytes", part="commitlog") > 0
    assert value(samples, "aeromq_store_free_bytes") > 0
    assert value(samples, "aeromq_store_flush_latency_seconds_count") >= 1
    assert value(samples, "aeromq_session_events_total", event="sessions_opened") >= PRODUCERS + 1
    positions = total(samples, "aeromq_transport_subscriber_position_bytes", stream_id="1001")
    assert positions > value(samples, "aeromq_topic_bytes_in_total", topic=topic)


def test_should_grow_a_stopped_groups_lag_by_what_is_produced_and_return_it_to_zero(
    broker: ServerProcess,
) -> None:
    topic = _topic(broker, "LaggingTopic")
    url = broker.ready["metrics"]
    with Producer("lag-producer", broker.grpc_address) as producer:
        _send(producer, topic, 4, "first")
        consumer = _consumer(broker, "stopped-group", topic)
        try:
            assert len(_poll(consumer, 4 * BATCH)) == 4 * BATCH
            consumer.commit_sync()
        finally:
            consumer.shutdown()

        def lag(samples: dict) -> float:  # type: ignore[type-arg]
            return total(samples, "aeromq_group_lag_messages", group="stopped-group", topic=topic)

        assert lag(wait_for_metric(url, lambda s: lag(s) == 0)) == 0
        assert value(scrape(url), "aeromq_group_members", group="stopped-group") == 0
        _send(producer, topic, 3, "second")
        assert lag(wait_for_metric(url, lambda s: lag(s) == 3 * BATCH)) == 3 * BATCH
        _send(producer, topic, 2, "third")
        assert lag(wait_for_metric(url, lambda s: lag(s) == 5 * BATCH)) == 5 * BATCH
    consumer = _consumer(broker, "stopped-group", topic)
    try:
        caught_up = _poll(consumer, 5 * BATCH)
        assert len(caught_up) == 5 * BATCH
        assert not any(m.body.startswith(b"first") for m in caught_up)
        consumer.commit_sync()
        assert lag(wait_for_metric(url, lambda s: lag(s) == 0)) == 0
    finally:
        consumer.shutdown()


def test_should_serve_a_read_only_console_beside_the_metrics(broker: ServerProcess) -> None:
    base = broker.ready["console"].removesuffix("console/")
    with urllib.request.urlopen(base, timeout=10) as response:  # / goes to the console
        assert response.url == broker.ready["console"]
    for path, code in (("console/nothing", 404), ("elsewhere", 404)):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(base + path, timeout=10)
        assert refused.value.code == code
        refused.value.close()
    post = urllib.request.Request(broker.ready["console"] + "topics", data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(post, timeout=10)
    assert refused.value.code == 405
    refused.value.close()


def test_should_serve_no_http_port_when_metrics_port_is_none(tmp_path: Path) -> None:
    process = start_broker_process(
        tmp_path / "data", extra_args=["--ingress-udp-endpoint", "none", "--metrics-port", "none"]
    )
    try:
        assert (process.ready["metrics"], process.ready["console"]) == ("none", "none")
    finally:
        process.stop()


def test_should_document_every_metric_and_chart_only_real_ones(broker: ServerProcess) -> None:
    with urllib.request.urlopen(broker.ready["metrics"], timeout=10) as response:
        families = {f.name for f in text_string_to_metric_families(response.read().decode())}
    guide = (DOCS / "observability.md").read_text(encoding="utf-8")
    undocumented = sorted(
        name for name in families if f"`{name}" not in guide and f"`{name}_total`" not in guide
    )
    assert undocumented == []
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text(encoding="utf-8"))
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    charted = {
        re.sub(r"_(bucket|total)$", "", name)
        for expr in exprs
        for name in re.findall(r"\baeromq_[a-z_]+", expr)
    }
    assert charted and charted <= families, sorted(charted - families)


def test_should_refuse_to_start_on_a_metrics_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "aeromq", "broker", "--data-dir", str(tmp_path / "data"),
             "--grpc-port", "0", "--ingress-udp-endpoint", "none", "--metrics-port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 1, done
    assert "cannot listen for /metrics and the console" in done.stderr
    assert f"metrics_port={port}" in done.stderr


def test_should_show_every_broker_of_the_name_server_on_the_cluster_page(tmp_path: Path) -> None:
    namesrv = start_namesrv_process()
    brokers: list[ServerProcess] = []
    try:
        for name in ("broker-a", "broker-b"):
            brokers.append(
                start_broker_process(
                    tmp_path / name,
                    name,
                    ["--ingress-udp-endpoint", "none", "--namesrv-heartbeat-interval", "200ms"],
                    namesrv_address=namesrv.grpc_address,
                )
            )
        url = brokers[0].ready["console"] + "fragments/cluster"
        deadline = time.monotonic() + 30
        page = ""
        while time.monotonic() < deadline and brokers[1].grpc_address not in page:
            with urllib.request.urlopen(url, timeout=10) as response:
                page = response.read().decode()
            time.sleep(0.1)
        assert f"the name server {namesrv.grpc_address}" in page
        assert all(b.grpc_address in page for b in brokers), page
    finally:
        for process in (*brokers, namesrv):
            process.stop()
