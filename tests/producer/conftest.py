"""A broker in this process (embedded driver, gRPC on port 0, UDP on a free port) shared by a
module's tests, with topics made over gRPC; and producers of it."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aeromq.broker.broker import Broker
from aeromq.broker.config import BrokerConfig
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.consumer import MessageBatch
from aeromq.producer import Producer, ProducerConfig
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.driver import MediaDriverContext
from tests._pulled import pulled
from tests.client._group import FakeGroup, GroupSessions

MIB = 1 << 20


def small_driver() -> MediaDriverContext:
    return MediaDriverContext(
        term_buffer_length=1 * MIB,
        ipc_term_buffer_length=1 * MIB,
        term_buffer_sparse_file=True,
        conductor_idle_strategy="sleep-ms:1",
        shared_idle_strategy="sleep-ms:1",
        timer_interval_ns=10_000_000,
        publication_linger_timeout_ns=50_000_000,
    )


def start_broker(data_dir: Path, **overrides: Any) -> Broker:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "grpc_port": 0,
        "rocketmq_port": 0,
        "ingress_udp_endpoint": "127.0.0.1:0",
        "commit_log_segment_bytes": 16 * MIB,
        "index_enabled": False,
        "default_queue_count": 4,
        "session_timeout_ms": 2_000,
    }
    values.update(overrides)
    return Broker(BrokerConfig(**values), driver_context=small_driver()).start()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = start_broker(tmp_path_factory.mktemp("broker"))
    with GrpcClient(broker.grpc_address) as admin:
        for topic in ("orders", "events", "keyed"):
            admin.create_topic(topic, read_queue_nums=4, write_queue_nums=4)
    yield broker
    broker.shutdown()


@pytest.fixture
def make_producer(broker: Broker) -> Iterator[Callable[..., Producer]]:
    made: list[Producer] = []

    def factory(**kwargs: Any) -> Producer:
        config = kwargs.pop("config", ProducerConfig(send_timeout_ms=3_000))
        producer = Producer("test-producers", broker.grpc_address, config=config, **kwargs)
        made.append(producer.start())
        return producer

    yield factory
    for producer in made:
        producer.shutdown()


@pytest.fixture
def producer(make_producer: Callable[..., Producer]) -> Producer:
    return make_producer()


class Puller:
    """Reads a queue of the broker straight through a transport session."""

    def __init__(self, broker: Broker) -> None:
        self._aeron = Aeron.connect(AeronContext(aeron_dir=broker.aeron_dir))
        self.session = ClientSession.connect(self._aeron, SessionConfig())

    def pull(
        self, topic: str, queue_id: int, offset: int = 0, **fields: Any
    ) -> messages_pb2.PullMessageResponse:
        request = messages_pb2.PullMessageRequest(
            consumer_group="test-puller", topic=topic, queue_id=queue_id,
            queue_offset=offset, max_msg_nums=32, **fields,
        )  # fmt: skip
        return self.session.request(request, 5_000)

    def messages(self, topic: str, queue_id: int, offset: int = 0) -> MessageBatch:
        """The messages from ``offset``, read from the answer as the consumer reads them."""
        return pulled(self.pull(topic, queue_id, offset), topic, queue_id, offset)

    def close(self) -> None:
        self.session.close()
        self._aeron.close()


@pytest.fixture
def puller(broker: Broker) -> Iterator[Puller]:
    opened = Puller(broker)
    yield opened
    opened.close()


def wait_for(condition: Callable[[], object], timeout_s: float = 5.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(0.002)


GROUP_MEMBERS = ("127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083")
"""The scripted broker group's members (``tests/client/_group.py``): A, B and C."""


@pytest.fixture
def group() -> Iterator[FakeGroup]:
    """A scripted broker group of three members serving topic ``orders`` (A leads)."""
    made = FakeGroup(*GROUP_MEMBERS, topic="orders")
    yield made
    made.close()


def group_producer(group: FakeGroup, **config: Any) -> Producer:
    """A started producer whose routes and sessions reach the scripted ``group``."""
    producer = Producer("group-producer", route=group.resolver(), config=ProducerConfig(**config))
    producer.start()
    path = producer._send_path
    assert path.sessions is not None
    path.sessions.close()
    path.sessions = GroupSessions(group)
    return producer
