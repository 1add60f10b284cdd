"""``AsyncProducer``: the producer for asyncio.

::

    async with AsyncProducer("my-group", "127.0.0.1:8081") as producer:
        result = await producer.send(Message("orders", b"..."))
        results = await producer.send_batch([Message("orders", b"1"), Message("orders", b"2")])
        await producer.send_value("orders", {"id": 42})       # with a value_serializer
        rows = await producer.send_columns("orders", arrow_bodies, keys=arrow_keys)

It wraps a :class:`~producer.Producer` (:attr:`AsyncProducer.sync`): a send is the producer's
asynchronous send, whose future completes on the session's poller thread and is bridged to the
event loop (``asyncio.wrap_future``), so an awaited send holds no thread. The offer itself may
wait up to ``offer_timeout_ms`` while a broker back-pressures, as ``send_async`` does. Starting
and shutting down (route lookups, sessions) run in the loop's default executor.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from aeromq.aio._constructor import built_from
from aeromq.client import Message, MessageQueue
from aeromq.producer import (
    ColumnSelector,
    ColumnSendResults,
    Producer,
    QueueSelector,
    SendResult,
)

if TYPE_CHECKING:
    import pyarrow

    from aeromq.producer import ColumnValues, TextValues

__all__ = ["AsyncProducer"]


class AsyncProducer:
    """The asyncio face of :class:`~producer.Producer` (see the module doc); the constructor
    takes the same arguments."""

    @built_from(Producer)
    def __init__(self, sync: Producer) -> None:
        """Takes the arguments of :class:`~producer.Producer` (see ``built_from``)."""
        self.sync = sync
        """The threaded producer underneath."""

    async def start(self) -> AsyncProducer:
        """``Producer.start`` in the loop's default executor; idempotent."""
        await asyncio.get_running_loop().run_in_executor(None, self.sync.start)
        return self

    async def shutdown(self) -> None:
        """``Producer.shutdown`` in the loop's default executor; idempotent."""
        await asyncio.get_running_loop().run_in_executor(None, self.sync.shutdown)

    async def __aenter__(self) -> AsyncProducer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.shutdown()

    async def send(
        self,
        message: Message,
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: object = None,
    ) -> SendResult:
        """Send one message; its ``SendResult`` once the broker stored it. Raises what
        ``Producer.send`` raises."""
        future = self.sync.send_async(
            message, timeout_ms=timeout_ms, queue=queue, selector=selector, arg=arg
        )
        return await asyncio.wrap_future(future)

    async def send_batch(
        self,
        messages: Sequence[Message],
        timeout_ms: int | None = None,
        *,
        queue: MessageQueue | None = None,
    ) -> Sequence[SendResult]:
        """Send messages of one topic to one queue as one request (all stored or none)."""
        future = self.sync.send_batch_async(messages, timeout_ms=timeout_ms, queue=queue)
        return await asyncio.wrap_future(future)

    async def send_value(
        self,
        topic: str,
        value: object,
        timeout_ms: int | None = None,
        *,
        tags: str | None = None,
        keys: str | Sequence[str] = (),
        properties: dict[str, str] | None = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send ``value`` through the ``value_serializer`` (``Producer.send_value``)."""
        message = self.sync.message_of(topic, value, tags=tags, keys=keys, properties=properties)
        return await self.send(message, timeout_ms, queue=queue)

    async def send_columns(
        self,
        topic: str,
        bodies: ColumnValues,
        *,
        tags: TextValues | None = None,
        keys: TextValues | None = None,
        properties: Mapping[str, TextValues] | pyarrow.Array | pyarrow.ChunkedArray | None = None,
        queue: MessageQueue | None = None,
        selector: QueueSelector | ColumnSelector | None = None,
        arg: object = None,
        timeout_ms: int | None = None,
    ) -> ColumnSendResults:
        """Send a column set, a message per row (``Producer.send_columns``): every row's result
        once all are stored. The rows are checked and encoded in the loop's thread (one C pass
        per batch, no Python object per row); the batches go as async sends."""
        future = self.sync.send_columns_async(
            topic,
            bodies,
            tags=tags,
            keys=keys,
            properties=properties,
            queue=queue,
            selector=selector,
            arg=arg,
            timeout_ms=timeout_ms,
        )
        return await asyncio.wrap_future(future)

    def __repr__(self) -> str:
        return f"AsyncProducer({self.sync!r})"
