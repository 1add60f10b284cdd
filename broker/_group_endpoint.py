"""The RocketMQ 5 endpoint's view of a broker group (``EndpointLeadership`` over a
``GroupMember``): this member serves RocketMQ 5 calls while it leads; otherwise the endpoint
forwards them to the leader's RocketMQ 5 endpoint, which the leader's member key in etcd names
(``MemberInfo.rocketmq``).

Caller: the broker's wiring (``broker.broker``), handing it to ``RocketMQEndpoint``; then the
endpoint's servicer threads. Affects: nothing (reads the member's last snapshot).
"""

from __future__ import annotations

from aeromq.broker.replication import GroupMember

__all__ = ["GroupEndpointLeadership"]


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
