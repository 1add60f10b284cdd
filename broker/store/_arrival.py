""" "A message arrived in (topic, queue)": the hook long polling waits on.

The store calls ``notify`` after each put, outside its put lock. Listeners (the broker's
pull-hold service, RocketMQ's ``MessageArrivingListener``) are called on the writer's thread
and must return quickly; ``wait`` blocks a thread until the queue has news or time runs out.
With no listener and no waiter, ``notify`` costs one attribute test. A listener added for one
topic (the timer service's, for its own topic) is called for that topic's arrivals alone: the
others' puts make one dictionary lookup for it, not a call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

__all__ = ["ArrivalListener", "ArrivalNotifier"]

_log = logging.getLogger(__name__)

ArrivalListener = Callable[[str, int, int], None]
"""``listener(topic, queue_id, max_offset)``: ``max_offset`` is the queue's new end."""


class ArrivalNotifier:
    """Listeners for every arrival and waiters for one queue's next arrival."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: tuple[ArrivalListener, ...] = ()
        self._by_topic: dict[str, tuple[ArrivalListener, ...]] = {}  # (see module)
        self._waiters: dict[tuple[str, int], list[threading.Event]] = {}
        self.active = False

    def _update_active(self) -> None:
        """``active``: whether a put has anyone to tell (under ``_lock``)."""
        self.active = bool(self._listeners or self._by_topic or self._waiters)

    def add_listener(self, listener: ArrivalListener, topic: str | None = None) -> None:
        """Call ``listener`` after every put, or after the puts to ``topic`` alone."""
        with self._lock:
            if topic is None:
                self._listeners = (*self._listeners, listener)
            else:
                self._by_topic[topic] = (*self._by_topic.get(topic, ()), listener)
            self.active = True

    def remove_listener(self, listener: ArrivalListener) -> None:
        """Stop calling ``listener`` (for every topic it was added for)."""
        with self._lock:
            # (==, not is: a bound method is a new object at each access, equal to the others)
            self._listeners = tuple(x for x in self._listeners if x != listener)
            for topic, listeners in list(self._by_topic.items()):
                kept = tuple(x for x in listeners if x != listener)
                if kept:
                    self._by_topic[topic] = kept
                else:
                    del self._by_topic[topic]
            self._update_active()

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        """Tell listeners and wake the queue's waiters (the caller tests ``active`` first)."""
        listeners = self._listeners
        if self._by_topic:  # (a tuple and an empty one add up to the same tuple: no copy)
            listeners += self._by_topic.get(topic, ())
        for listener in listeners:
            try:
                listener(topic, queue_id, max_offset)
            except Exception:
                _log.exception("an arrival listener raised: topic=%s queue_id=%d", topic, queue_id)
        if self._waiters:
            with self._lock:
                events = self._waiters.pop((topic, queue_id), None)
                self._update_active()
            if events:
                for event in events:
                    event.set()

    def wait(self, topic: str, queue_id: int, ready: Callable[[], bool], timeout_s: float) -> bool:
        """Block until ``ready()`` (re-checked after each arrival in the queue) or the
        timeout; returns ``ready()``."""
        key = (topic, queue_id)
        while True:
            with self._lock:
                if ready():
                    return True
                if timeout_s <= 0:
                    return False
                event = threading.Event()
                self._waiters.setdefault(key, []).append(event)
                self.active = True
            began = time.monotonic()
            woken = event.wait(timeout_s)
            timeout_s -= time.monotonic() - began
            if not woken:
                with self._lock:
                    waiting = self._waiters.get(key)
                    if waiting is not None and event in waiting:
                        waiting.remove(event)
                        if not waiting:
                            del self._waiters[key]
                    self._update_active()
                return ready()
