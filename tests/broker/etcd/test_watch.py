"""Watching a prefix against a real etcd (puts and deletes in order, from a past revision,
resumed after etcd restarts, cancelled) and the watch's ends with scripted streams (history
compacted, cancelled by etcd, a callback that raises)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence

from aeromq.broker.etcd import (
    EtcdClient,
    EtcdCompactedError,
    EtcdRequestError,
    EtcdServer,
    EventType,
    PrefixWatcher,
    WatchEvent,
    put_op,
)
from aeromq.proto.etcd import kv_pb2, rpc_pb2


class _Seen:
    """A watch callback that records what it is given, thread-safely."""

    def __init__(self) -> None:
        self.batches: list[tuple[WatchEvent, ...]] = []
        self._lock = threading.Lock()

    def __call__(self, events: Sequence[WatchEvent]) -> None:
        with self._lock:
            self.batches.append(tuple(events))

    @property
    def events(self) -> list[WatchEvent]:
        with self._lock:
            return [event for batch in self.batches for event in batch]

    def changes(self) -> list[tuple[str, str, bytes]]:
        return [(e.type.name, e.kv.key, e.kv.value) for e in self.events]

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[WatchEvent]:
        deadline_s = time.monotonic() + timeout_s
        while len(self.events) < count and time.monotonic() < deadline_s:
            time.sleep(0.01)
        return self.events


def test_should_see_puts_and_deletes_under_the_prefix_in_order(etcd: EtcdClient) -> None:
    seen = _Seen()
    watcher = etcd.watch_prefix("/g/members/", seen)
    try:
        assert watcher.wait_created(5)
        etcd.put("/g/members/0", b"a")
        etcd.put("/g/state", b"not watched")
        etcd.put("/g/members/1", b"b")
        etcd.delete("/g/members/0")
        last = etcd.put("/g/members/1", b"c")

        events = seen.wait_for(4)
    finally:
        watcher.cancel()

    assert seen.changes() == [
        ("PUT", "/g/members/0", b"a"),
        ("PUT", "/g/members/1", b"b"),
        ("DELETE", "/g/members/0", b""),
        ("PUT", "/g/members/1", b"c"),
    ]
    revisions = [event.revision for event in events]
    assert revisions == sorted(set(revisions))
    assert watcher.next_revision == last + 1


def test_should_replay_history_from_a_start_revision(etcd: EtcdClient) -> None:
    first = etcd.put("/g/state", b"1")
    etcd.put("/g/state", b"2")
    seen = _Seen()

    watcher = etcd.watch_prefix("/g/", seen, start_revision=first)
    try:
        seen.wait_for(2)
    finally:
        watcher.cancel()

    assert [value for _, _, value in seen.changes()] == [b"1", b"2"]


def test_should_deliver_a_transaction_s_changes_in_one_call(etcd: EtcdClient) -> None:
    seen = _Seen()
    watcher = etcd.watch_prefix("/g/", seen)
    try:
        assert watcher.wait_created(5)
        etcd.transaction([], [put_op("/g/a", b"1"), put_op("/g/b", b"2")])
        seen.wait_for(2)
    finally:
        watcher.cancel()

    assert [[e.kv.key for e in batch] for batch in seen.batches] == [["/g/a", "/g/b"]]


def test_should_see_a_lease_expiry_as_a_delete(etcd: EtcdClient) -> None:
    lease = etcd.grant_lease(1)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)
    seen = _Seen()
    watcher = etcd.watch_prefix("/g/members/", seen)
    try:
        events = seen.wait_for(1)
    finally:
        watcher.cancel()

    assert [(e.type, e.kv.key) for e in events] == [(EventType.DELETE, "/g/members/0")]


def test_should_resume_after_etcd_restarts_without_losing_or_repeating(
    etcd_server: EtcdServer, etcd: EtcdClient
) -> None:
    seen = _Seen()
    watcher = etcd.watch_prefix("/g/", seen)
    try:
        assert watcher.wait_created(5)
        etcd.put("/g/a", b"before kill")
        seen.wait_for(1)
        etcd_server.kill()
        etcd_server.start()
        etcd.put("/g/b", b"after restart")
        etcd.delete("/g/a")
        seen.wait_for(3)
        etcd_server.stop()
        etcd_server.start()
        etcd.put("/g/c", b"after stop")
        seen.wait_for(4)
    finally:
        watcher.cancel()

    assert seen.changes() == [
        ("PUT", "/g/a", b"before kill"),
        ("PUT", "/g/b", b"after restart"),
        ("DELETE", "/g/a", b""),
        ("PUT", "/g/c", b"after stop"),
    ]
    assert watcher.reconnects >= 2
    assert watcher.error is None


def test_should_deliver_nothing_after_cancel(etcd: EtcdClient) -> None:
    seen = _Seen()
    watcher = etcd.watch_prefix("/g/", seen)
    assert watcher.wait_created(5)
    etcd.put("/g/a", b"1")
    seen.wait_for(1)

    watcher.cancel()
    etcd.put("/g/b", b"2")
    time.sleep(0.3)

    assert not watcher.running
    assert seen.changes() == [("PUT", "/g/a", b"1")]


class _ScriptedCall:
    """A Watch stream that answers with a script of responses, then stays open."""

    def __init__(self, responses: list[rpc_pb2.WatchResponse]) -> None:
        self._responses = responses
        self._cancelled = threading.Event()

    def __iter__(self) -> Iterator[rpc_pb2.WatchResponse]:
        yield from self._responses
        self._cancelled.wait(10)

    def cancel(self) -> bool:
        self._cancelled.set()
        return True


def _scripted(
    responses: list[rpc_pb2.WatchResponse], requests: list[rpc_pb2.WatchRequest]
) -> Callable[[Iterator[rpc_pb2.WatchRequest]], _ScriptedCall]:
    def watch(request_iterator: Iterator[rpc_pb2.WatchRequest]) -> _ScriptedCall:
        requests.append(next(request_iterator))
        return _ScriptedCall(responses)

    return watch


def _put(key: str, revision: int) -> kv_pb2.Event:
    return kv_pb2.Event(
        type=kv_pb2.Event.PUT,
        kv=kv_pb2.KeyValue(key=key.encode(), mod_revision=revision, create_revision=revision),
    )


def _created(revision: int) -> rpc_pb2.WatchResponse:
    return rpc_pb2.WatchResponse(header=rpc_pb2.ResponseHeader(revision=revision), created=True)


def _watcher(
    responses: list[rpc_pb2.WatchResponse],
    callback: Callable[[Sequence[WatchEvent]], None],
    errors: list[Exception],
    requests: list[rpc_pb2.WatchRequest],
    start_revision: int = 0,
) -> PrefixWatcher:
    watch = _scripted(responses, requests)
    return PrefixWatcher(
        watch,  # type: ignore[arg-type]
        rpc_pb2.WatchCreateRequest(key=b"/g/", range_end=b"/g0"),
        callback,
        endpoint="127.0.0.1:1",
        prefix="/g/",
        start_revision=start_revision,
        on_error=errors.append,
    )


def _run_until_done(watcher: PrefixWatcher) -> None:
    watcher.start()
    deadline_s = time.monotonic() + 5
    while watcher.error is None and time.monotonic() < deadline_s:
        time.sleep(0.01)
    watcher.cancel()


def test_should_end_the_watch_when_its_history_is_compacted() -> None:
    seen, errors, requests = _Seen(), list[Exception](), list[rpc_pb2.WatchRequest]()
    compacted = rpc_pb2.WatchResponse(canceled=True, compact_revision=40)
    watcher = _watcher([_created(50), compacted], seen, errors, requests, start_revision=12)

    _run_until_done(watcher)

    assert requests[0].create_request.start_revision == 12
    assert isinstance(watcher.error, EtcdCompactedError)
    assert errors == [watcher.error]
    assert "start_revision=12" in str(watcher.error) and "compact_revision=40" in str(watcher.error)


def test_should_end_the_watch_when_etcd_cancels_it() -> None:
    seen, errors, requests = _Seen(), list[Exception](), list[rpc_pb2.WatchRequest]()
    cancelled = rpc_pb2.WatchResponse(canceled=True, cancel_reason="permission denied")
    watcher = _watcher([_created(5), cancelled], seen, errors, requests)

    _run_until_done(watcher)

    assert isinstance(watcher.error, EtcdRequestError)
    assert "permission denied" in str(watcher.error)


def test_should_end_the_watch_when_the_callback_raises() -> None:
    errors: list[Exception] = []
    requests: list[rpc_pb2.WatchRequest] = []
    calls: list[int] = []

    def callback(events: Sequence[WatchEvent]) -> None:
        calls.append(events[0].revision)
        raise RuntimeError("bug in the callback")

    events = rpc_pb2.WatchResponse(events=[_put("/g/a", 6)])
    more = rpc_pb2.WatchResponse(events=[_put("/g/b", 7)])
    watcher = _watcher([_created(5), events, more], callback, errors, requests)

    _run_until_done(watcher)

    assert calls == [6]
    assert isinstance(watcher.error, RuntimeError)
    assert errors == [watcher.error]
    assert watcher.next_revision == 6  # the failed batch was not counted as delivered


def test_should_start_from_the_created_revision_when_watching_from_now() -> None:
    seen, errors, requests = _Seen(), list[Exception](), list[rpc_pb2.WatchRequest]()
    watcher = _watcher([_created(41)], seen, errors, requests)
    watcher.start()
    try:
        assert watcher.wait_created(5)
        assert watcher.next_revision == 42
    finally:
        watcher.cancel()
