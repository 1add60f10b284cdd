"""The fault suite of broker groups (issue 31), process and disk faults: a group of three real
brokers on a real etcd on loopback, two senders recording a history (one following the leader
etcd names, one idempotent producer failing over by itself), a fault, the group's recovery, a
drain of every queue, and Jepsen's queue checker over the history (``tests/faults/history.py``):
nothing acknowledged lost, no offset given to two messages, no duplicate, no reordering within
a queue. Each scenario runs once by default and 20 times with ``-m faults``
(``tests/faults/figures.py`` records its figures). The partitions are in
``test_group_partitions.py``; how each fault is made is in ``docs/replication.md`` (Fault
testing)."""

from __future__ import annotations

import pytest

from aeromq.broker import BrokerStateError
from aeromq.broker.etcd import EtcdServer
from aeromq.broker.store import FSYNC_LEDGER_ENV
from aeromq.common import ResponseCode
from tests.broker.etcd import conftest as etcd_fixtures
from tests.faults.disk import batch_offsets, corrupt_batch, drop_unfsynced_suffix
from tests.system._group import BrokerGroup
from tests.system._group_faults import (
    FaultRun,
    direct_send,
    parametrize_runs,
    tail_only_the_leader_has,
    wait_acked,
)

pytestmark = [pytest.mark.faults, pytest.mark.slow]

etcd_server = etcd_fixtures.etcd_server  # a real etcd per test, the etcd tests' own

CRASH_STEP_ENV = "AEROMQ_TEST_CRASH_AT_TRUNCATION_STEP"
CRASH_STEPS = ("intent-written", "log-truncated", "state-rebuilt", "epochs-truncated")
LOSS_ENV = "AEROMQ_TEST_UDP_LOSS"
COLD_START_S = 60.0
"""How long a whole group may take to start again (three processes on a loaded machine)."""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_runs(metafunc)


def test_should_keep_every_acknowledged_send_when_the_leader_is_killed_mid_stream(
    group: BrokerGroup, run: int
) -> None:
    test = FaultRun(group)
    leader = group.wait_for_leader()
    group.kill(leader)
    test.fault(f"kill leader {leader}")
    test.failover(leader)
    test.rejoin(leader)
    test.finish("kill leader", run)


def test_should_fence_a_zombie_leader_paused_past_its_lease_and_truncate_its_tail(
    group: BrokerGroup, run: int
) -> None:
    test = FaultRun(group)
    zombie = group.wait_for_leader()
    filler, _, followers = tail_only_the_leader_has(group, zombie)
    group.pause(zombie)
    for member_id in followers:
        group.resume(member_id)
    test.fault(f"pause leader {zombie}")
    test.failover(zombie)
    group.resume(zombie)
    # resumed past its lease it acknowledges nothing (it fenced itself)
    assert direct_send(group, zombie, test.history, "zombie") == ResponseCode.NOT_LEADER
    filler.shutdown()
    group.wait_for(lambda s: zombie in s.isr, "the zombie back in the ISR")
    wait_acked(test.senders, 10)
    log = group.log(zombie)
    assert "stopped leading" in log and "divergent log tail truncated" in log, log[-3000:]
    test.finish("pause leader past its lease", run)


def test_should_recover_when_etcd_and_the_leader_are_killed_together(
    group: BrokerGroup, etcd_server: EtcdServer, run: int
) -> None:
    test = FaultRun(group)
    leader = group.wait_for_leader()
    etcd_server.kill()
    group.kill(leader)
    etcd_server.start()
    test.fault(f"kill etcd and leader {leader}")
    test.failover(leader)
    test.rejoin(leader)
    test.finish("kill etcd and leader", run)


