"""``AsyncLitePullConsumer``: the lite pull consumer for asyncio.

::

    consumer = AsyncLitePullConsumer("group", "127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    async with consumer:                   # starts once; shuts down at the end
        async for message in consumer:     # ends when the consumer shuts down
            await handle(message)
        batch = await consumer.poll(timeout_ms=1000)

It wraps a :class:`~consumer.DefaultLitePullConsumer` (:attr:`AsyncLitePullConsumer.sync`) and
shares its pull tasks, offsets and rebalancing. Waiting for messages costs no thread: the
consumer's delivery path (a pull callback queuing a consume request) calls a listener, which
hands a wake-up to the event loop (``loop.call_soon_threadsafe``); ``poll`` takes what is
cached without blocking and otherwise awaits that wake-up, up to its timeout. Calls that talk
to a broker (start, shutdown, commit, seek, offsets, a subscribe while running) run in the
loop's default executor, as blocking control calls; ``pause``, ``resume`` and ``assignment``
need no I/O and are plain methods.

Caller: one event loop (the one that called :meth:`AsyncLitePullConsumer.start`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterable, Mapping
from types import TracebackType
from typing import TypeVar, TypeVarTuple

from aeromq.aio._constructor import built_from
from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    MessageExt,
    MessageQueue,
    MessageSelector,
)
from aeromq.consumer import DefaultLitePullConsumer, ServiceState

__all__ = ["AsyncLitePullConsumer"]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")


class AsyncLitePullConsumer:
    """The asyncio face of :class:`~consumer.DefaultLitePullConsumer` (see the module doc);
    the constructor takes the same arguments."""

    @built_from(DefaultLitePullConsumer)
    def __init__(self, sync: DefaultLitePullConsumer) -> None:
        """Takes the arguments of :class:`~consumer.DefaultLitePullConsumer` (see
        ``built_from``)."""
        self.sync = sync
        """The threaded consumer underneath (for what this class does not wrap)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arrived = asyncio.Event()

    # -- lifecycle -------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        """Whether the consumer underneath has started and not shut down."""
        return self.sync.is_running

    async def start(self) -> None:
        """Start the consumer (see ``DefaultLitePullConsumer.start``) and listen to its
        deliveries on this event loop."""
        loop = asyncio.get_running_loop()
        if self._loop is not None:
            raise IllegalStateError(
                "the consumer was started before", state=self.sync.service_state.name
            )
        self._loop = loop
        self.sync.add_delivery_listener(self._on_delivery)
        try:
            await loop.run_in_executor(None, self.sync.start)
        except BaseException:
            self.sync.remove_delivery_listener(self._on_delivery)
            raise

    async def shutdown(self) -> None:
        """Shut the consumer down (commits and persists as the threaded one); waiting polls
        return ``[]`` and iterations end."""
        await asyncio.get_running_loop().run_in_executor(None, self.sync.shutdown)
        self._arrived.set()

    async def __aenter__(self) -> AsyncLitePullConsumer:
        state = self.sync.service_state
        if state is ServiceState.CREATE_JUST:
            await self.start()
        elif state is not ServiceState.RUNNING:
            raise IllegalStateError(
                "a shut down consumer cannot be entered again", state=state.name
            )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.shutdown()

    def _on_delivery(self) -> None:
        """On a pull thread: wake the loop's waiting polls (never blocks)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed in between
            loop.call_soon_threadsafe(self._arrived.set)

    # -- poll ----------------------------------------------------------------------------

    async def poll(self, timeout_ms: int | None = None) -> list[MessageExt]:
        """What ``DefaultLitePullConsumer.poll`` returns, awaiting up to ``timeout_ms``
        (default ``poll_timeout_ms``) for the first messages; ``[]`` on timeout or shutdown.
        Raises IllegalStateError when not running."""
        consumer = self.sync
        if timeout_ms is None:
            timeout_ms = consumer.config.poll_timeout_ms
        if timeout_ms < 0:
            raise IllegalArgumentError("timeout must not be negative", timeout_ms=timeout_ms)
        deadline = time.monotonic() + timeout_ms / 1000.0
        while True:
            self._arrived.clear()
            messages = consumer.poll(0)  # what is cached, without waiting
            remaining_s = deadline - time.monotonic()
            if messages or remaining_s <= 0 or not consumer.is_running:
                return messages
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining_s)
            except TimeoutError:
                return consumer.poll(0) if consumer.is_running else []
            if not consumer.is_running:  # woken by shutdown
                return []

    def __aiter__(self) -> AsyncIterator[MessageExt]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[MessageExt]:
        consumer = self.sync
        while consumer.is_running:
            try:
                batch = await self.poll()
            except IllegalStateError:
                if consumer.is_running:
                    raise
                return
            for message in batch:
                yield message

    # -- subscription, position and commit ---------------------------------------------

    async def subscribe(
        self, topic: str, sub_expression: str | MessageSelector | None = "*"
    ) -> None:
        """``DefaultLitePullConsumer.subscribe`` (it tells the brokers when running)."""
        await self._call(self.sync.subscribe, topic, sub_expression)

    async def unsubscribe(self, topic: str) -> None:
        """``DefaultLitePullConsumer.unsubscribe``, in the executor: the topic's queues are
        dropped (their offsets persisted) and the group is told. Raises IllegalStateError
        after shutdown."""
        await self._call(self.sync.unsubscribe, topic)

    async def assign(self, queues: Collection[MessageQueue]) -> None:
        """``DefaultLitePullConsumer.assign``, in the executor: own exactly ``queues``; when
        running, new queues get their start offset before this returns. Raises
        IllegalArgumentError for no queue or a malformed one, IllegalStateError after
        ``subscribe`` or shutdown."""
        await self._call(self.sync.assign, queues)

    def assignment(self) -> set[MessageQueue]:
        """The queues owned now (no I/O: not awaited)."""
        return self.sync.assignment()

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling the owned ``queues`` (others are ignored); what is cached is still
        polled. No I/O: not awaited."""
        self.sync.pause(queues)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        """Pull ``queues`` again (within ``pull_time_delay_ms_when_pause``). Not awaited."""
        self.sync.resume(queues)

    async def seek(self, queue: MessageQueue, offset: int) -> None:
        """``DefaultLitePullConsumer.seek``, in the executor: the owned ``queue``'s next pull
        starts at ``offset`` (min <= offset <= max), its cached messages discarded. Raises
        IllegalStateError for a queue not owned, OffsetIllegalError out of range."""
        await self._call(self.sync.seek, queue, offset)

    async def position(self, queue: MessageQueue) -> int:
        """``DefaultLitePullConsumer.position``, in the executor: the offset of the next
        message ``poll`` returns from the owned ``queue``."""
        return await self._call(self.sync.position, queue)

    async def beginning_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's min offset, asked of its broker in the executor; any queue."""
        return await self._call(self.sync.beginning_offsets, list(queues))

    async def end_offsets(self, queues: Iterable[MessageQueue]) -> dict[MessageQueue, int]:
        """Each queue's max offset (the offset its next message gets), asked of its broker
        in the executor; any queue."""
        return await self._call(self.sync.end_offsets, list(queues))

    async def commit(
        self,
        offsets: Mapping[MessageQueue, int] | Collection[MessageQueue] | None = None,
        persist: bool = True,
    ) -> None:
        """``DefaultLitePullConsumer.commit``, in the executor: every owned queue's consume
        offset (``None``), the given ``{queue: next offset}``, or the given queues' consume
        offsets; persisted to the broker now unless ``persist`` is False."""
        await self._call(self.sync.commit, offsets, persist)

    async def committed(self, queue: MessageQueue) -> int:
        """The group's committed offset of ``queue`` (memory first, then the broker, in the
        executor); -1 if none."""
        return await self._call(self.sync.committed, queue)

    async def _call(self, function: Callable[[*_Ts], _T], *arguments: *_Ts) -> _T:
        return await asyncio.get_running_loop().run_in_executor(None, function, *arguments)

    def __repr__(self) -> str:
        return f"AsyncLitePullConsumer({self.sync!r})"
