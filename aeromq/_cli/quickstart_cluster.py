"""``aeromq quickstart --cluster``: the main job on a broker group of three, its leader killed
half way (private to ``aeromq quickstart``; Caller: :func:`~aeromq._cli.quickstart.main`).

1. ``aeromq cluster up``'s runner (:mod:`~aeromq._cli.cluster_runner`): etcd and three broker
   processes of one group (``min_isr`` 2), in a temporary directory; a member that dies is
   started again (it rejoins as a follower).
2. A topic of 4 queues, created on the leader; two lite pull consumers of one group, each in a
   process of its own (:func:`~aeromq._cli.quickstart_member.run_member`), given every member's
   gRPC address.
3. A producer (this process; the idempotent producer, on by default) sends checksummed messages
   in batches of ``--batch``, one batch at a time. Half way, the leader is SIGKILLed: the
   producer's send in flight fails over to the new leader by itself; the time from the kill to
   the first acknowledged send after it is printed as the failover time, and the consumers
   carry on.
4. Once the consumers have every acknowledged message, the check: a fresh consumer reads every
   queue from its first offset and finds each acknowledged message (nothing lost) at exactly one
   queue offset (nothing stored twice: a retried send was not stored again), every body intact.
   The consumers' own deliveries may repeat a message after the failover (delivery is at least
   once; their offsets committed before the kill are where they resume).

The last line is ``result: OK, ...`` or ``result: FAILED (...)``; exit status 0 only for OK.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import queue
import shutil
import tempfile
import time
import zlib
from array import array
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import TextIO

from aeromq._cli.cluster_runner import ClusterError, ClusterSpec, LocalCluster
from aeromq._cli.quickstart_member import (
    GROUP,
    HEADER,
    HEADER_LENGTH,
    TOPIC,
    Report,
    body,
    run_member,
)

__all__ = ["run_cluster"]

_QUEUES = 4
_MEMBERS = ("c1", "c2")
_SEND_TIMEOUT_MS = 15_000  # a send in flight at the kill waits for the election (~2.5 s)
_SETTLE_S = 60.0
_LINE_INTERVAL_S = 1.0
_BROKER_ARGS = (
    "--auto-create-topic", "false", "--index-enabled", "false", "--metrics-port", "none",
    "--commit-log-segment-bytes", "64MiB",
)  # fmt: skip


class _Consumers:
    """The consumer processes and what they reported (distinct sequence numbers, receipts)."""

    def __init__(self, endpoints: str) -> None:
        self.ctx = mp.get_context("spawn")
        self.events: mp.Queue[Report] = self.ctx.Queue()
        self.stop = self.ctx.Event()
        self.processes: dict[str, BaseProcess] = {}
        self.seen: set[int] = set()
        self.received = 0
        self.corrupt = 0
        self._received: dict[str, int] = {}
        self._corrupt: dict[str, int] = {}
        self.queues: dict[str, tuple[int, ...]] = {}
        for name in _MEMBERS:
            process = self.ctx.Process(
                target=_quiet_member,
                args=(name, endpoints, self.events, self.stop),
                name=f"quickstart-{name}",
                daemon=True,
            )
            process.start()
            self.processes[name] = process

    def drain(self, timeout_s: float = 0.0) -> None:
        try:
            report = self.events.get(timeout=timeout_s) if timeout_s else self.events.get_nowait()
            while True:
                self.seen.update(array("q", report.seqs))
                self._received[report.member] = report.received
                self._corrupt[report.member] = report.corrupt
                self.queues[report.member] = report.queues
                self.received = sum(self._received.values())
                self.corrupt = sum(self._corrupt.values())
                report = self.events.get_nowait()
        except queue.Empty:
            pass

    def wait_assigned(self) -> None:
        """Wait until every queue is owned by a consumer (each has started, joined and been
        given its queues), at most :data:`_SETTLE_S`."""
        deadline = time.monotonic() + _SETTLE_S
        while time.monotonic() < deadline:
            self.drain(0.1)
            owned = sorted(q for queues in self.queues.values() for q in queues)
            if len(self.queues) == len(_MEMBERS) and owned == list(range(_QUEUES)):
                return
        raise RuntimeError(f"the consumers did not get the topic's queues in {_SETTLE_S:.0f} s")

    def close(self) -> bool:
        """Stop the consumers; True when each exited cleanly."""
        self.stop.set()
        deadline = time.monotonic() + _SETTLE_S
        for process in self.processes.values():
            while process.is_alive() and time.monotonic() < deadline:
                self.drain(0.05)
                process.join(0.05)
            if process.is_alive():
                process.kill()
                process.join(5)
        self.drain()
        return all(p.exitcode == 0 for p in self.processes.values())


def _check(endpoints: str, acknowledged: set[int]) -> tuple[set[int], dict[int, int], int]:
    """Read every queue from its first offset: (acknowledged messages missing, sequence number
    -> queue offsets it is stored at when more than one, corrupt bodies)."""
    from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig

    config = LitePullConsumerConfig(
        consumer_group=f"{GROUP}-check-{time.time_ns()}",
        endpoints=tuple(endpoints.split(",")),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
        auto_commit=False,
    )
    stored: dict[int, set[tuple[int, int]]] = {}
    corrupt = 0
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    consumer.start()
    try:
        deadline = time.monotonic() + _SETTLE_S
        idle_until = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            messages = consumer.poll()
            for message in messages:
                seq, _sent_ns, crc = HEADER.unpack_from(message.body)
                if zlib.crc32(message.body[HEADER_LENGTH:]) != crc:
                    corrupt += 1
                stored.setdefault(seq, set()).add((message.queue_id, message.queue_offset))
            if messages:
                idle_until = time.monotonic() + 3.0
            elif acknowledged <= stored.keys() and time.monotonic() > idle_until:
                break
    finally:
        consumer.shutdown()
    twice = {seq: len(places) for seq, places in stored.items() if len(places) > 1}
    return acknowledged - stored.keys(), twice, corrupt


def _failover_line(cluster: LocalCluster, killed_at: float, failover_s: float) -> str:
    leader = cluster.leader()
    elected = None if leader is None else leader.leader_since_s
    election = (
        "" if leader is None or elected is None or elected < killed_at
        else f"member {leader.member_id} elected leader {elected - killed_at:.2f} s after the "
        "kill; "
    )  # fmt: skip
    return (
        f"failover: {election}the producer's first acknowledged send after the kill "
        f"{failover_s:.2f} s after it"
    )


def _quiet_member(name: str, endpoints: str, events: mp.Queue[Report], stop: Event) -> None:
    """A consumer process that logs errors only (the refused calls and lost streams of the
    failover are expected: its consumer retries them)."""
    logging.getLogger("aeromq").setLevel(logging.ERROR)
    run_member(name, endpoints, events, stop)


def _create_topic(cluster: LocalCluster, timeout_s: float = 30.0) -> None:
    """Create the quickstart's topic on the group's leader, again on the leader of the moment
    while the group answers that it cannot yet (a retriable ``BrokerUnavailableError``: no
    leader, ``NOT_LEADER``, or the ISR still below ``min_isr`` while the followers catch up)."""
    from aeromq.client import BrokerUnavailableError, GrpcClient
    from aeromq.client.failover import Backoff

    deadline_ns = time.monotonic_ns() + int(timeout_s * 1e9)
    backoff = Backoff()
    while True:
        leader = cluster.leader()
        try:
            if leader is None:
                raise BrokerUnavailableError("the group has no leader")
            with GrpcClient(leader.grpc, timeout_s=timeout_s) as admin:
                admin.create_topic(TOPIC, read_queue_nums=_QUEUES, write_queue_nums=_QUEUES)
            return
        except BrokerUnavailableError:
            if not backoff.sleep(deadline_ns):
                raise


def run_cluster(args: argparse.Namespace, out: TextIO) -> int:
    """The run (see module); returns the exit status."""
    from aeromq.client import ClientError, Message
    from aeromq.producer import Producer, ProducerConfig

    def say(text: str) -> None:
        print(text, file=out, flush=True)

    scratch = None if args.data_dir else Path(tempfile.mkdtemp(prefix="aeromq-quickstart-"))
    root: Path = args.data_dir if scratch is None else scratch
    cluster = LocalCluster(ClusterSpec(root / "cluster", broker_args=_BROKER_ARGS), out)
    consumers: _Consumers | None = None
    failures: list[str] = []
    acknowledged: set[int] = set()
    failed_sends: list[str] = []
    try:
        cluster.start()
        endpoints = cluster.endpoints
        leader = cluster.leader()
        if leader is None:
            raise RuntimeError("the group has no leader")
        say(f"cluster: 3 members, leader member={leader.member_id} pid={leader.pid}, "
            f"endpoints={endpoints}")  # fmt: skip
        cluster.watch()
        _create_topic(cluster)
        consumers = _Consumers(endpoints)
        say(f"topic: {TOPIC} with {_QUEUES} queues; group {GROUP}: {', '.join(_MEMBERS)}")
        consumers.wait_assigned()
        config = ProducerConfig(send_timeout_ms=_SEND_TIMEOUT_MS)
        killed_at: float | None = None
        failover_s: float | None = None
        sent_at_kill = 0
        next_line = time.monotonic()
        started = time.monotonic()
        with Producer("quickstart-producers", endpoints, config=config) as producer:
            for first in range(0, args.messages, args.batch):
                if killed_at is None and first >= args.messages // 2:
                    victim = cluster.leader()
                    assert victim is not None
                    sent_at_kill = len(acknowledged)
                    say(f"kill -9 the leader: member={victim.member_id} pid={victim.pid} "
                        f"after {sent_at_kill} acknowledged")  # fmt: skip
                    cluster.kill(victim.member_id)
                    killed_at = time.monotonic()
                last = min(first + args.batch, args.messages)
                now_ns = time.time_ns()
                batch = [Message(TOPIC, body(seq, args.size, now_ns)) for seq in range(first, last)]
                try:
                    producer.send_batch(batch)
                except ClientError as exc:  # its outcome is unknown: not counted as acknowledged
                    failed_sends.append(f"{type(exc).__name__}: {exc}")
                    continue
                acknowledged.update(range(first, last))
                if killed_at is not None and failover_s is None:
                    failover_s = time.monotonic() - killed_at
                    say(_failover_line(cluster, killed_at, failover_s))
                consumers.drain()
                if time.monotonic() >= next_line:
                    next_line = time.monotonic() + _LINE_INTERVAL_S
                    say(f"sent={len(acknowledged)} received={len(consumers.seen)}")
        send_s = time.monotonic() - started
        received_at_kill = len(consumers.seen)
        deadline = time.monotonic() + _SETTLE_S
        while not acknowledged <= consumers.seen and time.monotonic() < deadline:
            consumers.drain(0.1)
        say(f"sent={len(acknowledged)} received={len(consumers.seen)} "
            f"({len(acknowledged) / send_s:,.0f} msgs/s sent one batch at a time)")  # fmt: skip
        if not acknowledged <= consumers.seen:
            failures.append(
                f"the consumers did not receive {len(acknowledged - consumers.seen)} "
                "acknowledged messages"
            )
        elif received_at_kill:
            say("consumers: carried on past the failover, every acknowledged message received")
        clean = consumers.close()
        consumers = None
        if not clean:
            failures.append("a consumer did not stop cleanly")
        lost, twice, corrupt = _check(endpoints, acknowledged)
        new_leader = cluster.leader()
        say(f"check: acknowledged={len(acknowledged)} lost={len(lost)} stored_twice={len(twice)} "
            f"corrupt={corrupt} failed_sends={len(failed_sends)} "
            f"leader now member={None if new_leader is None else new_leader.member_id} "
            f"failover_s={'none' if failover_s is None else f'{failover_s:.2f}'}")  # fmt: skip
        if lost:
            failures.append(f"{len(lost)} acknowledged messages lost")
        if twice:
            failures.append(f"{len(twice)} messages stored twice")
        if corrupt:
            failures.append(f"{corrupt} corrupt bodies")
        if failover_s is None:
            failures.append("no send was acknowledged after the kill")
        for reason in failed_sends[:3]:
            say(f"failed send (outcome unknown, not counted as acknowledged): {reason}")
    except (ClientError, ClusterError, RuntimeError, OSError) as exc:
        failures.append(f"{type(exc).__name__}: {exc}")
    finally:
        if consumers is not None:
            consumers.close()
        if not cluster.stop():
            failures.append("a member did not stop in time")
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        say(f"result: FAILED ({'; '.join(dict.fromkeys(failures))})")
        return 1
    say("result: OK, nothing acknowledged lost or stored twice across the leader's kill")
    return 0
