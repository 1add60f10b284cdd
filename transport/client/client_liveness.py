"""``ClientLiveness``: the client's side of keeping alive, and its checks on the driver.

Caller: the client conductor, on each service (under the client lock). Every
``idle_sleep_duration_ns`` at most (:meth:`ClientLiveness.due`), :meth:`ClientLiveness.check`:

1. after a service interval longer than the inter-service timeout (the conductor's thread, or
   the whole process, did not run: a stopped or starved process), asks the driver's counters
   whether the driver dropped this client meanwhile (its heartbeat counter is no longer this
   client's): if so it fails with :class:`~transport.ClientTimeoutError`, as Aeron's client does
   on any such interval; if not, it stamps the heartbeat at once and carries on, leaving the
   driver's own heartbeat to the next check (a driver embedded in the stopped process has not
   run either: judged now, it would look dead). A media driver that stalled as long gives its
   clients a fresh liveness timeout (``DriverConductor``), so a process with an embedded driver
   that was stopped past the timeouts (``SIGSTOP``, a suspended VM) goes on working once
   resumed;
2. every ``keep_alive_interval_ns``: reads the driver's heartbeat in the to-driver ring buffer
   and fails with :class:`~transport.DriverTimeoutError` (naming the directory and the age) if
   it is older than the driver timeout, or -1 (a driver that shut down); then stamps the epoch
   time (ms) into this client's heartbeat counter (type 11, key = client id). Until the driver
   has allocated that counter it sends CLIENT_KEEPALIVE instead, so a driver that has not seen
   a command from this client yet still learns of it. A counter that stops being this client's
   means the driver dropped the client: ``ClientTimeoutError``.

The conductor turns a failure into the client's termination; this class only keeps time.
:func:`terminated_error` is what every later call of a client stopped this way raises.
"""

from __future__ import annotations

from typing import Final

from aeromq.transport._errors import (
    ClientTimeoutError,
    DriverTimeoutError,
    TransportError,
    TransportStateError,
)
from aeromq.transport.client.driver_proxy import DriverProxy
from aeromq.transport.client.heartbeat_timestamp import (
    HEARTBEAT_TYPE_ID,
    find_counter_id_by_registration_id,
    is_active,
)
from aeromq.transport.concurrent.atomic_counter import AtomicCounter
from aeromq.transport.concurrent.clock import EpochClock
from aeromq.transport.concurrent.counters_descriptor import NULL_COUNTER_ID
from aeromq.transport.concurrent.counters_reader import CountersReader

__all__ = ["ClientLiveness", "terminated_error"]

_NULL_VALUE: Final = -1


