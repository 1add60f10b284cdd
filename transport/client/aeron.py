"""``Aeron``: a client of a media driver, the entry point of the transport's API.

``Aeron.connect(context)`` maps the driver's ``cnc.dat`` (waiting, up to the driver timeout,
for a driver to publish it), checks its major version, checks the driver is alive through its
heartbeat in the to-driver ring buffer, takes a client id from the ring's correlation counter,
and starts the client conductor: on a daemon thread by default, or driven by the application
through :attr:`Aeron.conductor_agent_invoker` with ``use_conductor_agent_invoker``.

::

    with Aeron.connect(AeronContext(aeron_dir=path)) as aeron:
        publication = aeron.add_publication("aeron:ipc", 1001)
        subscription = aeron.add_subscription("aeron:ipc", 1001)
        publication.offer(b"hello")
        subscription.poll(handler, 10)

``close()`` closes every publication, subscription and counter of the client, sends
CLIENT_CLOSE and unmaps the files; it is idempotent. A client whose driver died (or which the
driver timed out) closes itself: the error goes to the context's error handler and later calls
raise it (:class:`~transport.DriverTimeoutError`, :class:`~transport.ClientTimeoutError`).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Final

from aeromq.transport._errors import (
    AgentTerminationError,
    CncFileError,
    DriverTimeoutError,
    TransportStateError,
)
from aeromq.transport.client.client_conductor import ClientConductor
from aeromq.transport.client.concurrent_publication import ConcurrentPublication
from aeromq.transport.client.context import AeronContext, ImageHandler
from aeromq.transport.client.counter import Counter
from aeromq.transport.client.exclusive_publication import ExclusivePublication
from aeromq.transport.client.subscription import Subscription
from aeromq.transport.cnc import CNC_FILE, CncFile
from aeromq.transport.concurrent import ManyToOneRingBuffer
from aeromq.transport.concurrent.agent import AgentInvoker, AgentRunner, ErrorHandler
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.idle_strategy import SleepingIdleStrategy

__all__ = ["Aeron"]

_CONNECT_POLL_S: Final = 0.01
_RUNNER_CLOSE_TIMEOUT_S: Final = 10.0


class Aeron:
    """A connected client (see module). Make one with :meth:`connect`."""

    __slots__ = ("_close_lock", "_cnc", "_conductor", "_ctx", "_invoker", "_is_closed", "_runner")

    def __init__(
        self,
        ctx: AeronContext,
        cnc: CncFile,
        conductor: ClientConductor,
        runner: AgentRunner | None,
        invoker: AgentInvoker | None,
    ) -> None:
        self._ctx = ctx
        self._cnc = cnc
        self._conductor = conductor
        self._runner = runner
        self._invoker = invoker
        self._close_lock = threading.Lock()
        self._is_closed = False

    @classmethod
    def connect(cls, context: AeronContext | None = None) -> Aeron:
        """Connect to the media driver of ``context.aeron_dir`` (see module).

        Raises :class:`~transport.DriverTimeoutError` (naming the directory and the driver's
        heartbeat age) if no live driver is found within the driver timeout, and
        :class:`~transport.CncFileError` for a cnc.dat of another major version.
        """
        ctx = context if context is not None else AeronContext()
        cnc = _connect_to_driver(ctx)
        try:
            client_id = ManyToOneRingBuffer(cnc.to_driver_buffer).next_correlation_id()
            conductor = ClientConductor(ctx, cnc, client_id)
            runner: AgentRunner | None = None
            invoker: AgentInvoker | None = None
            if ctx.use_conductor_agent_invoker:
                invoker = AgentInvoker(_runner_error_handler(ctx), None, conductor)
                invoker.start()
            else:
                idle = ctx.idle_strategy or SleepingIdleStrategy(ctx.idle_sleep_duration_ns)
                runner = AgentRunner(idle, _runner_error_handler(ctx), None, conductor)
                runner.start()
        except BaseException:
            cnc.close()
            raise
        return cls(ctx, cnc, conductor, runner, invoker)

    # ----------------------------------------------------------------------------------------
    # Registration

    def add_publication(self, channel: str, stream_id: int) -> ConcurrentPublication:
        """A publication that threads and processes may share; waits for the driver."""
        return self._conductor.add_publication(channel, stream_id)

    def add_exclusive_publication(self, channel: str, stream_id: int) -> ExclusivePublication:
        """A publication with a log of its own, for one writer; waits for the driver."""
        return self._conductor.add_exclusive_publication(channel, stream_id)

    def add_subscription(
        self,
        channel: str,
        stream_id: int,
        available_image_handler: ImageHandler | None = None,
        unavailable_image_handler: ImageHandler | None = None,
    ) -> Subscription:
        """A subscription (image handlers default to the context's); waits for the driver."""
        return self._conductor.add_subscription(
            channel, stream_id, available_image_handler, unavailable_image_handler
        )

    def add_counter(self, type_id: int, key: bytes = b"", label: str = "") -> Counter:
        """A counter allocated by the driver for this client; waits for the driver."""
        return self._conductor.add_counter(type_id, key, label)

    def async_add_publication(self, channel: str, stream_id: int) -> int:
        """Send ADD_PUBLICATION without waiting; poll :meth:`get_publication` with the id."""
        return self._conductor.async_add_publication(channel, stream_id, exclusive=False)

    def async_add_exclusive_publication(self, channel: str, stream_id: int) -> int:
        """As :meth:`async_add_publication`; poll :meth:`get_exclusive_publication`."""
        return self._conductor.async_add_publication(channel, stream_id, exclusive=True)

    def async_add_subscription(
        self,
        channel: str,
        stream_id: int,
        available_image_handler: ImageHandler | None = None,
        unavailable_image_handler: ImageHandler | None = None,
    ) -> int:
        """Send ADD_SUBSCRIPTION without waiting; poll :meth:`get_subscription` with the id."""
        return self._conductor.async_add_subscription(
            channel, stream_id, available_image_handler, unavailable_image_handler
        )

    def get_publication(self, registration_id: int) -> ConcurrentPublication | None:
        """The publication of an async add: None while pending; the driver's
        ``RegistrationError`` if it refused."""
        return self._conductor.get_resource(registration_id, ConcurrentPublication)

    def get_exclusive_publication(self, registration_id: int) -> ExclusivePublication | None:
        """As :meth:`get_publication`, for :meth:`async_add_exclusive_publication`."""
        return self._conductor.get_resource(registration_id, ExclusivePublication)

    def get_subscription(self, registration_id: int) -> Subscription | None:
        """The subscription of an async add once the driver confirmed it (else None)."""
        return self._conductor.get_resource(registration_id, Subscription)

    # ----------------------------------------------------------------------------------------
    # State

    @property
    def context(self) -> AeronContext:
        """The context the client was connected with."""
        return self._ctx

    @property
    def client_id(self) -> int:
        """This client's id, unique among the driver's clients (from the to-driver ring)."""
        return self._conductor.client_id

    @property
    def cnc(self) -> CncFile:
        """The driver's mapped ``cnc.dat``: ring buffers, counters, error log."""
        return self._cnc

    @property
    def counters_reader(self) -> CountersReader:
        """A reader of every counter of the driver (positions, limits, heartbeats)."""
        return self._conductor.counters_reader

    @property
    def conductor(self) -> ClientConductor:
        """The client conductor that serves this client's calls."""
        return self._conductor

    @property
    def conductor_agent_invoker(self) -> AgentInvoker:
        """The conductor's invoker (``use_conductor_agent_invoker``): call ``invoke()`` often."""
        if self._invoker is None:
            raise TransportStateError(
                "the conductor runs on its own thread: use_conductor_agent_invoker is False"
            )
        return self._invoker

    @property
    def is_closed(self) -> bool:
        """True after :meth:`close`, or once the client stopped itself (a timeout)."""
        return self._is_closed or self._conductor.is_closed or self._conductor.is_terminating

    def next_correlation_id(self) -> int:
        """A number unique among all clients of this driver."""
        self._conductor.ensure_open()
        return self._conductor.next_correlation_id()

    def close(self) -> None:
        """Close every resource, send CLIENT_CLOSE and unmap the files; idempotent."""
        with self._close_lock:
            if self._is_closed:
                return
            self._is_closed = True
        try:
            if self._runner is not None:
                self._runner.close(_RUNNER_CLOSE_TIMEOUT_S)
            elif self._invoker is not None:
                self._invoker.close()
            self._conductor.close()
        finally:
            try:
                self._cnc.close()
            except BufferError as error:  # the application still holds a view of cnc.dat
                self._ctx.error_handler(error)

    def __enter__(self) -> Aeron:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"Aeron(client_id={self.client_id}, aeron_dir={self._ctx.aeron_dir!r}, "
            f"closed={self.is_closed})"
        )


