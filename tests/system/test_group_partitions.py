"""The fault suite of broker groups (issue 31), partitions: etcd and the three brokers each in a
network namespace of its own, joined by veth pairs (``tests/faults/netns.py``), a partition
made by taking links down. The senders and the checks are those of ``test_group_faults.py``;
each scenario runs once by default and 20 times with ``-m faults``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.common import ResponseCode
from tests.faults.netns import LabEtcd, netlab, netns_unavailable
from tests.system._group import BrokerGroup, node_of
from tests.system._group_faults import FaultRun, direct_send, parametrize_runs, wait_acked

pytestmark = [
    pytest.mark.faults,
    pytest.mark.slow,
    pytest.mark.skipif(netns_unavailable() is not None, reason=str(netns_unavailable())),
]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_runs(metafunc)


@pytest.fixture
def group(shm_dir: Path) -> Iterator[BrokerGroup]:
    with netlab(["etcd", "b0", "b1", "b2"]) as lab:
        etcd = LabEtcd(lab, "etcd", shm_dir / "etcd")
        etcd.start()
        members = BrokerGroup(shm_dir, etcd, lab=lab)
        try:
            yield members
        finally:
            members.close()
            etcd.kill()


def test_should_fence_a_leader_cut_off_from_etcd_only(group: BrokerGroup, run: int) -> None:
    lab = group.lab
    assert lab is not None
    test = FaultRun(group)
    leader = group.wait_for_leader()
    lab.cut(node_of(leader), "etcd")
    test.fault(f"cut leader {leader} from etcd")
    test.failover(leader)
    # cut off, it still reaches its followers, yet it acknowledges nothing
    assert direct_send(group, leader, test.history, "cut") == ResponseCode.NOT_LEADER
    lab.heal_all()
    group.wait_for(lambda s: leader in s.isr, "the old leader back in the ISR", 30)
    wait_acked(test.senders, 10)
    test.finish("leader cut off from etcd", run)


def test_should_elect_the_majority_side_when_the_leader_and_a_follower_are_cut_off(
    group: BrokerGroup, run: int
) -> None:
    lab = group.lab
    assert lab is not None
    test = FaultRun(group)
    leader = group.wait_for_leader()
    follower, third = (m for m in group.members if m != leader)
    lab.partition([node_of(leader), node_of(follower)])
    test.fault(f"cut leader {leader} and follower {follower} from etcd and {third}")
    group.wait_for(lambda s: s.leader == third, "the third member leading", 30)
    # alone in its ISR it refuses sends (min_isr 2); the cut-off leader fenced itself
    assert direct_send(group, leader, test.history, "cut") == ResponseCode.NOT_LEADER
    lab.heal_all()
    test.fault("heal")
    group.wait_for(lambda s: len(s.isr) >= 2, "the ISR grown again", 30)
    wait_acked(test.senders, 20)
    test.finish("leader and a follower cut off", run, fault=1)
