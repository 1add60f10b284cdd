"""Fixtures of the data-plane tests: a store in ``tmp_path`` with a topic, the processors over
it, and a real media driver with small terms and fast timers."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.store import FlushMode, MessageStore, StoreConfig, TopicConfig
from aeromq.common import encode_batch, encode_properties
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.doorbell import DOORBELL_TYPE_ID, Doorbell
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.driver import MediaDriver, MediaDriverContext

MS = 1_000_000
TERM = 64 * 1024
TOPIC = "orders"


def store_config(data_dir: Path, **overrides: Any) -> StoreConfig:
    values: dict[str, Any] = {
        "commit_log_segment_bytes": 8 << 20,
        "consume_queue_entries_per_segment": 1024,
        "index_enabled": False,
        "flush_interval_ms": 50,
    }
    values.update(overrides)
    return StoreConfig(data_dir, **values)


@pytest.fixture
def open_store(tmp_path: Path) -> Iterator[Callable[..., MessageStore]]:
    """``open_store(**config overrides)``: a started store with topic ``orders`` (4 queues)."""
    opened: list[MessageStore] = []

    def factory(**overrides: Any) -> MessageStore:
        store = MessageStore(store_config(tmp_path / f"store{len(opened)}", **overrides))
        store.start()
        store.topic_config.create_or_update(TopicConfig(TOPIC, 4, 4))
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.shutdown()


@pytest.fixture
def store(open_store: Callable[..., MessageStore]) -> MessageStore:
    return open_store()


@pytest.fixture
def sync_store(open_store: Callable[..., MessageStore]) -> MessageStore:
    return open_store(flush_mode=FlushMode.SYNC)


@contextlib.contextmanager
def hold_service(store: MessageStore) -> Iterator[PullHoldService]:
    """A started long-poll hold service that ``store``'s arrivals wake; shut down after."""
    service = PullHoldService(store.get_max_offset, max_suspend_ms=5_000)
    service.start()
    store.add_arrival_listener(service.on_arrival)
    try:
        yield service
    finally:
        service.shutdown()


@pytest.fixture
def hold(store: MessageStore) -> Iterator[PullHoldService]:
    with hold_service(store) as service:
        yield service


@pytest.fixture
def send(store: MessageStore) -> SendProcessor:
    return SendProcessor(store, "broker-a")


@pytest.fixture
def pull(store: MessageStore, hold: PullHoldService) -> PullProcessor:
    return PullProcessor(store, hold, "broker-a")


def record_batch(
    *bodies: bytes,
    topic: str = TOPIC,
    tags: str | None = None,
    keys: Sequence[str] = (),
    msg_id: str = "",
    properties: dict[str, str] | None = None,
) -> bytes:
    """A producer's record batch of ``bodies``, each with the same tag, keys, id, properties."""
    props = dict(properties or {})
    if keys:
        props["KEYS"] = " ".join(keys)
    if msg_id:
        props["UNIQ_KEY"] = msg_id
    encoded = encode_properties(props)
    return bytes(
        encode_batch(
            topic.encode(),
            list(bodies),
            [tags] * len(bodies),
            [encoded] * len(bodies),
            born_timestamp_ms=1_700_000_000_000,
        )
    )


def send_request(
    *bodies: bytes, topic: str = TOPIC, queue_id: int = 0, **fields: Any
) -> messages_pb2.SendMessageRequest:
    """A send of one record batch of ``bodies`` (``fields``: see :func:`record_batch`)."""
    batch = record_batch(*bodies, topic=topic, **fields) if bodies else b""
    return messages_pb2.SendMessageRequest(
        producer_group="pg", topic=topic, queue_id=queue_id, batch=batch
    )


def pull_request(
    queue_id: int = 0, offset: int = 0, **fields: Any
) -> messages_pb2.PullMessageRequest:
    return messages_pb2.PullMessageRequest(
        consumer_group="cg",
        topic=fields.pop("topic", TOPIC),
        queue_id=queue_id,
        queue_offset=offset,
        **fields,
    )


class Answers(list[Any]):
    """An ``on_done`` that keeps what it is given."""

    def __call__(self, response: Any) -> None:
        self.append(response)


def driver_context(aeron_dir: Path, **overrides: Any) -> MediaDriverContext:
    values: dict[str, Any] = {
        "aeron_dir": str(aeron_dir),
        "term_buffer_length": TERM,
        "ipc_term_buffer_length": TERM,
        "to_driver_buffer_length": 64 * 1024 + 768,
        "to_clients_buffer_length": 64 * 1024 + 128,
        "counters_values_buffer_length": 64 * 1024,
        "error_buffer_length": 64 * 1024,
        "timer_interval_ns": 10 * MS,
        "publication_linger_timeout_ns": 50 * MS,
        "client_liveness_timeout_ns": 10_000 * MS,
        "counter_free_to_reuse_timeout_ns": 0,
        "conductor_idle_strategy": "sleep-ms:1",
    }
    values.update(overrides)
    return MediaDriverContext(**values)


@pytest.fixture
def media_driver(shm_dir: Path) -> Iterator[MediaDriver]:
    driver = MediaDriver.launch(driver_context(shm_dir / "aeron"))
    yield driver
    driver.close()


@pytest.fixture
def aeron(media_driver: MediaDriver) -> Iterator[Aeron]:
    with Aeron.connect(
        AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    ) as client:
        yield client


def wait_for(condition: Callable[[], object], timeout_s: float = 5.0, what: str = "it") -> None:
    import time

    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.001)


def agent_with_doorbell(
    aeron: Aeron,
    send: object,
    pull: object,
    config: SessionServerConfig,
    clock_ns: Callable[[], int] = time.monotonic_ns,
) -> tuple[SessionAgent, Doorbell, DoorbellIdleStrategy]:
    """A session agent on an IPC ingress (stream 1001) of ``aeron`` with a doorbell of its own
    (a counter of the driver), and its doorbell idle strategy (parks of at most 5 ms, told
    ``all_rung`` by the agent): not started. ``clock_ns``: its duty cycles' clock."""
    counter = aeron.add_counter(DOORBELL_TYPE_ID, label="doorbell: test agent")
    bell = Doorbell.for_counter(aeron.counters_reader, counter.id)
    agent = SessionAgent(
        aeron,
        [aeron.add_subscription("aeron:ipc", 1001)],
        send,  # type: ignore[arg-type]
        pull,  # type: ignore[arg-type]
        "broker-a",
        config=config,
        doorbell=bell,
        clock_ns=clock_ns,
    )
    idle = DoorbellIdleStrategy(bell, max_park_period_ns=5 * MS)
    idle.all_rung = agent.all_rung
    return agent, bell, idle
