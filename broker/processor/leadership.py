"""What the processors ask of a broker group's member: may it take writes or serve reads now,
and who leads. A single broker has none (``None`` everywhere: nothing is asked, nothing
refused); a member of a group (``broker.replication.GroupMember``) answers each question from
its role, its lease and its committed ISR.

A refusal is a response ``Status``: ``NOT_LEADER`` names the group's leader in
``Status.leader`` when the member knows it (clients send there after refreshing their route),
``NOT_ENOUGH_REPLICAS`` says the leader's committed ISR is below ``min_isr``; both retriable.

Metadata (topic configs, committed offsets) goes through the group's log in group mode; a
change the log did not commit raises with the put's code (:func:`require_committed`).

Caller: ``SendProcessor``, ``PullProcessor``, ``RouteProcessor``, ``ControlPlane``, the topic
and offset processors, once per request in group mode. Affects: nothing.
"""

from __future__ import annotations

from typing import Final, Protocol

from aeromq.broker._errors import BrokerError
from aeromq.broker.store import PutMessageResult, PutMessageStatus
from aeromq.common import ResponseCode
from aeromq.proto import common_pb2

__all__ = ["Leadership", "refusal", "require_committed"]

_CODES: Final = {
    PutMessageStatus.NOT_LEADER: ResponseCode.NOT_LEADER,
    PutMessageStatus.REPLICATION_TIMEOUT: ResponseCode.REPLICATION_TIMEOUT,
    PutMessageStatus.DISK_FULL: ResponseCode.DISK_FULL,
}


class Leadership(Protocol):
    """A group member's answers (see module); every method from any thread, cheap."""

    @property
    def group(self) -> str:
        """The group's name (the broker name)."""

    @property
    def member_id(self) -> int:
        """This member's id in its group."""

    def write_refusal(self) -> int:
        """0 when this member takes writes now, else the code to refuse them with."""

    def read_refusal(self) -> int:
        """0 when this member serves reads now, else the code to refuse them with."""

    def leader_endpoints(self) -> common_pb2.BrokerEndpoints | None:
        """How to reach the group's leader, when a live one is known."""


class _NotCommittedError(BrokerError):
    """A metadata change the group's log did not commit: its ``code`` is the put's."""

    code = ResponseCode.SYSTEM_ERROR
    retriable = True


def require_committed(result: PutMessageResult, what: str, **values: object) -> None:
    """Raise (with the put status's response code) unless a metadata change through the
    group's log (``MessageStore.update_topic_config``, ``commit_offset``, ...) was committed."""
    status = result.status
    if status is PutMessageStatus.PUT_OK:
        return
    error = _NotCommittedError(f"{what} not committed", status=status.value, **values)
    error.code = _CODES.get(status, ResponseCode.SYSTEM_ERROR)
    raise error


def refusal(leadership: Leadership, code: int, what: str, status: common_pb2.Status) -> None:
    """Fill ``status`` with the refusal ``code`` of ``what`` (``"send"``, ``"pull"``, ...)."""
    status.code = code
    leader = leadership.leader_endpoints()
    where = f"group={leadership.group!r} member={leadership.member_id}"
    if code == ResponseCode.NOT_ENOUGH_REPLICAS:
        status.message = f"{what} refused: fewer in-sync replicas than min_isr: {where}"
        return
    if leader is None:
        status.message = f"{what} refused: not the leader, and no leader is known: {where}"
        return
    status.message = (
        f"{what} refused: not the leader: {where} leader_grpc={leader.grpc_address or 'none'}"
    )
    status.leader.CopyFrom(leader)
