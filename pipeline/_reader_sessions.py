"""The transport sessions of the queue readers (:mod:`pipeline._queue_reader`): one pool per
process, kept from one read to the next.

Spark runs a Python worker's tasks one after another in the same process (it reuses its
workers), so a session outlives the read that opened it: the next read in the process takes it
again instead of connecting anew. A new session costs tens of milliseconds of wall time and
about 25 ms of CPU between the two processes (an Aeron client, the CONNECT, the broker's new
response log allocated in full), per partition. The pool closes its sessions after
:data:`IDLE_CLOSE_S` without a read (and at exit). A read that fails drops the session it used
(:meth:`ReaderSessions.drop`), so the next read connects afresh.

Narrow and wide: the sessions' response channel asks for a term of
:data:`RESPONSE_TERM_LENGTH` (an answer takes up to an eighth of it, 2 MiB), and the reader's
pulls ask for at most :data:`PULL_MAX_BYTES`. The broker's default IPC term (64 MiB: a log of
192 MiB for each session) would leave every page of the log fresh for the whole read, each
one allocated and zeroed by the broker and faulted in by both processes; a 48 MiB log is
written over and over, its pages resident. The pulls in flight (4 answers of up to 1 MiB)
stay within the publication's window (half a term): an answer the window does not take waits
in the broker's backlog, joined into one more copy (measured: a third of the broker's session
thread with an 8 MiB term). A stored batch longer than the narrow channel takes
still comes whole (the broker always answers with one batch), so the broker refuses that answer
(``common.ANSWER_TOO_LONG``), and the reader asks again on a wide session (the driver's term):
:meth:`ReaderSessions.session` with ``wide``.

Sessions are kept per broker key (:class:`~client.route.BrokerKey`: the broker's name and the
endpoints it was looked up through), so reads of two clusters whose brokers have the same name
(every deployment's first broker is ``broker-a``) each get their own broker's session. On a host other than the broker's (an executor of a
cluster) the sessions go over UDP, their answers sent to this host's address toward the broker
(:mod:`pipeline._host_address`), not the loopback.

The pool also keeps one :class:`~client.RouteResolver` per list of endpoints (its gRPC channels
and the topic's route), which a read uses for the route to its broker and the queue's min
offset: a new one costs a gRPC channel opened and closed per read (about 4 ms of the read's
wall time, 2.5 ms of CPU, measured). It is closed with the sessions (idle, at exit) and dropped
with them when a read fails.

The reader's thread reads its answers itself (``SessionConfig.caller_reads``), sleeping on the
session's doorbell until the broker rings it after an answer: a reader's answers are few and
large (about 7,000 messages of 100 B each), so the default's poller thread, spinning and
yielding between answers, handing each to the reader's thread and copying it into a buffer
that the reader's thread frees (which faults its pages in anew each time), costs more CPU than
a wake-up per answer.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence
from typing import Final

from aeromq.client.broker_sessions import BrokerSessions
from aeromq.client.route import BrokerKey, BrokerRoute, RouteResolver, origin_of
from aeromq.client.session import ClientSession
from aeromq.pipeline._host_address import response_host
from aeromq.pipeline._malloc import retain_freed_memory

__all__ = [
    "IDLE_CLOSE_S",
    "PULL_MAX_BYTES",
    "READER_GROUP",
    "RESPONSE_TERM_LENGTH",
    "ReaderSessions",
    "reader_sessions",
]

READER_GROUP: Final = "aeromq-spark-reader"
"""The consumer group the readers' pulls name (and their sessions' client id). They never
commit, so the group holds no offsets and joins no rebalance."""
RESPONSE_TERM_LENGTH: Final = 16 * 1024 * 1024
PULL_MAX_BYTES: Final = 1024 * 1024 - 4096
"""The most bytes of stored batches a pull asks for (the broker's own cap is 1 MiB): well
within the narrow channel's longest answer (an eighth of its term) with room for the answer's
envelope and control fields (about 100 bytes); 4 of them in flight fill half the window."""
IDLE_CLOSE_S: Final = 30.0
CONTROL_TIMEOUT_S: Final = 30.0
"""The resolver's gRPC timeout (the route, the min offset)."""
_REQUEST_TIMEOUT_MS: Final = 30_000
_OFFER_TIMEOUT_MS: Final = 5_000


class ReaderSessions:
    """The narrow and the wide sessions of one process (see module). Thread-safe; take it with
    :func:`reader_sessions`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._narrow: BrokerSessions | None = None
        self._wide: BrokerSessions | None = None
        self._resolvers: dict[str, RouteResolver] = {}
        """By origin (:func:`~client.route.origin_of` the endpoints)."""
        self._readers = 0
        self._closer: threading.Timer | None = None

    def session(self, route: BrokerRoute, *, wide: bool = False) -> ClientSession:
        """The open session with ``route``'s broker, connected if needed (raises
        :class:`~common.BrokerUnavailableError`)."""
        with self._lock:
            if wide:
                sessions = self._wide = self._wide or _sessions(0, route)
            else:
                sessions = self._narrow = self._narrow or _sessions(RESPONSE_TERM_LENGTH, route)
        return sessions.session(route)

    def resolver(self, endpoints: Sequence[str]) -> RouteResolver:
        """The pool's resolver of ``endpoints``, made if needed (it fetches nothing yet)."""
        origin = origin_of(endpoints)
        with self._lock:
            found = self._resolvers.get(origin)
            if found is None:
                found = self._resolvers[origin] = RouteResolver(
                    endpoints, timeout_s=CONTROL_TIMEOUT_S
                )
            return found

    def open_session(self, broker: BrokerKey | str, *, wide: bool = False) -> ClientSession | None:
        """The open session with ``broker`` (a key, or a name: any origin's), or None
        (without connecting)."""
        sessions = self._wide if wide else self._narrow
        return None if sessions is None else sessions.open_session(broker)

    def drop(self, broker: BrokerKey) -> None:
        """Close both sessions with ``broker`` and the resolver of its origin (a read failed):
        the next read connects and resolves afresh."""
        for sessions in (self._narrow, self._wide):
            if sessions is not None:
                sessions.drop(broker)
        with self._lock:
            resolver = self._resolvers.pop(broker.origin, None)
        if resolver is not None:
            resolver.close()

    def close(self) -> None:
        """Close every session (the next read opens new ones); idempotent."""
        with self._lock:
            closer, self._closer = self._closer, None
            taken = self._take()
        if closer is not None:
            closer.cancel()
        _close(taken)

    def _take(self) -> tuple[BrokerSessions | RouteResolver | None, ...]:
        """Hand over both session sets and the resolvers (under the lock): the next read opens
        new ones."""
        taken = (self._narrow, self._wide, *self._resolvers.values())
        self._narrow = self._wide = None
        self._resolvers = {}
        return taken

    @property
    def open_count(self) -> int:
        """How many of the pool's session sets are open (0, 1 or 2)."""
        return (self._narrow is not None) + (self._wide is not None)

    @property
    def resolver_count(self) -> int:
        """How many resolvers the pool keeps."""
        return len(self._resolvers)

    def __enter__(self) -> ReaderSessions:
        with self._lock:
            self._readers += 1
            closer, self._closer = self._closer, None
        if closer is not None:
            closer.cancel()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._readers -= 1
            if self._readers or (
                self._narrow is None and self._wide is None and not self._resolvers
            ):
                return
            closer = self._closer = threading.Timer(IDLE_CLOSE_S, self._close_idle)
            closer.daemon = True
        closer.start()

    def _close_idle(self) -> None:
        with self._lock:  # a read that begins from here on opens new sessions
            if self._readers or self._closer is not threading.current_thread():
                return  # a read began meanwhile (it cancelled this timer)
            self._closer = None
            taken = self._take()
        _close(taken)


