"""What other parts of the broker see of its group (a ``GroupMember``):

- :class:`GroupEndpointLeadership`, the RocketMQ 5 endpoint's ``EndpointLeadership``: this
  member serves RocketMQ 5 calls while it leads; otherwise the endpoint forwards them to the
  leader's RocketMQ 5 endpoint, which the leader's member key in etcd names
  (``MemberInfo.rocketmq``);
- :func:`replication_status`, the ``ReplicationStatus`` of ``GetBrokerStats`` (``aeromq admin
  replication``): the leader, epoch and ISR etcd holds, and on the leader each follower's log
  end, fsynced offset and lag.

Caller: the broker's wiring (``broker.broker``), handing them to ``RocketMQEndpoint`` and the
gRPC server; then their threads. Affects: nothing (they read the member's last snapshot and
the leader's follower progress, which may be a duty cycle old).
"""

from __future__ import annotations

import time

from aeromq.broker.replication import GroupMember, Role
from aeromq.broker.replication.isr import FollowerProgress
from aeromq.broker.store import MessageStore
from aeromq.proto import admin_pb2

__all__ = ["GroupEndpointLeadership", "replication_status"]


class GroupEndpointLeadership:
    """``EndpointLeadership`` of group member ``member`` (see module)."""

    def __init__(self, member: GroupMember) -> None:
        self._member = member

    def serves(self) -> bool:
        """Whether this member leads its group now (it serves pulls, so RocketMQ 5 calls)."""
        return self._member.read_refusal() == 0

    def leader_endpoint(self) -> tuple[str, int] | None:
        """The leader's RocketMQ 5 ``(host, port)``; None while no live leader with an endpoint
        is known, or while etcd names this member but it does not act as leader (fenced)."""
        member = self._member
        leader = member.snapshot.leader
        if leader is None or not leader.rocketmq:
            return None
        if leader.id == member.member_id and not self.serves():
            return None
        host, _, port = leader.rocketmq.rpartition(":")
        return host.strip("[]"), int(port)


def replication_status(member: GroupMember, store: MessageStore) -> admin_pb2.ReplicationStatus:
    """The group as ``member`` sees it now (see module)."""
    snapshot = member.snapshot
    state = snapshot.state
    leading = member.role is Role.LEADER
    leo = store.max_physical_offset
    status = admin_pb2.ReplicationStatus(
        group=member.group,
        member_id=member.member_id,
        role=member.role.value,
        epoch=member.epoch,
        leader_id=-1,
        high_watermark=store.committed_offset,
        log_end_offset=leo,
    )
    if state is not None:
        status.isr.extend(sorted(state.isr))
        status.min_isr = state.min_isr
    leader = snapshot.leader
    if leader is not None:
        status.leader_id = leader.id
        status.leader_grpc_address = leader.grpc
    agent = member.agent
    replicator = None if agent is None or not leading else agent.replicator
    progress: dict[int, FollowerProgress] = {}
    if replicator is not None:
        for _ in range(3):  # the agent's thread may change the followers meanwhile
            try:
                progress = replicator.followers
                break
            except RuntimeError:
                continue
    now_ns = time.monotonic_ns()
    for member_id in range(member.settings.group_size):
        info = snapshot.members.get(member_id)
        replica = status.members.add(
            member_id=member_id,
            grpc_address="" if info is None else info.grpc,
            live=info is not None,
            in_isr=state is not None and member_id in state.isr,
            leader=leader is not None and leader.id == member_id,
            log_end_offset=-1,
            fsynced_offset=-1,
            lag_bytes=-1,
            last_heard_ms=-1,
        )
        if leading and member_id == member.member_id:
            replica.log_end_offset = leo
            replica.fsynced_offset = store.flushed_physical_offset
            replica.lag_bytes = 0
            replica.last_heard_ms = 0
            continue
        known = progress.get(member_id)
        if known is not None and known.acked:
            replica.log_end_offset = known.leo
            replica.fsynced_offset = known.fsynced
            replica.lag_bytes = max(0, leo - known.leo)
            replica.last_heard_ms = (now_ns - known.last_heard_ns) // 1_000_000
    return status
