"""``FakeDriver``: a small, scriptable media driver that speaks the raw protocol, for client tests.

It does what a client can observe of a media driver and nothing more, built only on the shared
protocol modules (``aeromq.transport.cnc``, ``aeromq.transport.command``, ``aeromq.transport.logbuffer``,
``aeromq.transport.concurrent``), so a client is tested against the protocol rather than against the
real driver's internals:

- creates ``cnc.dat`` in ``aeron_dir`` (small buffers) and stamps its heartbeat in the
  to-driver ring buffer on every duty cycle (unless told to stop: a dead driver);
- answers ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION with a log buffer file in
  ``publications/`` (concurrent publications of one channel and stream share it), a pub-lmt
  counter and ON_(EXCLUSIVE_)PUBLICATION_READY; ADD_SUBSCRIPTION with ON_SUBSCRIPTION_READY;
  a sub-pos counter and ON_AVAILABLE_IMAGE for every matching (IPC) pair, in either order;
  ADD_COUNTER / REMOVE_COUNTER; REMOVE_PUBLICATION (end of stream: the images go unavailable
  once every subscriber has read up to it); REMOVE_SUBSCRIPTION; CLIENT_KEEPALIVE;
  CLIENT_CLOSE;
- allocates a client's ``client-heartbeat`` counter (type 11, key = client id) on its first
  command and times the client out (ON_CLIENT_TIMEOUT) when it is not stamped for the client
  liveness timeout;
- moves each publication limit to the slowest subscriber position plus the term window, zeroes
  the terms a term length behind the slowest subscriber, and flags the log connected while it
  has subscribers.

Scripting: :meth:`FakeDriver.fail_next` (ON_ERROR for the next command of a type),
:meth:`stop_heartbeat` / :meth:`resume_heartbeat`, :meth:`time_out_client`,
:meth:`freeze_limit`, :meth:`make_image_unavailable`; every decoded command is kept in
:attr:`commands`. Channels honour ``term-length``, ``mtu``, ``session-id`` and
``init-term-id`` / ``term-id`` / ``term-offset``. Run it on a thread (:meth:`start`) or call
:meth:`do_work` by hand.

The driver here owns the ``cnc.dat`` file, the duty cycle (thread or by hand) and the scripting
and inspection API; the protocol is :class:`~transport.testing.fake_conductor.FakeConductor`'s,
the responses :class:`~transport.testing.fake_client_proxy.FakeClientProxy`'s, and what it
keeps per publication and subscription is in :mod:`~transport.testing.fake_resources`.
Users: the client tests (``tests/transport/client``).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aeromq.transport.cnc import CncFile
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter
from aeromq.transport.concurrent.clock import EpochClock, SystemEpochClock
from aeromq.transport.concurrent.counters_manager import CountersManager
from aeromq.transport.logbuffer.log_buffer_descriptor import TERM_MIN_LENGTH
from aeromq.transport.testing.fake_client_proxy import FakeClientProxy
from aeromq.transport.testing.fake_conductor import FakeConductor
from aeromq.transport.testing.fake_resources import FakePublication, FakeSubscription

__all__ = ["FakeDriver", "FakePublication", "FakeSubscription"]

_SMALL_RING = 64 * 1024


class FakeDriver:
    """See module. ``close()`` stops the thread, unmaps and removes ``aeron_dir``."""

    def __init__(
        self,
        aeron_dir: str | os.PathLike[str],
        *,
        term_length: int = TERM_MIN_LENGTH,
        mtu_length: int = 1408,
        page_size: int = 4096,
        client_liveness_timeout_ns: int = 10_000_000_000,
        term_window_length: int = 0,
        epoch_clock: EpochClock | None = None,
        delete_dir_on_close: bool = True,
    ) -> None:
        self.aeron_dir = Path(aeron_dir)
        self.term_length = term_length
        self.mtu_length = mtu_length
        self.page_size = page_size
        self.client_liveness_timeout_ns = client_liveness_timeout_ns
        self.term_window_length = term_window_length
        self._clock: EpochClock = epoch_clock or SystemEpochClock()
        self._delete_dir_on_close = delete_dir_on_close
        (self.aeron_dir / "publications").mkdir(parents=True, exist_ok=True)
        self.cnc = CncFile.create(
            self.aeron_dir,
            to_driver_buffer_length=_SMALL_RING + 768,
            to_clients_buffer_length=_SMALL_RING + 128,
            counters_values_buffer_length=32 * 1024,
            error_log_buffer_length=8 * 1024,
            client_liveness_timeout_ns=client_liveness_timeout_ns,
            start_timestamp_ms=self._clock.time_ms(),
            pid=os.getpid(),
        )
        self.to_driver = ManyToOneRingBuffer(self.cnc.to_driver_buffer)
        self.to_clients = BroadcastTransmitter(self.cnc.to_clients_buffer)
        self.counters = CountersManager(
            self.cnc.counters_metadata_buffer, self.cnc.counters_values_buffer, self._clock
        )
        self.to_driver.consumer_heartbeat_time = self._clock.time_ms()
        self._conductor = FakeConductor(
            self.counters,
            FakeClientProxy(self.to_clients),
            self._clock,
            aeron_dir=self.aeron_dir,
            term_length=term_length,
            mtu_length=mtu_length,
            page_size=page_size,
            client_liveness_timeout_ns=client_liveness_timeout_ns,
            term_window_length=term_window_length,
        )
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._running = False
        self._closed = False
        self._heartbeat_enabled = True

    # ----------------------------------------------------------------------------------------
    # State (the conductor's; read and change it under ``_lock`` while the driver runs)

    @property
    def commands(self) -> list[tuple[int, object]]:
        """Every decoded command, in order: ``(command type id, decoded message)``."""
        return self._conductor.commands

    @property
    def clients(self) -> dict[int, int]:
        """Client id -> heartbeat counter id."""
        return self._conductor.clients

    @property
    def publications(self) -> dict[int, FakePublication]:
        """Registration id -> the publication's log buffer and counters."""
        return self._conductor.publications

    @property
    def publication_links(self) -> dict[int, tuple[int, FakePublication]]:
        """ADD command correlation id -> (client id, publication)."""
        return self._conductor.publication_links

    @property
    def subscriptions(self) -> dict[int, FakeSubscription]:
        """Registration id -> subscription."""
        return self._conductor.subscriptions

    @property
    def client_counters(self) -> dict[int, tuple[int, int]]:
        """Counter registration id -> (client id, counter id)."""
        return self._conductor.client_counters

    @property
    def timed_out_clients(self) -> list[int]:
        """The clients timed out so far, in order."""
        return self._conductor.timed_out_clients

    # ----------------------------------------------------------------------------------------
    # Running

    def start(self) -> FakeDriver:
        """Run :meth:`do_work` on a daemon thread until :meth:`close`."""
        self._running = True
        self._thread = threading.Thread(target=self._run, name="fake-driver", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while self._running:
            if self.do_work() == 0:
                time.sleep(0.0005)

    def do_work(self) -> int:
        """One duty cycle: heartbeat, commands, limits, draining, client liveness."""
        with self._lock:
            now_ms = self._clock.time_ms()
            if self._heartbeat_enabled:
                self.to_driver.consumer_heartbeat_time = now_ms
            conductor = self._conductor
            work = self.to_driver.read(conductor.on_command, 16)
            conductor.update_limits()
            work += conductor.drain_ended_publications()
            conductor.check_client_liveness(now_ms)
            return work

    def close(self) -> None:
        """Stop, mark the driver gone (heartbeat -1), unmap everything; idempotent."""
        self._running = False
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(5)
        self._thread = None
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._conductor.close()
            self.to_driver.consumer_heartbeat_time = -1
            self.cnc.close()
        if self._delete_dir_on_close:
            shutil.rmtree(self.aeron_dir, ignore_errors=True)

    def __enter__(self) -> FakeDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------
    # Scripting

    def fail_next(self, command_type_id: int, code: int, message: str) -> None:
        """Answer the next command of this type with ON_ERROR(code, message)."""
        with self._lock:
            self._conductor.fail_next(command_type_id, code, message)

    def stop_heartbeat(self) -> None:
        """Stop stamping the driver heartbeat: clients see a dead driver."""
        with self._lock:
            self._heartbeat_enabled = False

    def resume_heartbeat(self) -> None:
        with self._lock:
            self._heartbeat_enabled = True

    def set_driver_heartbeat_ms(self, value_ms: int) -> None:
        """Stop the heartbeat and set its value (e.g. -1: a driver that shut down)."""
        with self._lock:
            self._heartbeat_enabled = False
            self.to_driver.consumer_heartbeat_time = value_ms

    def time_out_client(self, client_id: int) -> None:
        """Drop a client as its liveness timeout would: ON_CLIENT_TIMEOUT and cleanup."""
        with self._lock:
            self._conductor.time_out(client_id)

    def freeze_limit(self, registration_id: int, value: int) -> None:
        """Set a publication's limit and stop moving it."""
        with self._lock:
            publication = self.publications[registration_id]
            publication.limit_frozen = True
            self.counters.set_counter_value(publication.limit_counter_id, value)

    def unfreeze_limit(self, registration_id: int) -> None:
        with self._lock:
            self.publications[registration_id].limit_frozen = False

    def make_image_unavailable(self, registration_id: int) -> None:
        """Send ON_UNAVAILABLE_IMAGE for every image of a publication (it stays, unlinked)."""
        with self._lock:
            publication = self.publications[registration_id]
            for subscription_id, counter_id in list(publication.images.items()):
                self._conductor.unlink(publication, subscription_id, counter_id)

    def publication_for(self, correlation_id: int) -> FakePublication:
        """The publication an ADD_*PUBLICATION command with this correlation id got."""
        with self._lock:
            return self.publication_links[correlation_id][1]

    def heartbeat_counter_id(self, client_id: int) -> int | None:
        with self._lock:
            return self.clients.get(client_id)

    def counter_value(self, counter_id: int) -> int:
        return self.counters.get_counter_value(counter_id)

    def command_types(self) -> list[int]:
        with self._lock:
            return [type_id for type_id, _ in self.commands]

    def wait_until(
        self, condition: Callable[[], bool], timeout_s: float = 5.0, message: str = "condition"
    ) -> None:
        """Poll ``condition`` (bounded); raise ``AssertionError`` naming it on timeout."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s}s waiting for {message}")
            if self._thread is None:
                self.do_work()
            time.sleep(0.001)
