"""The replication agents of a leader and a follower in one process, over a real media driver
(frames on UDP loopback) and a real gRPC server (the truncation handshake), with logs in
memory: the follower catches up and the high watermark moves, a divergent tail is truncated,
a deposed leader's frames are refused, min_isr holds sends and the high watermark, the fence
ends a term, a silent follower is asked out of the ISR, and the leader acknowledges nothing
before its own fsync returned (nor on one that returned after the fence fired) while its driver's
thread goes on replicating."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aeromq.broker.grpc import REPLICATION_SERVICE, GrpcServerBase
from aeromq.broker.grpc.servicers import GroupReplicationServicer
from aeromq.broker.replication import (
    EpochFile,
    GroupSnapshot,
    GroupState,
    MemberInfo,
    ReplicationAgent,
    Role,
    SelfFence,
    encode_append,
)
from aeromq.broker.replication.frame_descriptor import LEADER_STREAM_ID
from aeromq.broker.replication.replicator import ReplicationSettings, replication_channel
from aeromq.common import ResponseCode
from aeromq.proto import replication_pb2, replication_pb2_grpc
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.dynamic_composite_agent import HostedAgent
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.concurrent.network_wakes import network_wake, register_network_wake
from aeromq.transport.driver import MediaDriver, MediaDriverContext, ThreadingMode
from tests.broker.replication._memory_log import MemoryLog
from tests.broker.replication._waits import wait_until

GROUP = "g"
SETTINGS = ReplicationSettings(replica_lag_max_ms=300, max_frame_bytes=4096)
FSYNC_THREAD_SETTINGS = ReplicationSettings(
    replica_lag_max_ms=300, max_frame_bytes=4096, leader_fsync_inline=False
)
"""A leader on the driver's thread asks its fsync thread for the fsync (not the default)."""


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class _Member:
    """One member: its agent (running), log, data dir and what the agent asked of etcd."""

    agent: ReplicationAgent
    log: MemoryLog
    data_dir: Path
    info: MemberInfo
    lease_ok: list[bool] = field(default_factory=lambda: [True])
    isr_requests: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    fenced: list[int] = field(default_factory=list)


class _Cluster:
    """Members of one group on one media driver; each member's gRPC answers the handshake."""

    def __init__(self, root: Path, on_driver_thread: bool = False) -> None:
        self.root = root
        mode = ThreadingMode.SHARED if on_driver_thread else ThreadingMode.DEDICATED
        self.driver = MediaDriver.launch_embedded(
            MediaDriverContext(
                term_buffer_sparse_file=True, threading_mode=mode, park_when_settled=True
            )
        )
        self.aeron = Aeron.connect(AeronContext(aeron_dir=self.driver.aeron_dir))
        self.members: dict[int, _Member] = {}
        self._runners: list[AgentRunner | HostedAgent] = []
        self._servers: list[GrpcServerBase] = []

    def add(
        self,
        member_id: int,
        log: MemoryLog,
        epochs: Sequence[tuple[int, int]] = (),
        settings: ReplicationSettings = SETTINGS,
    ) -> _Member:
        data_dir = self.root / f"member-{member_id}"
        data_dir.mkdir()
        epoch_file = EpochFile(data_dir)
        for epoch, start in epochs:
            epoch_file.append(epoch, start)
        endpoint = f"127.0.0.1:{_free_udp_port()}"
        holder: list[_Member] = []
        agent = ReplicationAgent(
            self.aeron,
            log,
            data_dir,
            group=GROUP,
            member_id=member_id,
            endpoint=endpoint,
            fence=SelfFence(lambda now: holder[0].lease_ok[0]),
            settings=settings,
            request_isr=lambda epoch, isr: holder[0].isr_requests.append((epoch, tuple(isr))),
            fenced=lambda epoch: holder[0].fenced.append(epoch),
        )
        server = self._serve(agent)
        info = MemberInfo(member_id, 1, server.address, "aeron:ipc", 1, "", 0, endpoint, "", "h")
        member = _Member(agent, log, data_dir, info)
        holder.append(member)
        self.members[member_id] = member
        hosted = self.driver.host_agent(agent, _raise, agent.rung_only)
        if hosted is not None:  # the agent runs on the driver's network thread
            assert agent.driver_thread is self.driver
            self._runners.append(hosted)
            return member
        assert agent.driver_thread is None
        runner = AgentRunner(BackoffIdleStrategy(10, 10, 1000, 1_000_000), _raise, None, agent)
        runner.start()
        self._runners.append(runner)
        return member

    def _serve(self, agent: ReplicationAgent) -> GrpcServerBase:
        def answer(
            request: replication_pb2.ReplicaEpochEndRequest,
        ) -> replication_pb2.ReplicaEpochEndResponse:
            found = agent.epoch_end(request.leader_epoch, request.epoch)
            response = replication_pb2.ReplicaEpochEndResponse()
            if found is None:
                response.status.code = ResponseCode.NOT_LEADER
            else:
                response.epoch, response.end_offset = found
            return response

        servicer = GroupReplicationServicer(answer)
        server = GrpcServerBase(
            "127.0.0.1",
            0,
            {
                REPLICATION_SERVICE: lambda s: (
                    replication_pb2_grpc.add_GroupReplicationServicer_to_server(servicer, s)
                )
            },
        )
        server.start()
        self._servers.append(server)
        return server

    def tell(self, state: GroupState, leader_lead: bool = True) -> None:
        """Hand every member the snapshot of ``state`` (the leader's says ``lead``)."""
        members = {m: member.info for m, member in self.members.items()}
        for member_id, member in self.members.items():
            lead = leader_lead and member_id == state.leader
            member.agent.on_group(GroupSnapshot(state, members, lead))

    def close(self) -> None:
        for runner in self._runners:
            runner.close()
        for server in self._servers:
            server.stop()
        self.aeron.close()
        self.driver.close()


