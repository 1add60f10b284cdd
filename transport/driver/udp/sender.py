"""``Sender``: the media driver's agent that sends network publications (Aeron's ``Sender``).

Its duty cycle (``do_work``):

1. run the conductor's queued commands (add or remove endpoints and publications);
2. give every publication a turn to send (round robin, starting one further each cycle so none
   is always first): SETUP, data up to its limit, heartbeats, resends;
3. when nothing was sent, or after ``send_to_status_poll_ratio`` cycles that did send, or at
   least every half status message timeout, read the endpoints' sockets for status messages,
   NAKs and RTTMs (right after a park in its
   :class:`~transport.driver.udp.socket_waiter.SocketWaiter`, only the sockets it saw readable).

A status message that moved nothing (the limit, the connection) is a keepalive, not work for
its idle strategy (Aeron counts it): counting one every 200 ms per idle stream kept the thread
out of its deep park. So is one that moves the limit over space no frame waits for (every frame
written was sent): a receiver sends one each quarter window it reads, and counted, each ran one
more duty cycle of the thread, found empty; frames written later go out when their publisher's
wake (or the cycle it offers in, on this thread) runs the sender.

It counts ``Bytes sent`` and tracks its longest cycle (``Sender max cycle time``, and the cycles
over the threshold).
"""

from __future__ import annotations

from collections import deque

from aeromq.transport.concurrent import AtomicCounter, NanoClock
from aeromq.transport.driver.duty_cycle_tracker import DutyCycleStallTracker
from aeromq.transport.driver.udp.network_proxies import CommandQueue, drain
from aeromq.transport.driver.udp.network_publication import NetworkPublication
from aeromq.transport.driver.udp.send_channel_endpoint import SendChannelEndpoint
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter
from aeromq.transport.driver.udp.udp_settings import UdpSettings

__all__ = ["Sender"]


class Sender:
    """The sender agent (see module)."""

    def __init__(
        self,
        *,
        settings: UdpSettings,
        nano_clock: NanoClock,
        bytes_sent: AtomicCounter,
        max_cycle_time: AtomicCounter,
        cycle_time_threshold_exceeded: AtomicCounter,
        cycle_threshold_ns: int,
    ) -> None:
        self.commands: CommandQueue = deque()
        self.publications: list[NetworkPublication] = []
        self.waiter: SocketWaiter | None = None
        """Set before the agent starts: its endpoints' sockets end its park (see module)."""
        self.endpoints: list[SendChannelEndpoint] = []
        self._nano_clock = nano_clock
        self._bytes_sent = bytes_sent
        self._duty_cycle = DutyCycleStallTracker(
            max_cycle_time, cycle_time_threshold_exceeded, cycle_threshold_ns, nano_clock.time_ns()
        )
        self._duty_cycle_ratio = settings.send_to_status_poll_ratio
        self._status_message_read_timeout_ns = settings.status_message_timeout_ns // 2
        self._duty_cycle_counter = 0
        self._control_poll_deadline_ns = 0
        self._round_robin_index = 0

    @property
    def role_name(self) -> str:
        """``sender``: the sender thread's name."""
        return "sender"

    def on_start(self) -> None:
        """Nothing to do: the constructor did the set-up."""
        return None

    def on_close(self) -> None:
        """Nothing to do: the conductor closes the endpoints and publications."""
        return None

    def do_work(self) -> int:
        """One duty cycle (the module's steps); returns the work done.

        Bytes sent count as work; status messages that moved nothing do not.
        """
        now_ns = self._nano_clock.time_ns()
        self._duty_cycle.measure_and_update(now_ns)
        work_count = drain(self.commands) if self.commands else 0
        publications = self.publications  # each a turn, round robin (written out: no call)
        count = len(publications)
        bytes_sent = 0
        if count:
            start = self._round_robin_index
            if start >= count:
                start = 0
            self._round_robin_index = start + 1
            for i in range(start, count):
                bytes_sent += publications[i].send(now_ns)
            for i in range(start):
                bytes_sent += publications[i].send(now_ns)
            if bytes_sent:
                self._bytes_sent.add_ordered(bytes_sent)
        self._duty_cycle_counter += 1
        if (
            bytes_sent == 0
            or self._duty_cycle_counter >= self._duty_cycle_ratio
            or now_ns > self._control_poll_deadline_ns
        ):
            waiter = self.waiter
            ready = None if waiter is None else waiter.ready
            for endpoint in self.endpoints:
                if ready is None or endpoint.transport.fd in ready:
                    work_count += endpoint.poll(now_ns) - endpoint.keepalive_bytes
                    endpoint.keepalive_bytes = 0
            self._duty_cycle_counter = 0
            self._control_poll_deadline_ns = now_ns + self._status_message_read_timeout_ns
        return work_count + bytes_sent

    def send_now(self) -> int:
        """Step 2 of the duty cycle alone: give every publication a turn to send (data within
        its window, a due SETUP or heartbeat), in order; bytes sent. For a publisher of this
        process that holds the network thread's turn (``transport.driver.network_turn``):
        no commands are run and no socket is read, which stay the network thread's."""
        now_ns = self._nano_clock.time_ns()
        bytes_sent = 0
        for publication in self.publications:
            bytes_sent += publication.send(now_ns)
        if bytes_sent:
            self._bytes_sent.add_ordered(bytes_sent)
        return bytes_sent

    def left_work(self) -> bool:
        """Whether the last duty cycle left work that ends no park: commands past its drain
        limit, or a publication with a frame it may send now (it sent its
        ``max_messages_per_send`` datagrams, reached the term's end, sent short, or a status
        message opened its window after its turn). Control frames it left unread keep their
        socket readable, which ends the park. Caller: the thread that runs it, after a cycle
        that worked (``MediaDriver``)."""
        if self.commands:
            return True
        for publication in self.publications:  # noqa: SIM110  (any(): a generator's calls)
            if publication.has_unsent():
                return True
        return False

    def owes_soon(self) -> bool:
        """Whether a publication is owed a resend soon: a park should not wait past it (see
        :attr:`~transport.driver.MediaDriverContext.park_when_settled`)."""
        for publication in self.publications:  # noqa: SIM110  (any(): a generator's calls)
            if publication.owes_soon():
                return True
        return False

    # Commands (run on the sender thread) ------------------------------------------------------

    def on_add_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        """Command: read this send endpoint's socket for control frames from now on."""
        self.endpoints.append(endpoint)
        if self.waiter is not None:
            self.waiter.register(endpoint.transport.socket)

    def on_remove_endpoint(self, endpoint: SendChannelEndpoint) -> None:
        """Command: stop reading the endpoint and let go of it (the conductor closes it)."""
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
            if self.waiter is not None:
                self.waiter.unregister(endpoint.transport.socket)
        endpoint.sender_release()

    def on_add_publication(self, publication: NetworkPublication) -> None:
        """Command: send the publication from now on, and route its control frames to it."""
        self.publications.append(publication)
        publication.endpoint.add_publication(publication)

    def on_remove_publication(self, publication: NetworkPublication) -> None:
        """Command: stop sending the publication and let go of it."""
        if publication in self.publications:
            self.publications.remove(publication)
        publication.endpoint.remove_publication(publication)
        publication.sender_release()
