r"""``Poller``: the take side of ``poll``: pulled messages out of the consume-request cache.

Pull tasks put each pulled batch in the cache as a consume request (``consumer.pull_task``);
:meth:`Poller.take` drains it for ``poll`` and ``poll_batch``: up to a limit of messages
gathered across queues and requests, waiting up to the timeout for the first request only. A
request larger than the room left is cut and its rest put back first in line. Each request is
taken under its queue's lock and only if the queue is still owned by the same process queue
(not dropped, not reset by a seek), so a drop or a seek either comes after (and commits or
replaces what this poll returns) or before (and those messages, not committed, are not
returned: the queue's next owner or read delivers them). The queue's consume offset then moves
past them.

Before taking: a pulled batch that failed its check is raised once (oldest first), and auto
commit commits what earlier polls returned (when due). After: the consume message hooks run
(``register_consume_message_hook``) and ``poll`` sets each message's ``value`` by the
``value_deserializer``; ``poll_batch`` returns the chunks as one
:class:`~consumer.MessageBatch`, with no Python object per message.

What the application sees: up to ``max_poll_records`` messages (default 500) per poll, where
RocketMQ returns exactly one pull batch (at most ``pull_batch_size``, default 10, messages of
one queue), which users took for "poll returns only one message" (RocketMQ #5498, #1761).
Messages of one queue come in offset order. Delivery is at least once: a message comes again
after a seek, or when its consumer died before committing it. ``poll``'s ``MessageExt``\ s of a
small pull come with every field set (``consumer/_pulled_messages.py``), those of a larger one
read their fields from the pulled record batches when asked; a pulled batch that failed its
CRC is never delivered.

Caller: the consumer façade, from one thread at a time (the poll lock). Affects: the cache,
the owned queues' consume offsets, the counters (``messages_polled``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from aeromq.client import IllegalArgumentError, MessageExt, call_hooks
from aeromq.common import is_retry_topic
from aeromq.consumer._hooks import ConsumeMessageContext, ConsumeMessageHook
from aeromq.consumer.commits import Committer
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.consume_request_cache import ConsumeRequest
from aeromq.consumer.message_batch import MessageBatch, as_message_batch
from aeromq.consumer.retry import restore_original_topics
from aeromq.consumer.services import ConsumerServices, ServiceState

__all__ = ["DeliveryListener", "Poller", "ValueDeserializer"]

ValueDeserializer = Callable[[bytes], object]
"""``value_deserializer(body)``: what ``message.value`` holds for each polled message."""

DeliveryListener = Callable[[], None]
"""``listener()``: pulled messages are waiting for ``poll`` (called on a pull thread; must be
quick and must not block: the asyncio consumer hands it to its event loop)."""


class Poller:
    """``poll`` and ``poll_batch`` over the consume-request cache (see the module doc)."""

    def __init__(
        self,
        services: ConsumerServices,
        committer: Committer,
        value_deserializer: ValueDeserializer | None,
    ) -> None:
        self._services = services
        self._committer = committer
        self._assigned = services.assigned
        self._cache = services.cache
        self._counters = services.counters
        self._failures = services.failures
        self._value_deserializer = value_deserializer
        self._consume_hooks: list[ConsumeMessageHook] = []
        self._poll_lock = threading.Lock()
        self._retry_topics: dict[str, bool] = {}
        """Topic -> whether it is a retry topic (``restore_original_topics`` called only for
        those: two Python calls a poll fewer)."""

    def poll(self, timeout_ms: int | None) -> list[MessageExt]:
        """Caller: ``poll``. Affects: see the module doc. Raises IllegalStateError when not
        running, :class:`~client.CorruptMessageError` once per batch that failed its check."""
        config = self._services.config
        out: list[MessageExt] = []
        retry_topics = self._retry_topics
        for chunk in self.take(config, timeout_ms, config.max_poll_records):
            topic = chunk[0].topic if chunk else ""  # (a chunk: one queue's messages)
            retry = retry_topics.get(topic)
            if retry is None:
                retry = retry_topics[topic] = is_retry_topic(topic)
            out.extend(restore_original_topics(chunk) if retry else chunk)
        if out and self._consume_hooks:
            self._run_consume_hooks(ConsumeMessageContext(config.consumer_group, out))
        deserializer = self._value_deserializer
        if deserializer is not None:
            for message in out:
                message.value = deserializer(message.body)
        return out

    def poll_batch(self, timeout_ms: int | None, max_records: int | None) -> MessageBatch:
        """Caller: ``poll_batch``. Affects: as :meth:`poll`. Raises IllegalArgumentError for
        ``max_records`` <= 0."""
        config = self._services.config
        limit = config.max_poll_records if max_records is None else max_records
        if limit <= 0:
            raise IllegalArgumentError("max_records must be positive", max_records=limit)
        chunks = self.take(config, timeout_ms, limit)
        batch = MessageBatch.concat([as_message_batch(chunk) for chunk in chunks])
        if chunks and self._consume_hooks:
            group = config.consumer_group
            self._run_consume_hooks(ConsumeMessageContext(group, batch=batch))
        return batch

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Caller: ``register_consume_message_hook``. Affects: every poll that returns
        messages from now on runs ``hook`` after the hooks registered before it."""
        self._consume_hooks = [*self._consume_hooks, hook]

    def _run_consume_hooks(self, context: ConsumeMessageContext) -> None:
        hooks = self._consume_hooks
        call_hooks(hooks, "consume_message_before", context)
        context.success = True
        call_hooks(hooks, "consume_message_after", context)

    def take(
        self, config: LitePullConsumerConfig, timeout_ms: int | None, limit: int
    ) -> list[Sequence[MessageExt]]:
        """Up to ``limit`` messages from the cache, in chunks (see the module doc), once the
        consumer is found running, a failed batch raised and auto commit done if due; one
        method, not a check and a take (a Python call fewer a poll). Caller: :meth:`poll` and
        :meth:`poll_batch`."""
        services = self._services
        if services.state is not ServiceState.RUNNING:
            services.check_running()
        if timeout_ms is None:
            timeout_ms = config.poll_timeout_ms
        if timeout_ms < 0:
            raise IllegalArgumentError("timeout must not be negative", timeout_ms=timeout_ms)
        with self._poll_lock:
            failures = self._failures
            if failures:
                raise failures.popleft()
            committer = self._committer
            if config.auto_commit and time.monotonic() >= committer.next_auto_commit_s:
                committer.maybe_auto_commit()  # (due: asked here, a Python call fewer a poll)
            # then the take itself, under the poll lock
            cache = self._cache
            assigned = self._assigned
            deadline = time.monotonic() + timeout_ms / 1000.0
            result: list[Sequence[MessageExt]] = []
            taken = 0
            while taken < limit:
                if taken:
                    if not cache.size():  # (what take(0) would say, without its call)
                        break
                    request = cache.take(0.0, first=False)  # (the first ran the deferred)
                else:
                    request = cache.take(deadline - time.monotonic())
                if request is None:
                    break
                process_queue = request.process_queue
                state = assigned.state(request.queue)
                if state is None:
                    continue
                with state.lock:
                    # Under the queue's lock, so a drop or seek either comes after (and commits
                    # or replaces what this poll returns) or before (and these messages, not
                    # committed, are not returned: the queue's next owner or read delivers them).
                    if process_queue.dropped or state.process_queue is not process_queue:
                        continue
                    messages = request.messages
                    room = limit - taken
                    if len(messages) > room:
                        cache.put_back(
                            ConsumeRequest(messages[room:], request.queue, process_queue)
                        )
                        messages = messages[:room]
                    offset = process_queue.remove_messages(messages)
                    if offset >= 0:
                        state.consume_offset = offset
                result.append(messages)
                taken += len(messages)
                if services.state is not ServiceState.RUNNING:
                    break
            self._counters.messages_polled += taken
            return result
