"""``ConsumeRequestCache``: pulled batches waiting for ``poll``, oldest first.

A :class:`ConsumeRequest` is one FOUND pull's messages with their queue and the process queue
they were cached in (RocketMQ's ``ConsumeRequest``). Pull callbacks :meth:`put` them; ``poll``
:meth:`take` s them, waiting up to its timeout for the first one, and may :meth:`put_back` the
part of a batch it could not return (``max_poll_records``). A seek removes its queue's requests
(:meth:`remove_queue`). The size feeds the pull task's first flow-control check
(``size * pull_batch_size > pull_threshold_for_all``).

Thread safety: one condition variable; ``take`` wakes as soon as a request arrives, or at
:meth:`close`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from aeromq.client import MessageExt, MessageQueue
from aeromq.consumer.process_queue import ProcessQueue

__all__ = ["ConsumeRequest", "ConsumeRequestCache"]


@dataclass(frozen=True, slots=True)
class ConsumeRequest:
    """Messages of one pull, their queue, and the process queue holding them."""

    messages: Sequence[MessageExt]
    queue: MessageQueue
    process_queue: ProcessQueue


class ConsumeRequestCache:
    """A blocking FIFO of :class:`ConsumeRequest` (see the module doc)."""

    __slots__ = ("_closed", "_condition", "_requests")

    def __init__(self) -> None:
        self._requests: deque[ConsumeRequest] = deque()
        self._condition = threading.Condition(threading.Lock())
        self._closed = False

    def __len__(self) -> int:
        return len(self._requests)

    def put(self, request: ConsumeRequest) -> None:
        with self._condition:
            self._requests.append(request)
            self._condition.notify()

    def put_back(self, request: ConsumeRequest) -> None:
        """Return a request to the head of the cache (the rest of a split batch)."""
        with self._condition:
            self._requests.appendleft(request)
            self._condition.notify()

    def take(self, timeout_s: float) -> ConsumeRequest | None:
        """The oldest request, waiting up to ``timeout_s`` (0: do not wait); None on timeout."""
        with self._condition:
            requests = self._requests
            if requests:
                return requests.popleft()
            if timeout_s <= 0:
                return None
            deadline = time.monotonic() + timeout_s
            while not requests:
                if self._closed:
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._condition.wait(remaining)
            return requests.popleft()

    def remove_queue(self, queue: MessageQueue) -> int:
        """Remove every request of ``queue``; how many were removed."""
        with self._condition:
            before = len(self._requests)
            kept = [request for request in self._requests if request.queue != queue]
            self._requests.clear()
            self._requests.extend(kept)
            return before - len(kept)

    def close(self) -> None:
        """Shutdown: every waiting and later ``take`` returns at once (None when empty)."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