class ClientLiveness:
    """Keepalive and liveness timing of one client (see module)."""

    __slots__ = (
        "_aeron_dir",
        "_client_id",
        "_counters_reader",
        "_driver_proxy",
        "_driver_timeout_ms",
        "_epoch_clock",
        "_heartbeat",
        "_idle_sleep_ns",
        "_inter_service_timeout_ns",
        "_keepalive_interval_ns",
        "_time_of_last_keepalive_ns",
        "_time_of_last_service_ns",
    )

    def __init__(
        self,
        driver_proxy: DriverProxy,
        counters_reader: CountersReader,
        epoch_clock: EpochClock,
        *,
        aeron_dir: str,
        keep_alive_interval_ns: int,
        driver_timeout_ms: int,
        inter_service_timeout_ns: int,
        idle_sleep_duration_ns: int,
        now_ns: int,
    ) -> None:
        self._driver_proxy = driver_proxy
        self._counters_reader = counters_reader
        self._epoch_clock = epoch_clock
        self._client_id = driver_proxy.client_id
        self._aeron_dir = aeron_dir
        self._keepalive_interval_ns = keep_alive_interval_ns
        self._driver_timeout_ms = driver_timeout_ms
        self._inter_service_timeout_ns = inter_service_timeout_ns
        self._idle_sleep_ns = idle_sleep_duration_ns
        self._heartbeat: AtomicCounter | None = None
        self._time_of_last_keepalive_ns = now_ns
        self._time_of_last_service_ns = now_ns

    @property
    def heartbeat_counter_id(self) -> int:
        """This client's heartbeat counter once found, else -1."""
        heartbeat = self._heartbeat
        return NULL_COUNTER_ID if heartbeat is None else heartbeat.id

    def due(self, now_ns: int) -> bool:
        """Whether a check is due (one per idle sleep duration at most)."""
        return now_ns - (self._time_of_last_service_ns + self._idle_sleep_ns) > 0

    def check(self, now_ns: int) -> int:
        """The checks of the module (call when :meth:`due`); 1 if a keepalive was due, else 0.

        Raises the error the client must stop with.
        """
        interval_ns = now_ns - self._time_of_last_service_ns
        self._time_of_last_service_ns = now_ns
        if interval_ns > self._inter_service_timeout_ns:
            return self._after_stall(now_ns, interval_ns)
        if now_ns - (self._time_of_last_keepalive_ns + self._keepalive_interval_ns) <= 0:
            return 0
        now_ms = self._epoch_clock.time_ms()
        self._check_driver(now_ms)
        heartbeat = self._heartbeat
        if heartbeat is None:
            heartbeat = self._found_heartbeat()
            if heartbeat is None:
                self._driver_proxy.send_client_keepalive()
            else:
                heartbeat.set_ordered(now_ms)
        else:
            if not is_active(
                self._counters_reader, heartbeat.id, HEARTBEAT_TYPE_ID, self._client_id
            ):
                raise ClientTimeoutError(
                    "the client heartbeat counter was closed: the driver dropped this client",
                    client_id=self._client_id,
                    counter_id=heartbeat.id,
                )
            heartbeat.set_ordered(now_ms)
        self._time_of_last_keepalive_ns = now_ns
        return 1

    def _after_stall(self, now_ns: int, interval_ns: int) -> int:
        """The check after a service interval past the inter-service timeout (see module, 1):
        fails unless the driver still holds this client's heartbeat counter, else stamps it."""
        heartbeat = self._heartbeat or self._found_heartbeat()
        if heartbeat is None or not is_active(
            self._counters_reader, heartbeat.id, HEARTBEAT_TYPE_ID, self._client_id
        ):
            raise ClientTimeoutError(
                "client conductor not serviced within the inter-service timeout, and the "
                "driver holds no heartbeat counter of it (it dropped this client)",
                inter_service_timeout_ns=self._inter_service_timeout_ns,
                interval_ns=interval_ns,
                client_id=self._client_id,
            )
        heartbeat.set_ordered(self._epoch_clock.time_ms())
        self._time_of_last_keepalive_ns = now_ns
        return 1

    def _found_heartbeat(self) -> AtomicCounter | None:
        """This client's heartbeat counter, looked up once the driver has allocated it (then
        kept), else None."""
        counter_id = find_counter_id_by_registration_id(
            self._counters_reader, HEARTBEAT_TYPE_ID, self._client_id
        )
        if counter_id == NULL_COUNTER_ID:
            return None
        heartbeat = self._heartbeat = AtomicCounter(self._counters_reader.values_buffer, counter_id)
        return heartbeat

    def _check_driver(self, now_ms: int) -> None:
        last_keepalive_ms = self._driver_proxy.time_of_last_driver_keepalive_ms()
        if last_keepalive_ms == _NULL_VALUE:
            raise DriverTimeoutError("the media driver has shut down", aeron_dir=self._aeron_dir)
        if now_ms > last_keepalive_ms + self._driver_timeout_ms:
            raise DriverTimeoutError(
                "the media driver's heartbeat is older than the driver timeout",
                aeron_dir=self._aeron_dir,
                heartbeat_age_ms=now_ms - last_keepalive_ms,
                driver_timeout_ms=self._driver_timeout_ms,
            )


def terminated_error(
    cause: TransportError | None, aeron_dir: str, client_id: int
) -> TransportError:
    """The error a call on a client that stopped because of ``cause`` raises (caused by it)."""
    error: TransportError
    if isinstance(cause, DriverTimeoutError):
        error = DriverTimeoutError(
            "client closed: the media driver timed out",
            aeron_dir=aeron_dir,
            cause=str(cause),
        )
    elif isinstance(cause, ClientTimeoutError):
        error = ClientTimeoutError(
            "client closed: it was timed out", client_id=client_id, cause=str(cause)
        )
    else:
        error = TransportStateError("client is terminating", client_id=client_id, cause=str(cause))
    error.__cause__ = cause
    return error
