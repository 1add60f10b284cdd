"""A broker group's control record in etcd: the keys of the group, the ``state`` JSON, and its
compare-and-swap on ``mod_revision`` (never a lock).

Keys under ``/aeromq/groups/<group>/`` (:class:`GroupKeys`)::

    state             {"leader": id | null, "epoch": int, "isr": [ids], "min_isr": int}
    members/<id>      the member's endpoints (``membership.MemberInfo``), on its lease
    positions/<id>    {"epoch", "leo", "election"}: what a candidate brings to an election

``state`` is created once (compare ``create_revision == 0``) as ``{leader: null, epoch: 0,
isr: [0..N-1], min_isr}`` and changed only by a transaction whose compare is ``mod_revision ==
R``, R the revision the writer read: of two writers that read the same state, one wins and the
other is handed the state that won (etcd's key-value operations are strict serializable; its
locks are not safe, Jepsen found). Elections, ISR changes and resignations all go through
:meth:`GroupStateStore.compare_and_swap`.

Caller: the group controller (``broker.replication.controller``) and the election driver.
Affects: the ``state`` key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final, NamedTuple

from aeromq.broker.etcd import EtcdClient, KeyValue
from aeromq.broker.replication._errors import ReplicationError

__all__ = [
    "KEY_ROOT",
    "CasResult",
    "GroupKeys",
    "GroupState",
    "GroupStateStore",
    "VersionedState",
]

KEY_ROOT: Final = "/aeromq/groups/"
"""Every group's keys start here."""


class GroupKeys:
    """The etcd keys of group ``group`` (its broker name)."""

    def __init__(self, group: str) -> None:
        self.group = group
        self.prefix = f"{KEY_ROOT}{group}/"
        self.state = self.prefix + "state"
        self.members_prefix = self.prefix + "members/"
        self.positions_prefix = self.prefix + "positions/"

    def member(self, member_id: int) -> str:
        """``members/<id>``."""
        return f"{self.members_prefix}{member_id}"

    def position(self, member_id: int) -> str:
        """``positions/<id>``."""
        return f"{self.positions_prefix}{member_id}"

    def member_id_of(self, key: str, prefix: str) -> int | None:
        """The id at the end of ``key`` under ``prefix`` (None when it is not a member id)."""
        if not key.startswith(prefix):
            return None
        tail = key[len(prefix) :]
        return int(tail) if tail.isdigit() else None


@dataclass(frozen=True, slots=True)
class GroupState:
    """Who leads the group (``leader``, None while it has no leader) in which ``epoch``, the
    committed in-sync replicas ``isr`` and the fewest of them sends need (``min_isr``)."""

    leader: int | None
    epoch: int
    isr: tuple[int, ...]
    min_isr: int

    @classmethod
    def initial(cls, group_size: int, min_isr: int) -> GroupState:
        """The state a group starts with: no leader, epoch 0, every member in sync."""
        return cls(None, 0, tuple(range(group_size)), min_isr)

    def to_json(self) -> bytes:
        """The ``state`` key's value."""
        value = {"leader": self.leader, "epoch": self.epoch, "isr": list(self.isr)}
        value["min_isr"] = self.min_isr
        return json.dumps(value, separators=(",", ":")).encode()

    @classmethod
    def from_json(cls, data: bytes) -> GroupState:
        """The state in a ``state`` value; raises :class:`ReplicationError` when it is not one."""
        try:
            value = json.loads(data)
            leader = value["leader"]
            state = cls(
                None if leader is None else int(leader),
                int(value["epoch"]),
                tuple(int(member) for member in value["isr"]),
                int(value["min_isr"]),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise ReplicationError(
                "not a group state", value=data[:200].decode("utf-8", "replace")
            ) from exc
        return state

    def with_leader(self, leader: int | None, epoch: int, isr: tuple[int, ...]) -> GroupState:
        """This state led by ``leader`` in ``epoch`` with ``isr``."""
        return GroupState(leader, epoch, isr, self.min_isr)

    def with_isr(self, isr: tuple[int, ...]) -> GroupState:
        """This state with ``isr``."""
        return GroupState(self.leader, self.epoch, isr, self.min_isr)

    def describe(self) -> str:
        """``leader=1 epoch=4 isr=1,0,2 min_isr=2`` (for the log)."""
        leader = "none" if self.leader is None else str(self.leader)
        isr = ",".join(str(member) for member in self.isr) or "none"
        return f"leader={leader} epoch={self.epoch} isr={isr} min_isr={self.min_isr}"


class VersionedState(NamedTuple):
    """A state and the ``mod_revision`` it was read at (the revision a CAS compares)."""

    state: GroupState
    mod_revision: int


class CasResult(NamedTuple):
    """A compare-and-swap's outcome and the state now in etcd (the one written when it
    ``succeeded``, else the one that won; None when the key has gone)."""

    succeeded: bool
    current: VersionedState | None


def versioned(kv: KeyValue) -> VersionedState:
    """The state held by the ``state`` key ``kv``."""
    return VersionedState(GroupState.from_json(kv.value), kv.mod_revision)


class GroupStateStore:
    """Reads and compare-and-swaps one group's ``state`` key through ``client``."""

    def __init__(self, client: EtcdClient, keys: GroupKeys) -> None:
        self._client = client
        self._keys = keys

    def read(self) -> VersionedState | None:
        """The state and its revision (None when the group has none yet)."""
        kv = self._client.get(self._keys.state)
        return None if kv is None else versioned(kv)

    def create_once(self, initial: GroupState) -> VersionedState:
        """Create the state as ``initial`` unless it exists; returns the state in etcd."""
        result = self.compare_and_swap(None, initial)
        if result.current is None:  # deleted between the two steps: not by aeromq
            raise ReplicationError("group state vanished", key=self._keys.state)
        return result.current

    def compare_and_swap(self, expected: VersionedState | None, new: GroupState) -> CasResult:
        """Write ``new`` if the state is still ``expected`` (None: if there is none yet)."""
        revision = 0 if expected is None else expected.mod_revision
        result = self._client.compare_and_swap(
            self._keys.state, new.to_json(), mod_revision=revision
        )
        if result.succeeded:
            return CasResult(True, VersionedState(new, result.revision))
        current = next((kv for kv in result.kvs if kv.key == self._keys.state), None)
        return CasResult(False, None if current is None else versioned(current))
