"""The broker's web console in headless Chromium: every page loads, the rate and lag charts
draw data, and the message browser finds messages by key, by id and by queue and offset.
Screenshots of each go to ``test-artifacts/console/``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, MessageQueue
from aeromq.client.grpc_client import GrpcClient
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer, SendResult
from tests.broker.observability._scrape import start_observed_broker
from tests.console._browser import chromium, screenshot

TOPIC = "ConsoleOrders"
GROUP = "console-billing"
WAIT_S = 30.0


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_observed_broker(tmp_path_factory.mktemp("console"))
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def sent(broker: ServerProcess) -> list[SendResult]:
    """30 orders over two seconds (so the history has rates), 10 of them consumed by a group
    that then stops (so it has lag); returns the send results."""
    with GrpcClient(broker.grpc_address, timeout_s=30.0) as admin:
        admin.create_topic(TOPIC, read_queue_nums=2, write_queue_nums=2)
    results: list[SendResult] = []
    with Producer("console-producer", broker.grpc_address) as producer:
        for index in range(30):
            message = Message(TOPIC, b"order body %d" % index, keys=f"order-{index}")
            results.append(producer.send(message, queue=MessageQueue(TOPIC, "broker-a", 0)))
            time.sleep(0.07)
    consumer = DefaultLitePullConsumer(
        config=LitePullConsumerConfig(
            consumer_group=GROUP,
            endpoints=(broker.grpc_address,),
            consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
            pull_batch_size=10,
            auto_commit=False,
        )
    )
    consumer.assign([MessageQueue(TOPIC, "broker-a", 0)])
    consumer.start()
    try:
        got = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < 10 and time.monotonic() < deadline:
            got += consumer.poll(500)
        consumer.commit({MessageQueue(TOPIC, "broker-a", 0): 10})  # persisted at shutdown
    finally:
        consumer.shutdown()
    return results


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    instance = chromium(tmp_path / "chromium-profile")
    try:
        yield instance
    finally:
        instance.quit()


def _wait(browser: webdriver.Chrome) -> WebDriverWait:  # type: ignore[type-arg]
    return WebDriverWait(browser, WAIT_S, poll_frequency=0.2)


@pytest.mark.parametrize(
    ("page", "title", "element_id"),
    [
        ("", "Overview", "broker"),
        ("topics", "Topics", "topics"),
        ("groups", "Groups", f"group-{GROUP}"),
        ("messages", "Messages", "message-search"),
        ("cluster", "Cluster", "brokers"),
        ("transport", "Transport", "counters"),
    ],
)
def test_should_load_every_console_page(
    broker: ServerProcess,
    sent: list[SendResult],
    browser: webdriver.Chrome,
    page: str,
    title: str,
    element_id: str,
) -> None:
    browser.get(broker.ready["console"] + page)
    _wait(browser).until(expected_conditions.presence_of_element_located((By.ID, element_id)))
    assert browser.find_element(By.TAG_NAME, "h1").text == title
    assert browser.title == f"aeromq broker-a: {title}"
    text = browser.find_element(By.TAG_NAME, "main").text
    if page == "topics":
        assert TOPIC in text
    if page == "groups":
        assert f"{GROUP}: lag 20" in text  # 30 stored on queue 0, 10 consumed
    if page == "cluster":
        assert broker.grpc_address in text
    if page == "transport":
        assert "NAKs sent" in text and "client-heartbeat" in text
    screenshot(browser, f"page-{page or 'overview'}")


def test_should_draw_the_rate_and_lag_charts_with_data(
    broker: ServerProcess, sent: list[SendResult], browser: webdriver.Chrome
) -> None:
    browser.get(broker.ready["console"])

    def drawn(chart_id: str) -> bool:
        chart = browser.find_element(By.ID, chart_id)
        points = int(chart.get_attribute("data-points") or 0)
        return points >= 2 and float(chart.get_attribute("data-max") or 0) > 0

    _wait(browser).until(lambda _: drawn("rates-chart") and drawn("lag-chart"))
    for chart_id in ("rates-chart", "lag-chart"):
        chart = browser.find_element(By.ID, chart_id)
        canvas = chart.find_element(By.TAG_NAME, "canvas")
        assert canvas.size["width"] > 100 and canvas.size["height"] > 50
        assert int(chart.get_attribute("data-series") or 0) >= 1
    legend = browser.find_element(By.ID, "rates-chart").text
    assert f"{TOPIC} in" in legend
    assert float(browser.find_element(By.ID, "lag-chart").get_attribute("data-max") or 0) == 20
    screenshot(browser, "charts")


def _search(browser: webdriver.Chrome, broker: ServerProcess, **fields: str) -> str:
    browser.get(broker.ready["console"] + "messages")
    for name, text in fields.items():
        box = browser.find_element(By.ID, f"q-{name}")
        box.clear()
        box.send_keys(text)
    browser.find_element(By.ID, "search-button").click()
    _wait(browser).until(
        lambda b: b.find_elements(By.ID, "messages") or b.find_elements(By.ID, "search-error")
    )
    return str(browser.find_element(By.ID, "results").text)


def test_should_find_a_message_by_key(
    broker: ServerProcess, sent: list[SendResult], browser: webdriver.Chrome
) -> None:
    found = _search(browser, broker, topic=TOPIC, key="order-17")
    assert "order body 17" in found
    assert "order body 16" not in found and "order body 18" not in found
    assert sent[17].offset_msg_id in found
    screenshot(browser, "messages-by-key")


def test_should_find_a_message_by_id_and_by_queue_and_offset(
    broker: ServerProcess, sent: list[SendResult], browser: webdriver.Chrome
) -> None:
    found = _search(browser, broker, id=sent[5].offset_msg_id)
    assert "order body 5" in found and "order body 6" not in found
    screenshot(browser, "messages-by-id")
    found = _search(browser, broker, topic=TOPIC, queue="0", offset="28")
    assert "order body 28" in found and "order body 29" in found
    assert "order body 27" not in found
    screenshot(browser, "messages-by-offset")
