"""A thread that keeps one etcd lease alive and knows until when it is surely valid.

Every ``interval_ms`` (TTL/4 by default, etcd's own client uses TTL/3) it sends one keep-alive.
The lease is known valid until ``deadline_s = send time of the last answered keep-alive + TTL``:
etcd renews the lease when it receives the request, after it was sent, so etcd's expiry is never
earlier (Aeron's way of being conservative: time an answer from when the question left). A
keep-alive that fails (etcd down, no answer in time) is retried every ``retry_ms`` and leaves the
deadline where it was; the holder sees its lease run out and stops acting on it.

Caller: :meth:`EtcdClient.keep_lease_alive`; the broker's leader self-fencing (to come) reads
:attr:`LeaseKeeper.deadline_s`. Affects: the lease's expiry in etcd.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final, Protocol

from aeromq.broker.etcd._errors import EtcdError, EtcdLeaseNotFoundError
from aeromq.broker.etcd._types import Lease

__all__ = ["LeaseKeeper"]

_log = logging.getLogger(__name__)
# After a failed keep-alive, try again this soon (or at the next regular one, if sooner).
_RETRY_MS: Final = 100


class _Renew(Protocol):
    def __call__(self, lease_id: int, *, timeout_ms: int | None = None) -> Lease: ...


class LeaseKeeper:
    """Renews ``lease`` from a daemon thread until :meth:`stop`, or until etcd says the lease has
    ended (:attr:`lost`; ``on_lost`` is called once, on the keeper's thread)."""

    def __init__(
        self,
        renew: _Renew,
        lease: Lease,
        *,
        interval_ms: int | None = None,
        on_lost: Callable[[EtcdError], None] | None = None,
    ) -> None:
        self._renew = renew
        self._lease_id = lease.id
        self._interval_s = (lease.ttl_s * 1000 / 4 if interval_ms is None else interval_ms) / 1000
        self._on_lost = on_lost
        self._deadline_s = lease.deadline_s
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lost: EtcdError | None = None
        self.last_error: EtcdError | None = None
        """The error of the last keep-alive that failed (None until one fails)."""
        self.renewals = 0
        """Keep-alives answered."""
        self.failures = 0
        """Keep-alives that failed."""

    @property
    def lease_id(self) -> int:
        """The lease this keeper renews."""
        return self._lease_id

    @property
    def interval_s(self) -> float:
        """Seconds between two keep-alives."""
        return self._interval_s

    @property
    def deadline_s(self) -> float:
        """Monotonic time (``time.monotonic()``) until which the lease is known valid."""
        with self._lock:
            return self._deadline_s

    @property
    def lost(self) -> EtcdError | None:
        """The error with which etcd said the lease had ended (None while it has not)."""
        with self._lock:
            return self._lost

    def is_valid(self, now_s: float | None = None, margin_s: float = 0.0) -> bool:
        """Whether the lease is known valid at ``now_s`` (monotonic; now by default) for
        ``margin_s`` more seconds."""
        now_s = time.monotonic() if now_s is None else now_s
        return self._lost is None and now_s + margin_s < self.deadline_s

    def start(self) -> None:
        """Start renewing (the first keep-alive goes at once)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"aeromq-etcd-lease-{self._lease_id:x}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop renewing (the lease then ends a TTL after the last keep-alive; revoke it to end
        it at once). Waits for the thread, at most ``timeout_s``."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        next_s = time.monotonic()
        timeout_ms = max(1, round(self._interval_s * 1000))
        while not self._stop.wait(max(0.0, next_s - time.monotonic())):
            started_s = time.monotonic()
            try:
                renewed = self._renew(self._lease_id, timeout_ms=timeout_ms)
            except EtcdLeaseNotFoundError as exc:
                self._end(exc)
                return
            except EtcdError as exc:
                self.failures += 1
                self.last_error = exc
                _log.debug("etcd keep-alive failed: %s", exc)
                next_s = min(started_s + self._interval_s, time.monotonic() + _RETRY_MS / 1000)
                continue
            with self._lock:
                self._deadline_s = max(self._deadline_s, renewed.deadline_s)
            self.renewals += 1
            next_s = started_s + self._interval_s

    def _end(self, error: EtcdLeaseNotFoundError) -> None:
        with self._lock:
            self._lost = error
        _log.warning("etcd lease lost: %s", error)
        if self._on_lost is not None:
            self._on_lost(error)
