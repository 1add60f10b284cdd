"""A thread that watches the keys under one prefix and hands their changes to a callback, in
revision order, across broken streams.

It opens etcd's ``Watch`` stream with one create request. Each response's events go to the
callback together (the changes of one revision, a transaction's, stay in one call). It remembers
the next revision it has not seen; when the stream breaks (etcd killed, restarted, unreachable)
it opens a new one from that revision after a short back-off, so no change is lost or seen
twice while etcd keeps its history (etcd keeps it across restarts; only a compaction drops it,
which ends the watch with :class:`EtcdCompactedError`).

Caller: :meth:`EtcdClient.watch_prefix`; the broker's election (to come) watches its group's
``state`` and ``members/``. Affects: nothing in etcd.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

import grpc

from aeromq.broker.etcd._errors import EtcdCompactedError, EtcdRequestError
from aeromq.broker.etcd._types import WatchEvent
from aeromq.proto.etcd import rpc_pb2

__all__ = ["PrefixWatcher"]

_log = logging.getLogger(__name__)
# Back-off between two attempts to open a broken watch again: doubles from the first to the last.
_FIRST_BACKOFF_S: Final = 0.05
_LAST_BACKOFF_S: Final = 1.0

if TYPE_CHECKING:  # generic in the type stubs only
    _WatchMethod: TypeAlias = grpc.StreamStreamMultiCallable[
        rpc_pb2.WatchRequest, rpc_pb2.WatchResponse
    ]


class PrefixWatcher:
    """Delivers the changes of the keys in ``create``'s range to ``callback`` from a daemon
    thread until :meth:`cancel`.

    The watch ends by itself on an error that a new stream would not mend: history compacted
    (:class:`EtcdCompactedError`), etcd cancelling the watch (:class:`EtcdRequestError`), or
    ``callback`` raising; the error is then kept in :attr:`error` and passed to ``on_error``.
    """

    def __init__(
        self,
        watch: _WatchMethod,
        create: rpc_pb2.WatchCreateRequest,
        callback: Callable[[Sequence[WatchEvent]], None],
        *,
        endpoint: str,
        prefix: str,
        start_revision: int = 0,
        on_error: Callable[[Exception], None] | None = None,
    ) -> None:
        self._watch = watch
        self._create = create
        self._callback = callback
        self._on_error = on_error
        self._endpoint = endpoint
        self._prefix = prefix
        self._next_revision = start_revision
        self._lock = threading.Lock()
        self._call: grpc.Call | None = None
        self._cancelled = threading.Event()
        self._created = threading.Event()
        self._thread: threading.Thread | None = None
        self.error: Exception | None = None
        """The error that ended the watch (None while it runs, and after :meth:`cancel`)."""
        self.reconnects = 0
        """Streams that broke and were opened again."""
        self._streams_created = 0

    @property
    def next_revision(self) -> int:
        """The first revision not delivered yet (0 until the first stream is created when the
        watch started from now)."""
        with self._lock:
            return self._next_revision

    def start(self) -> None:
        """Open the watch on the watcher's thread."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="aeromq-etcd-watch", daemon=True)
        self._thread.start()

    def wait_created(self, timeout_s: float) -> bool:
        """Wait until etcd has created the first stream's watch; False after ``timeout_s``."""
        return self._created.wait(timeout_s)

    def cancel(self, timeout_s: float = 5.0) -> None:
        """End the watch: no callback starts after this returns (when called from another
        thread; from the callback itself, after the callback returns). Waits at most
        ``timeout_s`` for the thread."""
        self._cancelled.set()
        with self._lock:
            call = self._call
        if call is not None:
            call.cancel()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    @property
    def running(self) -> bool:
        """Whether the watcher's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        backoff_s = _FIRST_BACKOFF_S
        while not self._cancelled.is_set():
            created = self._streams_created
            try:
                if self._stream():
                    return
                broken: str = "stream ended"
            except grpc.RpcError as exc:
                call = exc if isinstance(exc, grpc.Call) else None
                broken = f"{call.code().name}: {call.details()}" if call else str(exc)
            if self._cancelled.is_set():
                return
            if self._streams_created > created:  # it had worked: start the back-off again
                backoff_s = _FIRST_BACKOFF_S
            self.reconnects += 1
            _log.info(
                "etcd watch broken, watching again: endpoint=%s prefix=%r from_revision=%d (%s)",
                self._endpoint,
                self._prefix,
                self.next_revision,
                broken,
            )
            if self._cancelled.wait(backoff_s):
                return
            backoff_s = min(backoff_s * 2, _LAST_BACKOFF_S)

    def _stream(self) -> bool:
        """Run one stream; True when the watch is over (cancelled or failed for good)."""
        requests: queue.SimpleQueue[rpc_pb2.WatchRequest | None] = queue.SimpleQueue()
        create = rpc_pb2.WatchCreateRequest()
        create.CopyFrom(self._create)
        create.start_revision = self.next_revision
        requests.put(rpc_pb2.WatchRequest(create_request=create))
        responses = self._watch(_drain(requests))
        with self._lock:
            self._call = responses
        try:
            if self._cancelled.is_set():
                return True
            for response in responses:
                if self._cancelled.is_set():
                    return True
                if not self._on_response(response):
                    return True
            return self._cancelled.is_set()
        finally:
            requests.put(None)
            responses.cancel()
            with self._lock:
                self._call = None

    def _on_response(self, response: rpc_pb2.WatchResponse) -> bool:
        """Handle one response; False when the watch is over."""
        if response.created:
            with self._lock:
                if self._next_revision == 0:
                    self._next_revision = response.header.revision + 1
            self._streams_created += 1
            self._created.set()
        if response.canceled:
            values = {
                "endpoint": self._endpoint,
                "prefix": self._prefix,
                "start_revision": self.next_revision,
            }
            if response.compact_revision:
                message = "etcd watch history compacted"
                compact_revision = response.compact_revision
                self._fail(EtcdCompactedError(message, **values, compact_revision=compact_revision))
            else:
                message = "etcd cancelled the watch"
                details = response.cancel_reason
                self._fail(EtcdRequestError(message, **values, details=details))
            return False
        if not response.events:
            return True
        events = tuple(WatchEvent.from_proto(event) for event in response.events)
        try:
            self._callback(events)
        except Exception as exc:
            _log.exception("etcd watch callback raised: prefix=%r", self._prefix)
            self._fail(exc)
            return False
        with self._lock:
            self._next_revision = events[-1].revision + 1
        return True

    def _fail(self, error: Exception) -> None:
        self.error = error
        if self._on_error is not None:
            self._on_error(error)


def _drain(
    requests: queue.SimpleQueue[rpc_pb2.WatchRequest | None],
) -> Iterator[rpc_pb2.WatchRequest]:
    """The stream's requests: what is put on ``requests`` until None."""
    while (request := requests.get()) is not None:
        yield request
