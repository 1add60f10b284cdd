"""A member's presence in its group: its lease, its ``members/<id>`` key on that lease, and the
``positions/<id>`` it puts when it stands for election.

The member grants itself a lease of ``lease_ttl_ms`` (whole seconds: etcd's TTLs are) and
puts ``members/<id>`` with it: the key exists while the member lives and vanishes a TTL after
the last keep-alive etcd heard (a crash, a pause, a cut from etcd), which is how the others
see a leader die. A :class:`~aeromq.broker.etcd.LeaseKeeper` renews the lease every TTL/4 and
knows until when it is surely valid (``deadline_s``: the send time of the last answered
keep-alive plus the TTL), the leader's self-fencing clock.

A lease that etcd says has ended (the process was paused past it) is gone for good: the
member joins again with a new lease (:meth:`Membership.join`); its old keys went with the old
one. A member's key whose process is provably gone (on this host: a SIGKILL, a crash, a whole
group restarted) has its lease revoked at once (:meth:`Membership.revoke_if_gone`; its own
previous key when it joins, the others' through the controller) rather than left to its TTL.

Caller: the group controller (``broker.replication.controller``); the replication agent reads
:meth:`Membership.lease_valid` for fencing. Affects: ``members/<id>`` and ``positions/<id>``.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Final

from aeromq.broker.etcd import EtcdClient, EtcdError, KeyValue, LeaseKeeper
from aeromq.broker.replication._errors import ReplicationError
from aeromq.broker.replication.group_state import GroupKeys
from aeromq.broker.replication.member_process import is_gone, this_process
from aeromq.proto import common_pb2

__all__ = ["MemberInfo", "Membership", "Position"]

_log = logging.getLogger(__name__)

_MARGIN_DIVISOR: Final = 4
"""The fencing margin is TTL/4: a leader stops acting that long before its lease may end."""


@dataclass(frozen=True, slots=True)
class MemberInfo:
    """How to reach a member (the ``members/<id>`` value): its gRPC address, ingress channels
    and streams, replication endpoint (UDP ``host:port``), media driver directory and host, and
    its RocketMQ 5 endpoint (``host:port``; "" when it has none: a value written before this
    field existed reads as ""), and which process it is (``process``:
    :func:`~broker.replication.member_process.this_process`, "" when unknown), so that a member
    on its host can tell that it is gone."""

    id: int
    pid: int
    grpc: str
    ipc_channel: str
    ipc_stream: int
    udp_channel: str
    udp_stream: int
    replication_endpoint: str
    aeron_dir: str
    hostname: str
    rocketmq: str = ""
    process: str = ""

    def to_json(self) -> bytes:
        """The key's value."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> MemberInfo:
        """The member a key holds; raises :class:`ReplicationError` when it holds none."""
        try:
            value = json.loads(data)
            return cls(
                int(value["id"]),
                int(value["pid"]),
                str(value["grpc"]),
                str(value["ipc_channel"]),
                int(value["ipc_stream"]),
                str(value["udp_channel"]),
                int(value["udp_stream"]),
                str(value["replication_endpoint"]),
                str(value["aeron_dir"]),
                str(value["hostname"]),
                str(value.get("rocketmq", "")),
                str(value.get("process", "")),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ReplicationError(
                "not a group member", value=data[:200].decode("utf-8", "replace")
            ) from exc

    def endpoints(self) -> common_pb2.BrokerEndpoints:
        """The member as a route's ``BrokerEndpoints``."""
        return common_pb2.BrokerEndpoints(
            grpc_address=self.grpc,
            ipc_channel=self.ipc_channel,
            ipc_stream_id=self.ipc_stream,
            udp_channel=self.udp_channel,
            udp_stream_id=self.udp_stream,
            aeron_dir=self.aeron_dir,
            hostname=self.hostname,
        )

    @classmethod
    def of(
        cls,
        member_id: int,
        endpoints: common_pb2.BrokerEndpoints,
        replication_endpoint: str,
        rocketmq: str = "",
    ) -> MemberInfo:
        """This process as member ``member_id``, reached at ``endpoints`` (and its RocketMQ 5
        endpoint at ``rocketmq``, "" for none)."""
        return cls(
            member_id,
            os.getpid(),
            endpoints.grpc_address,
            endpoints.ipc_channel,
            endpoints.ipc_stream_id,
            endpoints.udp_channel,
            endpoints.udp_stream_id,
            replication_endpoint,
            endpoints.aeron_dir,
            endpoints.hostname,
            rocketmq,
            this_process(),
        )


@dataclass(frozen=True, slots=True)
class Position:
    """What a candidate brings to an election: the last ``epoch`` of its epoch file and its log
    end offset ``leo``; ``election`` is the state epoch the election is for (a position put for
    an earlier election does not count in a later one)."""

    epoch: int
    leo: int
    election: int

    def to_json(self) -> bytes:
        """The ``positions/<id>`` value."""
        return json.dumps(asdict(self), separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Position:
        """The position a key holds; raises :class:`ReplicationError` when it holds none."""
        try:
            value = json.loads(data)
            return cls(int(value["epoch"]), int(value["leo"]), int(value["election"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ReplicationError(
                "not an election position", value=data[:200].decode("utf-8", "replace")
            ) from exc


def lease_ttl_s(lease_ttl_ms: int) -> int:
    """The lease's TTL in whole seconds (etcd's unit), rounded up, at least 1."""
    return max(1, math.ceil(lease_ttl_ms / 1000))


class Membership:
    """Member ``member_id`` of the group of ``keys``, through ``client``; ``on_lost`` is called
    (on the keeper's thread) when etcd says the lease has ended."""

    def __init__(
        self,
        client: EtcdClient,
        keys: GroupKeys,
        member_id: int,
        lease_ttl_ms: int,
        on_lost: Callable[[EtcdError], None],
    ) -> None:
        self._client = client
        self._keys = keys
        self.member_id = member_id
        self.ttl_s = lease_ttl_s(lease_ttl_ms)
        self.margin_s = self.ttl_s / _MARGIN_DIVISOR
        self._on_lost = on_lost
        self._keeper: LeaseKeeper | None = None

    @property
    def lease_id(self) -> int:
        """The current lease (0 before :meth:`join`)."""
        keeper = self._keeper
        return 0 if keeper is None else keeper.lease_id

    def lease_valid(self, now_s: float | None = None) -> bool:
        """Whether the lease is surely valid for the fencing margin more (TTL/4): a leader acts
        only while this holds. From any thread; cheap (a lock, a clock read)."""
        keeper = self._keeper
        return keeper is not None and keeper.is_valid(now_s, self.margin_s)

    def deadline_s(self) -> float:
        """Monotonic time until which the lease is known valid (0 before :meth:`join`)."""
        keeper = self._keeper
        return 0.0 if keeper is None else keeper.deadline_s

    def join(self, info: MemberInfo) -> None:
        """Grant a new lease (ending the keeper of an old one), put ``members/<id>`` = ``info``
        with it and keep it alive. The lease of this member's key from an earlier process,
        provably gone (:func:`~broker.replication.member_process.is_gone`), is revoked first:
        its keys go now, not a TTL after that process died."""
        old, self._keeper = self._keeper, None
        if old is not None:
            old.stop()
        self.revoke_if_gone(self.member_id, self._client.get(self._keys.member(self.member_id)))
        lease = self._client.grant_lease(self.ttl_s)
        try:
            self._client.put(self._keys.member(self.member_id), info.to_json(), lease_id=lease.id)
        except EtcdError:
            self._revoke(lease.id)
            raise
        self._keeper = self._client.keep_lease_alive(
            lease, on_lost=lambda error: self._lost(lease.id, error)
        )
        _log.info(
            "group member joined: group=%s member=%d lease=%x ttl_s=%d",
            self._keys.group,
            self.member_id,
            lease.id,
            self.ttl_s,
        )

    def revoke_if_gone(self, member_id: int, kv: KeyValue | None) -> bool:
        """Revoke the lease of ``kv`` (member ``member_id``'s key, as read) when the process
        it names is provably gone (see :mod:`~broker.replication.member_process`); whether it
        did. Not this process's own lease."""
        if kv is None or not kv.lease_id or kv.lease_id == self.lease_id:
            return False
        try:
            info = MemberInfo.from_json(kv.value)
        except ReplicationError:
            return False
        if not is_gone(info.process):
            return False
        _log.info(
            "group member's process is gone, its lease revoked: group=%s member=%d pid=%d lease=%x",
            self._keys.group,
            member_id,
            info.pid,
            kv.lease_id,
        )
        self._revoke(kv.lease_id)
        return True

    def put_position(self, position: Position) -> None:
        """Put ``positions/<id>`` with the lease (it goes when the member does)."""
        keeper = self._keeper
        if keeper is None:
            raise ReplicationError("not a member yet", member_id=self.member_id)
        key = self._keys.position(self.member_id)
        self._client.put(key, position.to_json(), lease_id=keeper.lease_id)

    def leave(self) -> None:
        """Stop renewing and revoke the lease: the member's keys go at once (the others elect
        without waiting a TTL). Errors are logged, not raised."""
        keeper, self._keeper = self._keeper, None
        if keeper is None:
            return
        keeper.stop()
        self._revoke(keeper.lease_id)

    def _revoke(self, lease_id: int) -> None:
        try:
            self._client.revoke(lease_id, timeout_ms=1000)
        except EtcdError as exc:
            _log.info("lease not revoked (it ends with its TTL): lease=%x %s", lease_id, exc)

    def _lost(self, lease_id: int, error: EtcdError) -> None:
        if lease_id == self.lease_id:  # not an old lease's keeper ending late
            self._on_lost(error)
