"""``NotifyingRequestCache``: the consume-request cache, telling listeners when it fills.

The asyncio consumer (:mod:`aeromq.aio`) waits for messages on its event loop, not in a thread
per call: it registers a listener here, which the pull path calls (on the pull callback's
thread) each time it queues a consume request, and once at :meth:`close`. The listener must be
quick and must not block; the asyncio consumer's only hands a wake-up to its loop
(``loop.call_soon_threadsafe``). The threaded ``poll`` still waits on the cache's own condition
variable: both are woken by the same :meth:`put`.

Caller: the pull tasks (``put``), ``poll`` (``put_back``), shutdown (``close``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from aeromq.consumer.consume_request_cache import ConsumeRequest, ConsumeRequestCache

__all__ = ["CacheListener", "NotifyingRequestCache"]

_log = logging.getLogger(__name__)

CacheListener = Callable[[], None]
"""``listener()``: requests may be waiting in the cache, or it was closed."""


class NotifyingRequestCache(ConsumeRequestCache):
    """A :class:`~consumer.consume_request_cache.ConsumeRequestCache` that calls its
    listeners after every ``put``, ``put_back`` and ``close`` (see the module doc)."""

    __slots__ = ("_listeners",)

    def __init__(self) -> None:
        super().__init__()
        self._listeners: tuple[CacheListener, ...] = ()

    def add_listener(self, listener: CacheListener) -> None:
        self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: CacheListener) -> None:
        self._listeners = tuple(known for known in self._listeners if known is not listener)

    def put(self, request: ConsumeRequest) -> None:
        super().put(request)
        self._notify()

    def put_back(self, request: ConsumeRequest) -> None:
        super().put_back(request)
        self._notify()

    def close(self) -> None:
        super().close()
        self._notify()

    def _notify(self) -> None:
        for listener in self._listeners:
            try:
                listener()
            except Exception:
                _log.exception("consume request listener failed: %r", listener)