def _raise(error: Exception) -> None:
    raise error


@pytest.fixture(params=["own-thread", "driver-thread"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[_Cluster]:
    """The members' agents on threads of their own, or on their driver's network thread."""
    members = _Cluster(tmp_path, on_driver_thread=request.param == "driver-thread")
    try:
        yield members
    finally:
        members.close()


def test_should_replicate_the_leaders_log_and_move_the_high_watermark(cluster: _Cluster) -> None:
    leader = cluster.add(0, MemoryLog())
    follower = cluster.add(1, MemoryLog())
    cluster.tell(GroupState(0, 1, (0, 1), 2))
    wait_until(lambda: leader.agent.role is Role.LEADER)

    chunks = [bytes([i]) * (1000 + 977 * i) for i in range(12)]  # frames of 4 KiB at most
    for chunk in chunks:
        leader.log.append(chunk)
    end = leader.log.max_physical_offset

    wait_until(lambda: follower.log.data == leader.log.data)
    wait_until(lambda: leader.log.committed_offset == end)
    wait_until(lambda: follower.log.committed_offset == end)  # from the frames
    assert leader.agent.write_refusal() == 0
    assert follower.agent.write_refusal() == ResponseCode.NOT_LEADER
    assert EpochFile(leader.data_dir).entries == EpochFile(follower.data_dir).entries == ((1, 0),)
    assert follower.log.flushed_physical_offset == end


def test_should_wake_the_driver_on_its_offers_only_from_a_thread_of_its_own(
    cluster: _Cluster,
) -> None:
    """On the driver's network thread the agents' offers go out in the same duty cycle (its
    sender runs next): their publications wake no park, which would only run an empty cycle
    after it; an agent on a thread of its own wakes the driver's sender after its offers."""
    aeron_dir = cluster.driver.aeron_dir
    wake = network_wake(aeron_dir)
    assert wake is not None
    offer_wakes = [0]

    def counted() -> None:  # the publications made from now on call this after each offer
        offer_wakes[0] += 1
        wake()

    register_network_wake(aeron_dir, counted)
    try:  # the publications are made once the leader and follower know each other
        leader = cluster.add(0, MemoryLog())
        follower = cluster.add(1, MemoryLog())
        cluster.tell(GroupState(0, 1, (0, 1), 2))
        wait_until(lambda: leader.agent.role is Role.LEADER)
        for i in range(6):
            leader.log.append(bytes([i]) * 3000)
        end = leader.log.max_physical_offset
        wait_until(lambda: leader.log.committed_offset == end)
    finally:  # the driver unregisters its own wake as it closes
        register_network_wake(aeron_dir, wake)
    assert follower.log.data == leader.log.data
    if leader.agent.driver_thread is not None:
        assert offer_wakes[0] == 0
    else:
        assert offer_wakes[0] > 0


def test_should_truncate_a_divergent_tail_before_fetching(cluster: _Cluster) -> None:
    common = b"c" * 1000
    leader = cluster.add(0, MemoryLog(common + b"L" * 200), epochs=[(1, 0), (2, 1000)])
    follower = cluster.add(1, MemoryLog(common + b"F" * 500), epochs=[(1, 0)])
    cluster.tell(GroupState(0, 3, (0, 1), 2))

    wait_until(lambda: follower.log.data == leader.log.data)

    fetcher = follower.agent.fetcher
    assert fetcher is not None and fetcher.counters.truncated_bytes == 500
    assert EpochFile(follower.data_dir).entries == ((1, 0), (2, 1000))
    assert not (follower.data_dir / "truncate.intent").exists()

    leader.log.append(b"3" * 10)  # the first bytes of epoch 3 bring it to the follower

    wait_until(lambda: follower.log.data == leader.log.data)
    assert EpochFile(follower.data_dir).entries == ((1, 0), (2, 1000), (3, 1200))


def test_should_refuse_the_frames_of_a_deposed_leader(cluster: _Cluster) -> None:
    leader = cluster.add(0, MemoryLog())
    follower = cluster.add(1, MemoryLog())
    cluster.tell(GroupState(0, 5, (0, 1), 2))
    leader.log.append(b"a" * 100)
    wait_until(lambda: follower.log.data == leader.log.data)
    fetcher = follower.agent.fetcher
    assert fetcher is not None
    stale_before = fetcher.counters.stale_frames

    deposed = cluster.aeron.add_exclusive_publication(
        replication_channel(follower.info.replication_endpoint), LEADER_STREAM_ID
    )
    frame = encode_append(4, 0, 100, 100, b"x" * 50, leader_epoch=4)
    wait_until(lambda: deposed.offer(frame) > 0)

    wait_until(lambda: fetcher.counters.stale_frames > stale_before)
    assert follower.log.data == b"a" * 100
    deposed.close()


def test_should_hold_sends_and_the_high_watermark_below_min_isr(cluster: _Cluster) -> None:
    leader = cluster.add(0, MemoryLog())
    cluster.tell(GroupState(0, 1, (0,), 2))
    wait_until(lambda: leader.agent.role is Role.LEADER)

    leader.log.append(b"z" * 10)
    time.sleep(0.2)

    assert leader.agent.write_refusal() == ResponseCode.NOT_ENOUGH_REPLICAS
    assert leader.log.committed_offset == 0
    assert leader.log.flushed_physical_offset == 10  # its own flush goes on


def test_should_end_the_term_when_the_fence_fires(cluster: _Cluster) -> None:
    leader = cluster.add(0, MemoryLog())
    cluster.tell(GroupState(0, 7, (0,), 1))
    wait_until(lambda: leader.agent.write_refusal() == 0)

    leader.lease_ok[0] = False

    wait_until(lambda: leader.fenced == [7])
    assert leader.agent.role is Role.FOLLOWER
    assert leader.agent.write_refusal() == ResponseCode.NOT_LEADER
    assert leader.log.resigns == 1 and not leader.log.leading


def test_should_ask_a_silent_follower_out_of_the_isr(cluster: _Cluster) -> None:
    leader = cluster.add(0, MemoryLog())
    silent = cluster.add(1, MemoryLog())
    members = {0: leader.info, 1: silent.info}
    leader.agent.on_group(GroupSnapshot(GroupState(0, 2, (0, 1), 1), members, lead=True))
    leader.log.append(b"q" * 64)

    wait_until(lambda: leader.isr_requests, timeout_s=5)

    assert leader.isr_requests[0] == (2, (0,))
    assert leader.log.committed_offset == 0  # the union counts 1 until etcd has the change

    threading.Event().wait(0.05)
    leader.agent.on_group(GroupSnapshot(GroupState(0, 2, (0,), 1), members, lead=True))
    wait_until(lambda: leader.log.committed_offset == 64)


@pytest.mark.parametrize("cluster", ["own-thread"], indirect=True)
def test_should_ack_from_the_fsync_thread_and_wake_the_leader_only_when_its_fsync_commits(
    cluster: _Cluster,
) -> None:
    leader = cluster.add(0, MemoryLog())
    follower = cluster.add(1, MemoryLog())
    cluster.tell(GroupState(0, 1, (0, 1), 2))
    wait_until(lambda: leader.agent.role is Role.LEADER)
    wait_until(lambda: follower.agent.fetcher is not None)  # the follower takes it on its thread
    fetcher = follower.agent.fetcher
    assert fetcher is not None

    for i in range(5):
        leader.log.append(bytes([i]) * 3000)
        end = leader.log.max_physical_offset
        wait_until(lambda: leader.log.committed_offset == end)  # noqa: B023

    assert fetcher.flush_acks >= 1  # ACKs offered by the follower's fsync thread
    replicator = leader.agent.replicator
    assert replicator is not None
    wait_until(lambda: replicator.followers_floor == end)
    assert not replicator.flush_may_commit()  # the HW is at the floor: no wake-up owed


class _SlowDiskLog(MemoryLog):
    """A log whose fsync waits for :attr:`disk` (a slow disk) before it counts what was
    appended when it began as flushed, as the store's does."""

    def __init__(self) -> None:
        super().__init__()
        self.disk = threading.Event()
        self.fsyncing = threading.Event()

    def flush(self) -> int:
        target = self.max_physical_offset
        if target > self.flushed_physical_offset:
            self.fsyncing.set()
            self.disk.wait(10)
        with self._lock:
            self._flushed = max(self._flushed, target)
            self.flushes += 1
            return self._flushed


@contextlib.contextmanager
def _leading_on_a_slow_disk(
    cluster: _Cluster, epoch: int, first: bytes
) -> Iterator[tuple[_SlowDiskLog, _Member, _Member]]:
    """``(log, leader, follower)``: member 0 leads ``epoch`` on a slow disk (its fsync on its
    fsync thread, wherever its agent runs), member 1 follows;
    ``first`` appended and the leader's fsync of it begun. The disk is let go at the end."""
    slow = _SlowDiskLog()
    leader = cluster.add(0, slow, settings=FSYNC_THREAD_SETTINGS)
    follower = cluster.add(1, MemoryLog())
    try:
        cluster.tell(GroupState(0, epoch, (0, 1), 2))
        wait_until(lambda: leader.agent.role is Role.LEADER)
        slow.append(first)
        assert slow.fsyncing.wait(10)
        yield slow, leader, follower
    finally:
        slow.disk.set()


def test_should_not_acknowledge_before_the_leaders_own_fsync_and_keep_replicating_meanwhile(
    cluster: _Cluster,
) -> None:
    with _leading_on_a_slow_disk(cluster, 1, b"a" * 500) as (slow, leader, follower):
        replicator = leader.agent.replicator
        assert replicator is not None
        wait_until(lambda: replicator.followers_floor == 500)  # the follower fsynced and acked
        slow.append(b"b" * 700)  # the next round, while the leader's fsync still runs
        wait_until(lambda: follower.log.data == slow.data)  # sent and taken meanwhile
        wait_until(lambda: replicator.followers_floor == 1200)
        time.sleep(0.05)

        assert slow.flushed_physical_offset == 0
        assert slow.committed_offset == 0  # acked on the follower only: nothing acknowledged
    wait_until(lambda: slow.committed_offset == 1200)


def test_should_acknowledge_nothing_on_an_fsync_that_completes_after_the_fence_fired(
    cluster: _Cluster,
) -> None:
    with _leading_on_a_slow_disk(cluster, 4, b"f" * 300) as (slow, leader, follower):
        wait_until(lambda: follower.log.flushed_physical_offset == 300)
        leader.lease_ok[0] = False
        wait_until(lambda: leader.fenced == [4])
    wait_until(lambda: slow.flushed_physical_offset == 300)
    time.sleep(0.05)

    assert slow.committed_offset == 0
    assert leader.agent.role is Role.FOLLOWER
