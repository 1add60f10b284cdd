"""``Receiver``: the media driver's agent that receives UDP streams (Aeron's ``Receiver``).

Its duty cycle (``do_work``):

1. run the conductor's queued commands (endpoints, subscriptions' stream interest, new images,
   images going away, cool-downs ending);
2. read every receive endpoint's socket: each datagram is validated and dispatched to its image
   (or turned into a request for one); right after a park in its
   :class:`~transport.driver.udp.socket_waiter.SocketWaiter`, only the sockets it saw readable;
3. give every image a turn: rebuild and loss detection (NAKs), status messages;

4. forget SETUP requests that went unanswered for the pending setup timeout, so the next frame
   asks again.

Keepalive traffic is not work for its idle strategy (Aeron counts it): a heartbeat that moved
nothing, a status message sent only because its timeout came round. An idle stream's peers
send one every 100-200 ms, and counting them kept the thread out of its deep park
(:mod:`~transport.driver.udp.socket_waiter` wakes it for every datagram anyway). Nor is any
status message it sends (Aeron counts those too): it asks the sender for more, and leaves this
thread's agents nothing more to do; counted, it ran one more duty cycle of all of them after
each that sent one, found empty (a broker group's follower sends one after most commit rounds,
``bench/_round_trace.py``).

A duty cycle that received data (not keepalives) rings :attr:`Receiver.data_doorbell` when one
is set (a process-local :class:`~transport.concurrent.Doorbell` of the driver, see
:attr:`~transport.driver.MediaDriver.data_doorbell`), once at its end: a subscriber of the same
process asleep on it wakes as the bytes land, not at its next timed poll. In the same cycle
each image rings the doorbells its subscriptions' channels name (``doorbell``, a counter of
the driver: any process of the driver may sleep on it) if it has new data to read
(:meth:`~transport.driver.udp.publication_image.PublicationImage.ring_doorbells`), so a
subscriber in another process, or one that sleeps on a doorbell of its own, wakes the same way.

On a thread that hosts agents (a broker group's replication, ``MediaDriver.host_agent``), the
subscribers read what the receiver took later in the same duty cycle: :meth:`Receiver.after_reads`
runs after them and the sender (before the hosted agents' ``after_send``) in a cycle that took
data, and sends the status messages their reads made due then, not a cycle later. A follower's
status message so leaves right behind its ACK, and its leader takes both in one wake of its
driver's thread rather than one each (``bench/_round_trace.py``).

It counts ``Bytes received`` and tracks its longest cycle (``Receiver max cycle time``).
Nothing a peer sends can raise out of it: bad datagrams are counted and dropped by the
endpoints.
"""

from __future__ import annotations

from collections import deque

from aeromq.transport.concurrent import AtomicCounter, NanoClock
from aeromq.transport.concurrent.doorbell import Doorbell
from aeromq.transport.driver.duty_cycle_tracker import DutyCycleStallTracker
from aeromq.transport.driver.udp.network_proxies import CommandQueue, drain
from aeromq.transport.driver.udp.publication_image import PublicationImage
from aeromq.transport.driver.udp.receive_channel_endpoint import ReceiveChannelEndpoint
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter

__all__ = ["Receiver"]


