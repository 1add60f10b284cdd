"""``GroupMember``: a broker's membership of its group, assembled: the etcd client, the
controller (lease, watch, elections, ISR writes), the replication agent (on the embedded
driver's network thread when the broker has one, else on its own thread), and
what the rest of the broker asks of them (may I take sends, who leads, the handshake's answer).

:meth:`GroupMember.start` runs after the broker has bound its ports (its member key names
them) and after the store started (which finished a truncation a crash interrupted, epoch file
included): it joins the group (as a follower: a state
that names this member from an earlier run is given up first), starts the agent, and waits a
bounded time until the group has a leader, so that the ready line says the role.
:meth:`GroupMember.stop` leaves: the agent stops (a leader's waiting sends fail), the lease is
revoked so the others elect at once.

Caller: the broker (``broker.broker``), the send and pull paths and routes (through
``broker.processor``), the gRPC servicer of ``GroupReplication``. Affects: etcd, the store.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aeromq.broker.etcd import EtcdClient
from aeromq.broker.replication.agent import ReplicationAgent, Role
from aeromq.broker.replication.controller import GroupController, GroupSnapshot
from aeromq.broker.replication.election import ElectionConfig
from aeromq.broker.replication.fencing import SelfFence
from aeromq.broker.replication.membership import MemberInfo
from aeromq.broker.replication.replicated_log import ReplicatedLog
from aeromq.broker.replication.replicator import ReplicationSettings
from aeromq.common import ResponseCode
from aeromq.proto import common_pb2, replication_pb2
from aeromq.transport.client import Aeron
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.doorbell_idle_strategy import DoorbellIdleStrategy
from aeromq.transport.concurrent.dynamic_composite_agent import HostedAgent
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy, IdleStrategy

__all__ = ["GroupMember", "GroupSettings", "etcd_target"]

_log = logging.getLogger(__name__)

_RUNG_PARK_NS: Final = 50_000_000
"""The agent's park when every source of its work rings it: a ring ends it at once; its length
bounds only how late the clock's duties run (the ISR review every 100 ms, HEARTBEATs every
250 ms, the FETCH retry after 200 ms, the fence's check: a lease is never shorter than 1 s,
fenced a quarter of it before its end, and sends are refused from then on by the send path's
own check of the fence)."""


def _idle_strategy(agent: ReplicationAgent) -> IdleStrategy:
    """How the agent waits: on its doorbell, parks of :data:`_RUNG_PARK_NS` that a ring ends,
    when every source of its work rings it (its driver runs in this process), parks of up to
    1 ms while a follower's back pressure holds bytes back; else Agrona's backoff up to 1 ms
    parks."""
    if not agent.all_rung:
        return BackoffIdleStrategy(10, 10, 1_000, 1_000_000)
    idle = DoorbellIdleStrategy(
        agent.doorbell,
        max_park_period_ns=1_000_000,
        deep_park_period_ns=_RUNG_PARK_NS,
        deep_idle_after_ns=_RUNG_PARK_NS,
    )
    idle.all_rung = agent.rung_only
    return idle


@dataclass(frozen=True, slots=True)
class GroupSettings:
    """A member's group settings (``BrokerConfig``'s group options, resolved)."""

    etcd_endpoints: Sequence[str]
    group: str
    member_id: int
    group_size: int = 3
    min_isr: int = 2
    replication_endpoint: str = "127.0.0.1:0"
    lease_ttl_ms: int = 2000
    replica_lag_max_ms: int = 1000
    unclean_election: bool = False
    leader_fsync_inline: bool = True
    """``ReplicationSettings.leader_fsync_inline`` of the member's replication."""
    election_wait_ms: int = 300
    election_timeout_ms: int = 1000
    ready_timeout_ms: int = 10_000
    rocketmq_endpoint: str = ""
    """The member's RocketMQ 5 endpoint (``host:port``, in its member key), "" for none."""