def _runner_error_handler(ctx: AeronContext) -> ErrorHandler:
    handler = ctx.error_handler

    def on_error(error: Exception) -> None:
        if not isinstance(error, AgentTerminationError):  # the conductor ending itself
            handler(error)

    return on_error


def _connect_to_driver(ctx: AeronContext) -> CncFile:
    """Map cnc.dat and wait (up to the driver timeout) for a live driver behind it."""
    aeron_dir = ctx.aeron_dir
    timeout_ms = ctx.driver_timeout_ms
    deadline = time.monotonic() + timeout_ms / 1000
    path = Path(aeron_dir) / CNC_FILE
    heartbeat_age_ms: int | None = None
    while True:
        remaining_ms = max(1, int((deadline - time.monotonic()) * 1000))
        cnc: CncFile | None = None
        if path.exists():
            try:
                cnc = CncFile.map(aeron_dir, timeout_ms=remaining_ms)
            except CncFileError as error:
                if getattr(error, "reason", None) is None:
                    raise  # another major version, or a file shorter than its header says
                cnc = None
        if cnc is not None:
            heartbeat_ms = cnc.driver_heartbeat_ms()
            now_ms = ctx.epoch_clock.time_ms()
            if heartbeat_ms > 0 and now_ms - heartbeat_ms <= timeout_ms:
                return cnc
            heartbeat_age_ms = now_ms - heartbeat_ms if heartbeat_ms > 0 else None
            cnc.close()
        if time.monotonic() >= deadline:
            if not path.exists():
                raise DriverTimeoutError(
                    "no media driver: cnc.dat not found",
                    aeron_dir=aeron_dir,
                    driver_timeout_ms=timeout_ms,
                )
            raise DriverTimeoutError(
                "no live media driver: its heartbeat is missing or older than the driver timeout",
                aeron_dir=aeron_dir,
                heartbeat_age_ms=heartbeat_age_ms,
                driver_timeout_ms=timeout_ms,
                driver_pid=_driver_pid(path),
            )
        time.sleep(_CONNECT_POLL_S)


def _driver_pid(path: Path) -> int | None:
    try:
        with CncFile.map(path.parent, timeout_ms=1) as cnc:
            return cnc.pid
    except (CncFileError, OSError):
        return None
