"""Group controllers of one group against a real etcd: one leader elected and known to all, a
new one when it leaves, a restarted member that comes back as a follower, ISR changes written
only by the leader of the epoch, fencing and a lost lease giving leadership up."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from aeromq.broker.etcd import EtcdClient, EtcdServer
from aeromq.broker.replication.controller import GroupController, GroupSnapshot
from aeromq.broker.replication.election import ElectionConfig
from aeromq.broker.replication.group_state import GroupKeys, GroupState, GroupStateStore
from aeromq.broker.replication.membership import MemberInfo
from tests.broker.replication._waits import wait_until

GROUP = "broker-a"


class _Recorder:
    """A listener that keeps every snapshot it is given."""

    def __init__(self) -> None:
        self.snapshots: list[GroupSnapshot] = []
        self._lock = threading.Lock()

    def on_group(self, snapshot: GroupSnapshot) -> None:
        with self._lock:
            self.snapshots.append(snapshot)

    def led_epochs(self) -> set[int]:
        with self._lock:
            return {s.state.epoch for s in self.snapshots if s.lead and s.state is not None}


def _info(member_id: int) -> MemberInfo:
    return MemberInfo(member_id, 1, f"127.0.0.1:{9000 + member_id}", "aeron:ipc", 1001, "", 0,
                      f"127.0.0.1:{9100 + member_id}", "/dev/shm/x", "host")  # fmt: skip


class _Group:
    """Controllers of one group, each with its own client, stopped at the end."""

    def __init__(self, server: EtcdServer) -> None:
        self.server = server
        self.controllers: dict[int, GroupController] = {}
        self.recorders: dict[int, _Recorder] = {}
        self._clients: list[EtcdClient] = []

    def start(self, member_id: int, min_isr: int = 1, size: int = 3) -> GroupController:
        client = EtcdClient(self.server.endpoint)
        self._clients.append(client)
        recorder = self.recorders[member_id] = _Recorder()
        controller = GroupController(
            client,
            GROUP,
            _info(member_id),
            group_size=size,
            min_isr=min_isr,
            lease_ttl_ms=1000,
            position=lambda: (0, 0),
            listener=recorder,
            election=ElectionConfig(member_id, election_wait_ms=100, election_timeout_ms=500),
        )
        controller.start()
        self.controllers[member_id] = controller
        return controller

    def close(self) -> None:
        for controller in self.controllers.values():
            controller.stop()
        for client in self._clients:
            client.close()


@pytest.fixture
def group(etcd_server: EtcdServer) -> Iterator[_Group]:
    members = _Group(etcd_server)
    try:
        yield members
    finally:
        members.close()


def _leaders(group: _Group) -> list[int]:
    return [m for m, c in group.controllers.items() if c.snapshot.lead]


def test_should_elect_one_leader_that_every_member_knows(group: _Group) -> None:
    for member_id in range(3):
        group.start(member_id)

    wait_until(lambda: len(_leaders(group)) == 1)
    leader = _leaders(group)[0]
    wait_until(lambda: all(c.snapshot.leader is not None for c in group.controllers.values()))

    for controller in group.controllers.values():
        state = controller.snapshot.state
        assert state is not None and state.leader == leader and state.epoch == 1
    assert group.recorders[leader].led_epochs() == {1}


def _expand_isr(group: _Group) -> int:
    """Let the leader take every member into its ISR (what its agent does once they caught
    up); returns the leader."""
    wait_until(lambda: len(_leaders(group)) == 1)
    leader = _leaders(group)[0]
    controller = group.controllers[leader]
    state = controller.snapshot.state
    assert state is not None
    everyone = (leader, *sorted(set(group.controllers) - {leader}))
    controller.request_isr(state.epoch, everyone)
    wait_until(lambda: all(
        c.snapshot.state is not None and c.snapshot.state.isr == everyone
        for c in group.controllers.values()
    ))  # fmt: skip
    return leader


def test_should_elect_another_leader_when_the_leader_leaves(group: _Group) -> None:
    for member_id in range(3):
        group.start(member_id)
    first = _expand_isr(group)

    group.controllers.pop(first).stop()

    wait_until(lambda: len(_leaders(group)) == 1)
    second = _leaders(group)[0]
    state = group.controllers[second].snapshot.state
    assert second != first
    assert state is not None and state.epoch == 2 and first not in state.isr


def test_should_come_back_as_a_follower_after_a_restart(group: _Group, etcd: EtcdClient) -> None:
    store = GroupStateStore(etcd, GroupKeys(GROUP))
    created = store.create_once(GroupState.initial(3, 1))
    store.compare_and_swap(created, GroupState(0, 3, (0,), 1))  # led by 0 in an earlier run

    controller = group.start(0)

    wait_until(lambda: controller.snapshot.lead)
    state = controller.snapshot.state
    assert state is not None and state.epoch == 4  # given up, then elected anew
    assert group.recorders[0].led_epochs() == {4}


def test_should_write_an_isr_change_only_for_the_epoch_it_leads(group: _Group) -> None:
    controller = group.start(0)
    wait_until(lambda: controller.snapshot.lead)
    state = controller.snapshot.state
    assert state is not None and state.isr == (0,)

    controller.request_isr(state.epoch + 1, (0, 1))  # not an epoch it leads: dropped
    controller.request_isr(state.epoch, (0, 2))

    wait_until(
        lambda: controller.snapshot.state is not None and controller.snapshot.state.isr != (0,)
    )
    assert controller.snapshot.state is not None and controller.snapshot.state.isr == (0, 2)


def test_should_give_leadership_up_when_fenced_and_stand_again(group: _Group) -> None:
    controller = group.start(0)
    wait_until(lambda: controller.snapshot.lead)

    controller.fenced(1)

    wait_until(lambda: controller.snapshot.lead and controller.snapshot.state is not None
          and controller.snapshot.state.epoch == 2)  # fmt: skip
    assert group.recorders[0].led_epochs() == {1, 2}


def test_should_join_again_with_a_new_lease_when_its_lease_ends(
    group: _Group, etcd: EtcdClient
) -> None:
    controller = group.start(0)
    wait_until(lambda: controller.snapshot.lead)
    lost = controller.membership.lease_id

    etcd.revoke(lost)

    wait_until(lambda: controller.membership.lease_id not in (0, lost) and controller.snapshot.lead)
    state = controller.snapshot.state
    assert state is not None and state.epoch == 2
    assert etcd.get(GroupKeys(GROUP).member(0)) is not None
