"""What the fault scenarios of broker groups share (``test_group_faults.py``,
``test_group_partitions.py``): their runs (once by default, 20 times with ``-m faults``), their
senders, a leader given a tail only it holds, a send straight to one member, and the end of a
run (senders stopped, every queue drained from a member, the history checked and its figures
recorded)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any, Final

import pytest

from aeromq.client import Message
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import ResponseCode
from aeromq.common.record_batch import encode_batch
from aeromq.producer import Producer, ProducerConfig, SendResult
from aeromq.proto import messages_pb2
from aeromq.transport.client import Aeron, AeronContext
from tests.faults.figures import fault_runs, verdict
from tests.faults.history import History
from tests.system._group import TOPIC, BrokerGroup, GroupSender, queue_of

FAILOVER_LIMIT_S: Final = 5.0
"""One run's bound on a failover (the fault to the first acknowledged send after it): the
target is a p99 of 3 s over 20 runs (reported by ``-m faults``); a loaded CI machine of 2 cores
slows every step, and 5 s still tells a failover from a hang (as ``test_broker_group.py``)."""
FILLER_TOPIC: Final = "filler"
FILLER: Final = ProducerConfig(
    send_timeout_ms=3000,
    retry_times_when_send_failed=0,
    retry_times_when_send_async_failed=0,
    async_requests_in_flight=0,
)


def parametrize_runs(metafunc: pytest.Metafunc) -> None:
    """Each scenario with a ``run`` argument runs :func:`fault_runs` times."""
    if "run" in metafunc.fixturenames:
        metafunc.parametrize("run", range(fault_runs(metafunc.config)))


class FaultRun:
    """One run of a scenario: the group started, its history, both :func:`senders` going with
    20 acknowledged sends each (see module)."""

    def __init__(self, group: BrokerGroup) -> None:
        group.start_all()
        self.group = group
        self.history = History()
        self.senders = senders(group, self.history)
        group.on_close(self.stop)
        wait_acked(self.senders, 20)

    def stop(self) -> None:
        """Stop the senders (again: harmless)."""
        for sender in self.senders:
            sender.stop()

    def fault(self, name: str) -> None:
        """Mark the fault ``name`` (its failover is timed from here)."""
        self.history.mark(name)

    def failover(self, deposed: int | None = None, *, timeout_s: float = 30.0) -> None:
        """Wait for a leader (not ``deposed``) and 20 more acknowledged sends of each sender
        (``p1`` fails over by itself, a send at a paused leader within its request timeout)."""
        self.group.wait_for_leader(other_than=deposed, timeout_s=timeout_s)
        wait_acked(self.senders, 20, timeout_s)

    def rejoin(self, member_id: int) -> None:
        """Start ``member_id`` again; wait until it is back in the ISR and 10 more sends each
        were acknowledged."""
        self.group.start(member_id)
        self.group.wait_for(lambda s: member_id in s.isr, f"member {member_id} in the ISR", 30)
        wait_acked(self.senders, 10)

    def finish(self, scenario: str, run: int, **options: Any) -> float | None:
        """:func:`finish` of this run."""
        return finish(scenario, run, self.group, self.history, self.senders, **options)


def senders(group: BrokerGroup, history: History) -> list[GroupSender]:
    """Two senders, started: ``p0`` on queue 0 follows the leader etcd names (the brokers'
    failover), ``p1`` on queue 1 is one idempotent producer failing over by itself."""
    return [
        GroupSender(group, history, "p0", queue_id=0).start(),
        GroupSender(group, history, "p1", queue_id=1, client_failover=True).start(),
    ]


def wait_acked(running: list[GroupSender], more: int, timeout_s: float = 30.0) -> None:
    """Wait until each sender has ``more`` acknowledged sends than now."""
    targets = [(sender, sender.acked + more) for sender in running]
    for sender, target in targets:
        sender.wait_acked(target, timeout_s)


def tail_only_the_leader_has(
    group: BrokerGroup, leader: int
) -> tuple[Producer, list[Future[SendResult]], list[int]]:
    """Pause the followers (less than their lease) and append 4 MB to the leader: more than
    their receive windows take, so the leader holds a tail no one acknowledged. Returns the
    filler producer, its sends and the paused followers (the caller resumes them)."""
    followers = [m for m in group.members if m != leader]
    filler = Producer("group-filler", group.grpc(leader), config=FILLER).start()
    filler.send(Message(FILLER_TOPIC, b"warm"))  # the route and the session, ready
    for member_id in followers:
        group.pause(member_id)
    pending = [filler.send_async(Message(FILLER_TOPIC, b"f" * 100_000)) for _ in range(40)]
    time.sleep(0.2)
    return filler, pending, followers


def direct_send(group: BrokerGroup, member_id: int, history: History, process: str) -> int:
    """One send straight to member ``member_id``'s ingress (not through a route, which would
    name the leader), recorded in ``history``; returns the answer's code."""
    endpoints = group.members[member_id].ready
    message_id = f"{process}-direct-{time.monotonic_ns()}"
    batch = bytes(encode_batch(TOPIC.encode(), [message_id.encode()]))
    request = messages_pb2.SendMessageRequest(topic=TOPIC, queue_id=0, batch=batch)
    op = history.invoke_send(process, message_id, queue_of(0))
    with (
        Aeron.connect(AeronContext(aeron_dir=endpoints["aeron_dir"])) as aeron,
        ClientSession.connect(aeron, SessionConfig(request_timeout_ms=10_000)) as session,
    ):
        answer = session.request(request, 10_000)
    assert isinstance(answer, messages_pb2.SendMessageResponse)
    code = answer.status.code
    if code == ResponseCode.SUCCESS:
        history.ok(op, offset=answer.base_queue_offset)
    elif code in (ResponseCode.NOT_LEADER, ResponseCode.NOT_ENOUGH_REPLICAS):
        history.fail(op, str(code))
    else:
        history.info(op, str(code))
    return int(code)


def finish(
    scenario: str,
    run: int,
    group: BrokerGroup,
    history: History,
    running: list[GroupSender],
    drain_from: int | None = None,
    fault: int = 0,
    timed: bool = True,
) -> float | None:
    """Stop the senders, drain every queue from ``drain_from`` (the leader by default), check
    the history and record its figures; returns the failover time after the ``fault``-th
    mark, checked against :data:`FAILOVER_LIMIT_S` when ``timed``."""
    for sender in running:
        sender.stop()
    member = group.wait_for_leader() if drain_from is None else drain_from
    group.drain(member, history, "c0")
    _, failover_s = verdict(scenario, run, history.ops, fault)
    if timed:
        assert failover_s is not None and failover_s < FAILOVER_LIMIT_S, failover_s
    return failover_s
