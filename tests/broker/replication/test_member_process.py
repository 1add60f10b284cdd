"""A member key whose process is provably gone: the process identity a member key carries
(``broker/replication/member_process.py``), and a group controller against a real etcd that
revokes the lease of a dead leader's key instead of waiting out its TTL, and of its own key
from an earlier process when it joins."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from aeromq.broker.etcd import EtcdClient, EtcdServer
from aeromq.broker.replication.controller import GroupController, GroupSnapshot
from aeromq.broker.replication.election import ElectionConfig
from aeromq.broker.replication.group_state import GroupKeys, GroupState, GroupStateStore
from aeromq.broker.replication.member_process import is_gone, this_process
from aeromq.broker.replication.membership import MemberInfo
from tests.broker.replication._waits import wait_until

GROUP = "broker-a"
LONG_TTL_S = 60
"""A dead member's lease: what the controller would otherwise wait for."""


class _Listener:
    def on_group(self, snapshot: GroupSnapshot) -> None:
        return None


def _identity_of(pid: int) -> str:
    start_time = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    return f"{this_process().rsplit('/', 2)[0]}/{pid}/{start_time}"


def _dead_process() -> str:
    """The identity of a process that ran on this host and is gone (exited, reaped)."""
    child = subprocess.Popen(["sleep", "30"])
    identity = _identity_of(child.pid)
    assert not is_gone(identity)
    child.kill()
    child.wait(10)
    return identity


def _info(member_id: int, process: str) -> MemberInfo:
    return MemberInfo(member_id, 1, f"127.0.0.1:{9000 + member_id}", "aeron:ipc", 1001, "", 0,
                      f"127.0.0.1:{9100 + member_id}", "/dev/shm/x", "host", "", process)  # fmt: skip


def test_should_name_this_process_and_tell_a_gone_one_from_a_live_or_unknown_one() -> None:
    me = this_process()
    assert me.endswith(f"/{os.getpid()}/{me.rsplit('/', 1)[1]}")
    assert not is_gone(me)
    assert is_gone(_dead_process())
    boot, namespace, pid, start = me.split("/")
    assert is_gone(f"{boot}/{namespace}/{pid}/{int(start) + 1}")  # the pid used again
    assert not is_gone(f"another-boot/{namespace}/999999/1")  # another host: cannot tell
    assert not is_gone("")  # a key written before identities: cannot tell


def _controller(client: EtcdClient, member_id: int) -> GroupController:
    return GroupController(
        client,
        GROUP,
        MemberInfo.of(member_id, _info(member_id, "").endpoints(), f"127.0.0.1:{9100 + member_id}"),
        group_size=3,
        min_isr=1,
        lease_ttl_ms=1000,
        position=lambda: (1, 0),
        listener=_Listener(),
        election=ElectionConfig(member_id, election_wait_ms=100, election_timeout_ms=500),
    )


def test_should_revoke_a_dead_leaders_lease_and_elect_without_waiting_for_its_ttl(
    etcd_server: EtcdServer, etcd: EtcdClient
) -> None:
    keys = GroupKeys(GROUP)
    store = GroupStateStore(etcd, keys)
    store.compare_and_swap(store.create_once(GroupState.initial(3, 1)), GroupState(1, 1, (0, 1), 1))
    dead_leader = etcd.grant_lease(LONG_TTL_S)
    etcd.put(keys.member(1), _info(1, _dead_process()).to_json(), lease_id=dead_leader.id)
    own_earlier = etcd.grant_lease(LONG_TTL_S)  # member 0's key from its earlier process
    etcd.put(keys.member(0), _info(0, _dead_process()).to_json(), lease_id=own_earlier.id)

    started = time.monotonic()
    with EtcdClient(etcd_server.endpoint) as client:
        controller = _controller(client, 0)
        controller.start()
        try:
            wait_until(lambda: controller.snapshot.lead, timeout_s=LONG_TTL_S / 4)
        finally:
            controller.stop()
    assert time.monotonic() - started < LONG_TTL_S / 4
    assert etcd.time_to_live(dead_leader.id).ttl_s == -1
    assert etcd.time_to_live(own_earlier.id).ttl_s == -1


def test_should_keep_the_lease_of_a_live_member(etcd_server: EtcdServer, etcd: EtcdClient) -> None:
    keys = GroupKeys(GROUP)
    live = etcd.grant_lease(LONG_TTL_S)
    etcd.put(keys.member(1), _info(1, this_process()).to_json(), lease_id=live.id)
    with EtcdClient(etcd_server.endpoint) as client:
        controller = _controller(client, 0)
        controller.start()
        try:
            wait_until(lambda: 1 in controller.snapshot.members)
            time.sleep(0.3)  # three of the controller's ticks
        finally:
            controller.stop()
    assert etcd.time_to_live(live.id).ttl_s > 0