class Receiver:
    """The receiver agent (see module)."""

    def __init__(
        self,
        *,
        nano_clock: NanoClock,
        bytes_received: AtomicCounter,
        max_cycle_time: AtomicCounter,
        cycle_time_threshold_exceeded: AtomicCounter,
        cycle_threshold_ns: int,
    ) -> None:
        self.commands: CommandQueue = deque()
        self.waiter: SocketWaiter | None = None
        """Set before the agent starts: its endpoints' sockets end its park (see module)."""
        self.data_doorbell: Doorbell | None = None
        """Rung after a duty cycle that received data (see module); None: no one is rung."""
        self.endpoints: list[ReceiveChannelEndpoint] = []
        self.images: list[PublicationImage] = []
        self._nano_clock = nano_clock
        self._took_data = False
        """The last duty cycle took data (:meth:`after_reads` has work)."""
        self._bytes_received = bytes_received
        self._duty_cycle = DutyCycleStallTracker(
            max_cycle_time, cycle_time_threshold_exceeded, cycle_threshold_ns, nano_clock.time_ns()
        )

    @property
    def role_name(self) -> str:
        """``receiver``: the receiver thread's name."""
        return "receiver"

    def on_start(self) -> None:
        """Nothing to do: the constructor did the set-up."""
        return None

    def on_close(self) -> None:
        """Nothing to do: the conductor closes the endpoints and images."""
        return None

    def do_work(self) -> int:
        """One duty cycle (the module's steps); returns the work done.

        Bytes received count as work, less those of keepalive traffic.
        """
        now_ns = self._nano_clock.time_ns()
        self._duty_cycle.measure_and_update(now_ns)
        work_count = drain(self.commands) if self.commands else 0
        bytes_received = 0
        keepalive_bytes = 0
        waiter = self.waiter
        ready = None if waiter is None else waiter.ready
        for endpoint in self.endpoints:
            if ready is None or endpoint.transport.fd in ready:
                bytes_received += endpoint.poll(now_ns)
                if endpoint.keepalive_bytes:
                    keepalive_bytes += endpoint.keepalive_bytes
                    endpoint.keepalive_bytes = 0
            dispatcher = endpoint.dispatcher
            if dispatcher.pending_setups:
                work_count += dispatcher.check_pending_setups(now_ns)
        if bytes_received:
            self._bytes_received.add_ordered(bytes_received)
        for image in self.images:
            work_count += image.do_work(now_ns)
        data_bytes = bytes_received - keepalive_bytes
        self._took_data = data_bytes > 0
        if data_bytes > 0:
            if self.data_doorbell is not None:
                self.data_doorbell.ring()
            for image in self.images:
                if image.doorbells:
                    image.ring_doorbells()
        return work_count + data_bytes

    def after_reads(self) -> int:
        """After the subscribers of this thread read, in a cycle that took data: the status
        messages their reads made due (see module); not work. Caller: the thread that runs the
        receiver and hosted agents, after them in each duty cycle."""
        if not self._took_data:
            return 0
        self._took_data = False
        now_ns = self._nano_clock.time_ns()
        for image in self.images:
            image.status_after_reads(now_ns)
        return 0

    def left_work(self) -> bool:
        """Whether the last duty cycle left work that ends no park: commands past its drain
        limit (datagrams it left unread keep their socket readable, which ends the park).
        Caller: the thread that runs it, after a cycle that worked (``MediaDriver``)."""
        return bool(self.commands)

    def owes_soon(self) -> bool:
        """Whether an image is owed a status message or a NAK soon: a park should not wait
        past it (see :attr:`~transport.driver.MediaDriverContext.park_when_settled`)."""
        for image in self.images:  # noqa: SIM110  (any(): a generator's calls, after each cycle)
            if image.owes_soon():
                return True
        return False

    # Commands (run on the receiver thread) ----------------------------------------------------

    def on_add_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        """Command: read this receive endpoint's socket from now on."""
        self.endpoints.append(endpoint)
        if self.waiter is not None:
            self.waiter.register(endpoint.transport.socket)

    def on_remove_endpoint(self, endpoint: ReceiveChannelEndpoint) -> None:
        """Command: stop reading the endpoint and let go of it (the conductor closes it)."""
        if endpoint in self.endpoints:
            self.endpoints.remove(endpoint)
            if self.waiter is not None:
                self.waiter.unregister(endpoint.transport.socket)
        endpoint.receiver_release()

    def on_add_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        """Command: a subscription wants ``stream_id`` here (``session_id``, or all if None)."""
        if session_id is None:
            endpoint.dispatcher.add_subscription(stream_id)
        else:
            endpoint.dispatcher.add_subscription_by_session(stream_id, session_id)

    def on_remove_subscription(
        self, endpoint: ReceiveChannelEndpoint, stream_id: int, session_id: int | None
    ) -> None:
        """Command: the endpoint's last subscription to ``stream_id`` (or that session) went."""
        if session_id is None:
            endpoint.dispatcher.remove_subscription(stream_id)
        else:
            endpoint.dispatcher.remove_subscription_by_session(stream_id, session_id)

    def on_new_publication_image(self, image: PublicationImage) -> None:
        """Command: dispatch the image's frames to it and give it a turn each cycle."""
        self.images.append(image)
        image.endpoint.dispatcher.add_publication_image(image)

    def on_remove_publication_image(self, image: PublicationImage) -> None:
        """Command: stop feeding the image (its session cools down) and let go of it."""
        if image in self.images:
            self.images.remove(image)
        image.endpoint.dispatcher.remove_publication_image(image)
        image.receiver_release()

    def on_remove_cool_down(
        self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int
    ) -> None:
        """Command: the image is freed; the session may get a new one."""
        endpoint.dispatcher.remove_cool_down(session_id, stream_id)

    def on_remove_init_in_progress(
        self, endpoint: ReceiveChannelEndpoint, session_id: int, stream_id: int
    ) -> None:
        """Command: the SETUP did not become an image; the next one may ask again."""
        endpoint.dispatcher.remove_init_in_progress(session_id, stream_id)