def _close(taken: tuple[BrokerSessions | RouteResolver | None, ...]) -> None:
    for held in taken:
        if held is not None:
            held.close()


def _sessions(ipc_response_term_length: int, route: BrokerRoute) -> BrokerSessions:
    """A session set whose UDP sessions are answered on this host's address toward ``route``'s
    broker (an executor on another host: ``_host_address.py``)."""
    return BrokerSessions(
        udp_response_host=response_host(route.grpc_address),
        client_id=f"{READER_GROUP}@{os.getpid()}",
        request_timeout_ms=_REQUEST_TIMEOUT_MS,
        offer_timeout_ms=_OFFER_TIMEOUT_MS,
        ipc_response_term_length=ipc_response_term_length,
        caller_reads=True,
        local_reads=True,
    )


_pool = ReaderSessions()
_pool_lock = threading.Lock()


def reader_sessions() -> ReaderSessions:
    """This process's pool (a forked child starts a pool of its own: the parent's sessions and
    their threads are not its own to use); use it as a context manager around a read. The
    first call in a process also tunes its malloc (:func:`pipeline._malloc.retain_freed_memory`)."""
    global _pool
    retain_freed_memory()
    with _pool_lock:
        if _pool._pid != os.getpid():
            _pool = ReaderSessions()
        return _pool


atexit.register(lambda: _pool.close() if _pool._pid == os.getpid() else None)
