"""The group's state in a real etcd: created once, changed only by a compare-and-swap on the
revision read (the loser is handed the winner's state), and its JSON."""

from __future__ import annotations

import pytest

from aeromq.broker.etcd import EtcdClient
from aeromq.broker.replication import ReplicationError
from aeromq.broker.replication.group_state import GroupKeys, GroupState, GroupStateStore


def test_should_create_the_state_once(etcd: EtcdClient) -> None:
    store = GroupStateStore(etcd, GroupKeys("broker-a"))
    first = store.create_once(GroupState.initial(3, 2))
    second = store.create_once(GroupState.initial(5, 1))

    assert first == second
    assert first.state == GroupState(None, 0, (0, 1, 2), 2)
    assert store.read() == first


def test_should_let_one_of_two_writers_of_the_same_revision_win(etcd: EtcdClient) -> None:
    store = GroupStateStore(etcd, GroupKeys("broker-a"))
    read = store.create_once(GroupState.initial(3, 2))

    won = store.compare_and_swap(read, read.state.with_leader(1, 1, (1, 0, 2)))
    lost = store.compare_and_swap(read, read.state.with_leader(2, 1, (2, 0, 1)))

    assert won.succeeded and not lost.succeeded
    assert lost.current == won.current
    assert won.current is not None and won.current.state.leader == 1
    assert won.current.mod_revision > read.mod_revision


def test_should_keep_the_keys_of_a_group_under_its_prefix() -> None:
    keys = GroupKeys("broker-a")

    assert keys.state == "/aeromq/groups/broker-a/state"
    assert keys.member(2) == "/aeromq/groups/broker-a/members/2"
    assert keys.position(0) == "/aeromq/groups/broker-a/positions/0"
    assert keys.member_id_of(keys.member(12), keys.members_prefix) == 12
    assert keys.member_id_of(keys.state, keys.members_prefix) is None


def test_should_round_trip_the_state_and_refuse_what_is_not_one() -> None:
    state = GroupState(2, 7, (2, 0), 2)

    assert state.to_json() == b'{"leader":2,"epoch":7,"isr":[2,0],"min_isr":2}'
    assert GroupState.from_json(state.to_json()) == state
    assert state.describe() == "leader=2 epoch=7 isr=2,0 min_isr=2"
    with pytest.raises(ReplicationError, match="not a group state"):
        GroupState.from_json(b'{"leader": 1}')
