"""The asyncio producer's columnar send against a broker in this process: the same rows stored
as the threaded producer's, its errors raised from the awaited call."""

from __future__ import annotations

import pyarrow as pa
import pytest

from aeromq.aio import AsyncProducer
from aeromq.broker.broker import Broker
from aeromq.client import MessageIllegalError
from aeromq.producer import ProducerConfig

from .conftest import Puller
from .test_columns import by_row, topic  # noqa: F401  (the fresh topic fixture)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_should_send_columns_from_the_event_loop(
    broker: Broker,
    puller: Puller,
    topic: str,  # noqa: F811
) -> None:
    config = ProducerConfig(send_timeout_ms=3_000)
    async with AsyncProducer("test-producers", broker.grpc_address, config=config) as producer:
        results = await producer.send_columns(
            topic,
            pa.array([b"a", b"b", b"c"]),
            tags="T",
            properties={"n": pa.array(["1", "2", "3"])},
        )
        with pytest.raises(MessageIllegalError) as raised:
            await producer.send_columns(topic, pa.array([b"a", b""]))
    assert raised.value.values["row"] == 1
    stored = by_row(puller, topic, results)
    assert [(m.body, m.tags, m.get_property("n")) for m in stored] == [
        (b"a", "T", "1"),
        (b"b", "T", "2"),
        (b"c", "T", "3"),
    ]
