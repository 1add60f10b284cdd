"""The sender and receiver agents: commands through their queues, duty cycles, counters."""

from __future__ import annotations

from collections import deque
from typing import Any

from aeromq.transport.concurrent import SettableClock
from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.network_proxies import (
    DriverConductorProxy,
    ReceiverProxy,
    SenderProxy,
    drain,
)
from aeromq.transport.driver.udp.receiver import Receiver
from aeromq.transport.driver.udp.sender import Sender
from aeromq.transport.driver.udp.socket_waiter import SocketWaiter
from aeromq.transport.driver.udp.udp_settings import UdpSettings
from tests.transport.udp.support import system_counters

MS = 1_000_000


class FakePublication:
    def __init__(self, name: str, sends: list[str], bytes_per_send: int = 0) -> None:
        self.name = name
        self._sends = sends
        self.bytes_per_send = bytes_per_send
        self.endpoint = FakeSendEndpoint()
        self.released = False
        self.unsent = False

    def has_unsent(self) -> bool:
        return self.unsent

    def send(self, now_ns: int) -> int:
        self._sends.append(self.name)
        return self.bytes_per_send

    def sender_release(self) -> None:
        self.released = True


class FakeTransport:
    def __init__(self, fd: int) -> None:
        self.fd = fd


class FakeSendEndpoint:
    def __init__(self, fd: int = -1) -> None:
        self.transport = FakeTransport(fd)
        self.keepalive_bytes = 0
        self.polls: list[int] = []
        self.publications: list[Any] = []
        self.released = False

    def poll(self, now_ns: int) -> int:
        self.polls.append(now_ns)
        return 0

    def add_publication(self, publication: Any) -> None:
        self.publications.append(publication)

    def remove_publication(self, publication: Any) -> None:
        self.publications.remove(publication)

    def sender_release(self) -> None:
        self.released = True


def _sender(clock: SettableClock, system: SystemCounters) -> Sender:
    return Sender(
        settings=UdpSettings(send_to_status_poll_ratio=3),
        nano_clock=clock,
        bytes_sent=system.get(SystemCounter.BYTES_SENT),
        max_cycle_time=system.get(SystemCounter.SENDER_MAX_CYCLE_TIME),
        cycle_time_threshold_exceeded=system.get(
            SystemCounter.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED
        ),
        cycle_threshold_ns=10 * MS,
    )


def test_should_take_publications_and_endpoints_through_its_queue() -> None:
    clock = SettableClock()
    _, system = system_counters()
    sender = _sender(clock, system)
    proxy = SenderProxy(sender)
    sends: list[str] = []
    publication = FakePublication("a", sends)
    endpoint = publication.endpoint
    proxy.add_endpoint(endpoint)
    proxy.add_publication(publication)
    assert sender.publications == [] and len(sender.commands) == 2
    sender.do_work()
    assert sender.publications == [publication] and sender.endpoints == [endpoint]
    assert endpoint.publications == [publication]
    proxy.remove_publication(publication)
    proxy.remove_endpoint(endpoint)
    sender.do_work()
    assert publication.released and endpoint.released
    assert sender.publications == [] and sender.endpoints == []


def test_should_send_round_robin_and_poll_control_at_the_ratio() -> None:
    clock = SettableClock()
    _, system = system_counters()
    sender = _sender(clock, system)
    sends: list[str] = []
    publications = [FakePublication(name, sends, 100) for name in "abc"]
    endpoint = FakeSendEndpoint()
    sender.on_add_endpoint(endpoint)
    for publication in publications:
        sender.on_add_publication(publication)
    for _ in range(4):
        clock.advance_ns(1_000)
        sender.do_work()
    assert sends == list("abc") + list("bca") + list("cab") + list("abc")
    assert system.get(SystemCounter.BYTES_SENT).get() == 1200
    assert len(endpoint.polls) == 2  # the first cycle (deadline), then after 3 more (ratio)
    for publication in publications:
        publication.bytes_per_send = 0
    sender.do_work()
    assert len(endpoint.polls) == 3  # nothing sent: poll at once
    clock.advance_ns(101 * MS)  # half the status message timeout: poll whatever the ratio
    for publication in publications:
        publication.bytes_per_send = 100
    sender.do_work()
    assert len(endpoint.polls) == 4


def test_should_read_only_the_sockets_its_waiter_saw_readable() -> None:
    clock = SettableClock()
    _, system = system_counters()
    sender = _sender(clock, system)
    sender.waiter = SocketWaiter()
    endpoints = [FakeSendEndpoint(fd) for fd in (101, 102)]
    for endpoint in endpoints:
        sender.endpoints.append(endpoint)  # not on_add_endpoint: no real socket to register
    sender.waiter.ready = {102}  # a park saw only the second readable
    sender.do_work()  # nothing sent: reads control frames
    assert [len(endpoint.polls) for endpoint in endpoints] == [0, 1]
    sender.waiter.ready = None  # not known (no park, no look): every socket
    sender.do_work()
    assert [len(endpoint.polls) for endpoint in endpoints] == [1, 2]
    sender.waiter.close()


def test_should_track_its_longest_cycle() -> None:
    clock = SettableClock()
    _, system = system_counters()
    sender = _sender(clock, system)
    clock.advance_ns(2 * MS)
    sender.do_work()
    clock.advance_ns(20 * MS)
    sender.do_work()
    assert system.get(SystemCounter.SENDER_MAX_CYCLE_TIME).get() == 20 * MS
    assert system.get(SystemCounter.SENDER_CYCLE_TIME_THRESHOLD_EXCEEDED).get() == 1


class FakeDispatcher:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.calls.append((name, *args)) or 0


