"""``SessionLiveness``: the client session's housekeeping on its poller thread: requests past
their deadline fail, keepalives go out when the session has been quiet, and the session fails
when the broker or its media driver is gone.

Every :meth:`~SessionLiveness.do_work` (the readers' poller thread, about every millisecond;
``_answer_readers.py``), once the session is connected and neither closed nor failed:

- every 100 ms, the media driver's heartbeat: silent for :data:`~client.session.DRIVER_SILENT_MS`
  (over IPC the broker's own driver, dead or hung) fails the session at once, and a broker
  doorbell whose counter was freed is no longer rung;
- over UDP, while requests wait: the broker probed with keepalives after 200 ms of silence and
  taken for gone after 1 s of it (``_udp_liveness.py``: over UDP the driver watched above is the
  client's own, not the broker's);
- the response stream without images (the broker closed it, or its driver did) fails it;
- no answer for the broker's session timeout fails it (the broker stopped answering);
- no request sent for the keepalive interval (a third of the session timeout unless
  configured) sends a keepalive, whose answer keeps the broker's side and ``last_heard_ns``
  fresh.

Failures are :class:`~client.BrokerUnavailableError`: the session is unusable, make a new one.
Caller: the poller thread only. Affects: the pending table (expired and failed futures), the
session's failure, the sender's ``broker_doorbell``.
"""

from __future__ import annotations

import time
from typing import Final

from aeromq.client._pending_requests import PendingRequests
from aeromq.client._request_sender import RequestSender
from aeromq.client._session_config import DRIVER_SILENT_MS
from aeromq.client._session_state import SESSION_LOG, SessionState
from aeromq.client._udp_liveness import ProbeAction, UdpProbe
from aeromq.common import BrokerUnavailableError, ClientError
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, Subscription

__all__ = ["SessionLiveness"]

_DRIVER_CHECK_INTERVAL_NS: Final = 100_000_000


class SessionLiveness:
    """A session's deadlines, keepalives and liveness checks (see module). The set-up gives it
    the ``subscription`` once open, and ``session_timeout_ms`` and ``keepalive_interval_ms``
    from the CONNECT answer."""

    __slots__ = (
        "_aeron",
        "_next_driver_check_ns",
        "_pending",
        "_sender",
        "_state",
        "keepalive_interval_ms",
        "session_timeout_ms",
        "subscription",
        "udp_probe",
    )

    def __init__(
        self, aeron: Aeron, state: SessionState, pending: PendingRequests, sender: RequestSender
    ) -> None:
        self._aeron = aeron
        self._state = state
        self._pending = pending
        self._sender = sender
        self._next_driver_check_ns = 0
        self.subscription: Subscription | None = None
        self.session_timeout_ms = 0
        self.keepalive_interval_ms = 0
        self.udp_probe: UdpProbe | None = None
        """Set by the set-up for a session over UDP (``_udp_liveness.py``)."""

    def do_work(self, now_ns: int) -> int:
        """One round of housekeeping at ``now_ns`` (monotonic); returns how much it did (failed
        futures, a keepalive sent)."""
        work = self._pending.expire(now_ns)
        state = self._state
        if not state.session_id or state.failure is not None or state.closed:
            return work
        timeout_ns = self.session_timeout_ms * 1_000_000
        subscription = self.subscription
        if now_ns >= self._next_driver_check_ns:
            self._next_driver_check_ns = now_ns + _DRIVER_CHECK_INTERVAL_NS
            bell = self._sender.broker_doorbell
            if bell is not None and not bell.still_allocated(self._aeron.counters_reader):
                self._sender.broker_doorbell = None  # freed: its id may go to another counter
            silent_ms = self._driver_silent_ms()
            if silent_ms > DRIVER_SILENT_MS:
                self._pending.fail(  # the broker's driver died (over IPC: the broker with it)
                    BrokerUnavailableError(
                        "the media driver stopped",
                        session_id=state.session_id,
                        silent_ms=silent_ms,
                    )
                )
                return work
        probe = self.udp_probe
        if probe is not None:
            waiting = bool(self._pending.futures)
            received = (
                sum(image.position for image in subscription.images)
                if waiting and subscription is not None
                else 0
            )
            action = probe.check(now_ns, state.last_heard_ns, waiting, received)
            if action is ProbeAction.FAIL:
                self._pending.fail(
                    BrokerUnavailableError(
                        "the broker stopped answering over UDP",
                        session_id=state.session_id,
                        silent_ms=probe.silent_ms(now_ns, state.last_heard_ns),
                    )
                )
                return work
            if action is ProbeAction.PROBE:
                self._keepalive()
                work += 1
        if subscription is not None and subscription.has_no_images:
            self._pending.fail(  # the broker closed our response stream (or its driver did)
                BrokerUnavailableError(
                    "the broker's response stream ended", session_id=state.session_id
                )
            )
        elif timeout_ns and now_ns - state.last_heard_ns > timeout_ns:
            self._pending.fail(
                BrokerUnavailableError(
                    "the broker stopped answering",
                    session_id=state.session_id,
                    session_timeout_ms=self.session_timeout_ms,
                )
            )
        elif now_ns - state.last_sent_ns > self.keepalive_interval_ms * 1_000_000:
            self._keepalive()
            work += 1
        return work

    def next_due_ns(self, now_ns: int) -> int:
        """When :meth:`do_work` has something to do next, at ``now_ns`` (monotonic): the
        soonest deadline of a pending request, and once connected the next driver check, the
        keepalive due and the broker's silence turning into a failure. The poller thread
        sleeps until then when nothing else wakes it."""
        due_ns = self._pending.next_deadline_ns() or now_ns + _DRIVER_CHECK_INTERVAL_NS
        state = self._state
        if not state.session_id or state.failure is not None or state.closed:
            return due_ns
        due_ns = min(
            due_ns,
            self._next_driver_check_ns,
            state.last_sent_ns + self.keepalive_interval_ms * 1_000_000 + 1,
        )
        if self.session_timeout_ms:
            due_ns = min(due_ns, state.last_heard_ns + self.session_timeout_ms * 1_000_000 + 1)
        return due_ns

    def _keepalive(self) -> None:
        try:
            self._sender.offer(session_pb2.KeepAliveRequest(), next(self._pending.correlation))
        except ClientError as exc:
            SESSION_LOG.debug("keepalive not sent: %s", exc)

    def _driver_silent_ms(self) -> int:
        """How long the session's media driver has not stamped its heartbeat (a shut-down
        driver: forever)."""
        heartbeat_ms = self._aeron.cnc.driver_heartbeat_ms()
        if heartbeat_ms <= 0:
            return 1 << 62
        return max(0, int(time.time() * 1000) - heartbeat_ms)