def test_should_finish_a_truncation_a_crash_interrupted(
    group: BrokerGroup, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = CRASH_STEPS[run % len(CRASH_STEPS)]
    test = FaultRun(group)
    first = group.wait_for_leader()
    filler, _, followers = tail_only_the_leader_has(group, first)
    group.kill(first)
    for member_id in followers:
        group.resume(member_id)
    filler.shutdown()
    test.fault(f"kill leader {first}")
    test.failover(first)

    # back as a follower, it dies in the middle of its truncation ...
    monkeypatch.setenv(CRASH_STEP_ENV, step)
    try:
        group.start(first)
    except BrokerStateError as exc:  # it died before its ready line: its output is the error's
        crashed_log = str(exc)
    else:
        assert group.members[first].process.wait(30) is not None
        group.kill(first)
        crashed_log = group.log(first)
    monkeypatch.delenv(CRASH_STEP_ENV)
    assert f"test crash at truncation step {step}" in crashed_log, crashed_log[-3000:]

    # ... and started again, it finishes the truncation first, then follows
    test.rejoin(first)
    assert "an unfinished truncation done again" in group.log(first), group.log(first)[-3000:]
    test.finish("crash during truncation", run)


def test_should_recover_when_every_member_restarts_at_once(group: BrokerGroup, run: int) -> None:
    test = FaultRun(group)
    group.kill_all()
    test.fault("kill every member")
    group.start_many(range(group.size))
    test.failover(timeout_s=COLD_START_S)
    # a cold start of the group (three processes started, recovered, elected), timed and
    # reported, not bound by the failover's limit: it is no failover
    test.finish("restart every member", run, timed=False)


def test_should_keep_every_acknowledged_send_across_a_power_loss_on_the_leader(
    group: BrokerGroup, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FSYNC_LEDGER_ENV, "1")
    test = FaultRun(group)
    leader = group.wait_for_leader()
    group.kill(leader)
    drop_unfsynced_suffix(group.data_dir(leader))
    test.fault(f"power loss on leader {leader}")
    test.failover(leader)
    test.rejoin(leader)
    test.finish("power loss on the leader", run)


def test_should_keep_every_acknowledged_send_across_a_power_loss_on_every_member(
    group: BrokerGroup, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FSYNC_LEDGER_ENV, "1")
    test = FaultRun(group)
    group.kill_all()
    test.fault("power loss on every member")
    for member_id in group.members:
        drop_unfsynced_suffix(group.data_dir(member_id))
    group.start_many(range(group.size))
    test.failover(timeout_s=COLD_START_S)
    test.finish("power loss on every member", run, timed=False)  # a cold start, as above


def test_should_replicate_over_a_lossy_link_and_fail_over_on_it(
    group: BrokerGroup, run: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rate = (0.1, 0.2, 0.3)[run % 3]
    monkeypatch.setenv(LOSS_ENV, f"{rate}:{run}")
    test = FaultRun(group)
    wait_acked(test.senders, 20)
    leader = group.wait_for_leader()
    group.kill(leader)
    test.fault(f"kill leader {leader} (loss {rate})")
    test.failover(leader)
    test.rejoin(leader)
    test.finish(f"{rate:.0%} loss on the replication link", run)


def test_should_catch_a_corrupted_segment_and_recover_the_replica_from_the_leader(
    group: BrokerGroup, run: int
) -> None:
    test = FaultRun(group)
    wait_acked(test.senders, 20)
    leader = group.wait_for_leader()
    replica, other = (m for m in group.members if m != leader)
    group.kill(replica)
    group.wait_for(lambda s: replica not in s.isr, "the replica out of the ISR")
    batches = batch_offsets(group.data_dir(replica))
    offset, length = batches[len(batches) // 2]
    corrupt_batch(group.data_dir(replica), offset, length)
    test.rejoin(replica)
    log = group.log(replica)
    assert "broken record" in log, log[-3000:]
    # the replica leads and serves what it holds: every message whole, nothing acknowledged
    # lost (its high watermark moves once a second member is back: min_isr 2)
    for sender in test.senders:
        sender.stop()
    group.kill(leader)
    group.kill(other)
    group.wait_for(lambda s: s.leader == replica, "the replica leading", 30)
    group.start(other)
    group.wait_for(lambda s: other in s.isr, "a second member in the ISR", 30)
    test.finish("corrupted segment on a replica", run, drain_from=replica, timed=False)