def etcd_target(endpoints: Sequence[str]) -> str:
    """The gRPC target of etcd's ``host:port`` endpoints: the one, or gRPC's ``ipv4:`` list
    when there are several IPv4 addresses (the channel picks the first that answers); of
    several host names only the first is used."""
    if len(endpoints) == 1:
        return endpoints[0]
    try:
        for endpoint in endpoints:
            ipaddress.IPv4Address(endpoint.rpartition(":")[0])
    except ValueError:
        _log.warning("etcd endpoints of names: only the first is used: %s", endpoints[0])
        return endpoints[0]
    return "ipv4:" + ",".join(endpoints)


class GroupMember:
    """This broker as member ``settings.member_id`` of ``settings.group`` (see module)."""

    def __init__(
        self,
        settings: GroupSettings,
        aeron: Aeron,
        log: ReplicatedLog,
        data_dir: Path,
        *,
        replication: ReplicationSettings | None = None,
    ) -> None:
        self.settings = settings
        self._aeron = aeron
        self._log = log
        self._data_dir = data_dir
        self._replication = replication or ReplicationSettings(
            replica_lag_max_ms=settings.replica_lag_max_ms,
            leader_fsync_inline=settings.leader_fsync_inline,
        )
        self._client: EtcdClient | None = None
        self.controller: GroupController | None = None
        self.agent: ReplicationAgent | None = None
        self._runner: AgentRunner | HostedAgent | None = None
        """What runs the agent: a thread of its own, or the driver's network thread."""

    @property
    def replication(self) -> ReplicationSettings:
        """The timing and threading of this member's replication."""
        return self._replication

    @property
    def group(self) -> str:
        """The group's name (the broker name)."""
        return self.settings.group

    @property
    def member_id(self) -> int:
        """This member's id in the group."""
        return self.settings.member_id

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, endpoints: common_pb2.BrokerEndpoints) -> None:
        """Join the group as the member ``endpoints`` reach (see module)."""
        settings = self.settings
        client = self._client = EtcdClient(etcd_target(settings.etcd_endpoints))
        info = MemberInfo.of(
            settings.member_id, endpoints, settings.replication_endpoint, settings.rocketmq_endpoint
        )
        agent = self.agent = ReplicationAgent(
            self._aeron,
            self._log,
            self._data_dir,
            group=settings.group,
            member_id=settings.member_id,
            endpoint=settings.replication_endpoint,
            fence=SelfFence(self._lease_valid),
            settings=self._replication,
            request_isr=self._request_isr,
            fenced=self._fenced,
        )
        controller = self.controller = GroupController(
            client,
            settings.group,
            info,
            group_size=settings.group_size,
            min_isr=settings.min_isr,
            lease_ttl_ms=settings.lease_ttl_ms,
            position=self._position,
            listener=agent,
            election=ElectionConfig(
                settings.member_id,
                settings.election_wait_ms,
                settings.election_timeout_ms,
                settings.unclean_election,
            ),
        )
        driver = agent.driver_thread
        hosted = (
            None
            if driver is None
            else driver.host_agent(agent, self._on_agent_error, agent.rung_only)
        )
        if hosted is None:
            runner = AgentRunner(_idle_strategy(agent), self._on_agent_error, None, agent)
            runner.start()
            self._runner = runner
        else:
            self._runner = hosted
        controller.start()
        deadline_s = time.monotonic() + settings.ready_timeout_ms / 1000
        controller.wait_for(
            lambda snapshot: snapshot.leader is not None, settings.ready_timeout_ms / 1000
        )
        state = controller.snapshot.state
        while state is not None and agent.epoch != state.epoch and time.monotonic() < deadline_s:
            time.sleep(0.005)  # the agent takes its role from the snapshot on its own thread

    def stop(self) -> None:
        """Leave the group (see module); idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            runner.close()
        controller, self.controller = self.controller, None
        if controller is not None:
            controller.stop()
        client, self._client = self._client, None
        if client is not None:
            client.close()

    # -- what the broker asks --------------------------------------------------------------------

    @property
    def role(self) -> Role:
        """Leader or follower, now."""
        agent = self.agent
        return Role.FOLLOWER if agent is None else agent.role

    @property
    def epoch(self) -> int:
        """The epoch this member leads or follows (0: none yet)."""
        agent = self.agent
        return 0 if agent is None else agent.epoch

    @property
    def snapshot(self) -> GroupSnapshot:
        """The group as etcd holds it, last seen."""
        controller = self.controller
        return GroupSnapshot() if controller is None else controller.snapshot

    def write_refusal(self) -> int:
        """0 when this member takes sends (and other writes) now, else the response code to
        refuse them with (``NOT_LEADER``, ``NOT_ENOUGH_REPLICAS``). From any thread, cheap."""
        agent = self.agent
        return ResponseCode.NOT_LEADER if agent is None else agent.write_refusal()

    def read_refusal(self) -> int:
        """0 when this member serves pulls now (it leads), else ``NOT_LEADER``."""
        agent = self.agent
        if agent is None or agent.role is not Role.LEADER:
            return ResponseCode.NOT_LEADER
        return 0

    def leader_endpoints(self) -> common_pb2.BrokerEndpoints | None:
        """How to reach the group's leader, when etcd names a live one (this member itself
        only while it leads: a member that refuses as a fenced leader names no one)."""
        leader = self.snapshot.leader
        if leader is None or (leader.id == self.member_id and self.role is not Role.LEADER):
            return None
        return leader.endpoints()

    def answer_epoch_end(
        self, request: replication_pb2.ReplicaEpochEndRequest
    ) -> replication_pb2.ReplicaEpochEndResponse:
        """The ``ReplicaEpochEnd`` RPC (see ``handshake``)."""
        response = replication_pb2.ReplicaEpochEndResponse()
        if request.group != self.group:
            response.status.code = ResponseCode.INVALID_PARAMETER
            response.status.message = (
                f"not a member of that group: group={request.group!r} member_group={self.group!r}"
            )
            return response
        agent = self.agent
        answer = None if agent is None else agent.epoch_end(request.leader_epoch, request.epoch)
        if answer is None:
            response.status.code = ResponseCode.NOT_LEADER
            response.status.message = (
                f"not the leader of that epoch: group={self.group!r} member={self.member_id} "
                f"leader_epoch={request.leader_epoch} epoch={self.epoch} role={self.role.value}"
            )
            leader = self.leader_endpoints()
            if leader is not None:
                response.status.leader.CopyFrom(leader)
            return response
        response.epoch, response.end_offset = answer
        return response

    def stats(self) -> dict[str, int]:
        """Counters of replication, a fixed set of names (published as the broker's gauges;
        0 before the member has started)."""
        agent = self.agent
        replicator = None if agent is None else agent.replicator
        fetched = None if agent is None else agent.fetched
        return {
            "replication.epoch": 0 if agent is None else agent.epoch,
            "replication.leader": int(agent is not None and agent.role is Role.LEADER),
            "replication.terms_led": 0 if agent is None else agent.terms_led,
            "replication.malformed_frames": 0 if agent is None else agent.malformed_frames,
            "replication.stale_frames": 0 if fetched is None else fetched.stale_frames,
            "replication.high_watermark": self._log.committed_offset,
            "replication.isr": 0 if replicator is None else len(replicator.isr.committed),
            "replication.frames_sent": 0 if replicator is None else replicator.frames_sent,
            "replication.appended_bytes": 0 if fetched is None else fetched.appended_bytes,
            "replication.truncated_bytes": 0 if fetched is None else fetched.truncated_bytes,
        }

    # -- between the agent and the controller -------------------------------------------------

    def _position(self) -> tuple[int, int]:
        agent = self.agent
        last = None if agent is None else agent.epochs.last
        return (0 if last is None else last.epoch, self._log.max_physical_offset)

    def _lease_valid(self, now_s: float | None) -> bool:
        controller = self.controller
        return controller is not None and controller.membership.lease_valid(now_s)

    def _request_isr(self, epoch: int, isr: Sequence[int]) -> None:
        controller = self.controller
        if controller is not None:
            controller.request_isr(epoch, isr)

    def _fenced(self, epoch: int) -> None:
        controller = self.controller
        if controller is not None:
            controller.fenced(epoch)

    def _on_agent_error(self, error: Exception) -> None:
        _log.error("replication agent error: %s", error, exc_info=error)