class FakeReceiveEndpoint:
    def __init__(self, fd: int = -1) -> None:
        self.transport = FakeTransport(fd)
        self.keepalive_bytes = 0
        self.dispatcher = FakeDispatcher()
        self.released = False
        self.polls = 0

    def poll(self, now_ns: int) -> int:
        self.polls += 1
        return 10

    def receiver_release(self) -> None:
        self.released = True


class FakeImage:
    def __init__(self, endpoint: FakeReceiveEndpoint) -> None:
        self.endpoint = endpoint
        self.work: list[int] = []
        self.released = False
        self.doorbells: tuple[object, ...] = ()  # no subscription named one

    def do_work(self, now_ns: int) -> int:
        self.work.append(now_ns)
        return 1

    def receiver_release(self) -> None:
        self.released = True


def _receiver(clock: SettableClock, system: SystemCounters) -> Receiver:
    return Receiver(
        nano_clock=clock,
        bytes_received=system.get(SystemCounter.BYTES_RECEIVED),
        max_cycle_time=system.get(SystemCounter.RECEIVER_MAX_CYCLE_TIME),
        cycle_time_threshold_exceeded=system.get(
            SystemCounter.RECEIVER_CYCLE_TIME_THRESHOLD_EXCEEDED
        ),
        cycle_threshold_ns=10 * MS,
    )


def test_should_run_the_conductors_commands_and_every_image() -> None:
    clock = SettableClock(5)
    _, system = system_counters()
    receiver = _receiver(clock, system)
    proxy = ReceiverProxy(receiver)
    endpoint = FakeReceiveEndpoint()
    image = FakeImage(endpoint)
    proxy.add_endpoint(endpoint)
    proxy.add_subscription(endpoint, 7, None)
    proxy.add_subscription(endpoint, 8, 42)
    proxy.new_publication_image(image)
    work = receiver.do_work()
    assert receiver.endpoints == [endpoint] and receiver.images == [image]
    assert work >= 4 + 10 + 1
    assert image.work == [5]
    assert system.get(SystemCounter.BYTES_RECEIVED).get() == 10
    proxy.remove_cool_down(endpoint, 42, 8)
    proxy.remove_init_in_progress(endpoint, 43, 8)
    proxy.remove_subscription(endpoint, 7, None)
    proxy.remove_subscription(endpoint, 8, 42)
    proxy.remove_publication_image(image)
    proxy.remove_endpoint(endpoint)
    receiver.do_work()
    names = [call[0] for call in endpoint.dispatcher.calls]
    assert names == [
        "add_subscription",
        "add_subscription_by_session",
        "add_publication_image",
        "check_pending_setups",
        "remove_cool_down",
        "remove_init_in_progress",
        "remove_subscription",
        "remove_subscription_by_session",
        "remove_publication_image",
    ]
    assert image.released and endpoint.released
    assert receiver.images == [] and receiver.endpoints == []


def test_should_receive_only_on_the_sockets_its_waiter_saw_readable() -> None:
    clock = SettableClock(5)
    _, system = system_counters()
    receiver = _receiver(clock, system)
    receiver.waiter = SocketWaiter()
    endpoints = [FakeReceiveEndpoint(fd) for fd in (201, 202)]
    receiver.endpoints.extend(endpoints)  # no real socket to register
    receiver.waiter.ready = {201}
    assert receiver.do_work() == 10
    assert [endpoint.polls for endpoint in endpoints] == [1, 0]
    receiver.waiter.ready = set()  # a quiet park: no read at all
    receiver.do_work()
    assert [endpoint.polls for endpoint in endpoints] == [1, 0]
    receiver.waiter.ready = None
    receiver.do_work()
    assert [endpoint.polls for endpoint in endpoints] == [2, 1]
    receiver.waiter.close()


def test_should_drain_at_most_the_limit_per_cycle() -> None:
    ran: list[int] = []
    queue: Any = deque((ran.append, (i,)) for i in range(15))
    assert drain(queue) == 10
    assert drain(queue) == 5
    assert ran == list(range(15))


def test_should_queue_image_requests_for_the_conductor() -> None:
    requests: list[Any] = []
    proxy = DriverConductorProxy(requests.append)
    proxy.create_publication_image(None, 1, 2, 3, 4, 64, 65536, 1408, ("a", 1), ("b", 2))
    assert requests == []
    drain(proxy.queue)
    request = requests[0]
    assert (request.session_id, request.stream_id, request.term_length) == (1, 2, 65536)
    assert (request.control_address, request.source_address) == (("a", 1), ("b", 2))


def test_should_say_when_a_sender_cycle_left_work_that_ends_no_park() -> None:
    """The sender's ``left_work``: commands past its drain limit, a publication that may send
    now; the receiver's: commands past its limit."""
    clock = SettableClock()
    _, system = system_counters()
    sender = _sender(clock, system)
    proxy = SenderProxy(sender)
    publications = [FakePublication(name, [], 0) for name in "ab"]
    for publication in publications:
        proxy.add_publication(publication)
    for _ in range(10):
        proxy.add_endpoint(FakeSendEndpoint())
    sender.do_work()  # ten of twelve commands
    assert sender.left_work()
    sender.do_work()
    assert sender.publications == publications
    assert not sender.left_work()
    publications[1].unsent = True
    assert sender.left_work()
    receiver = _receiver(clock, system)
    receiver_proxy = ReceiverProxy(receiver)
    for _ in range(11):
        receiver_proxy.add_endpoint(FakeReceiveEndpoint(-1))
    receiver.do_work()
    assert receiver.left_work()
    receiver.do_work()
    assert not receiver.left_work()
