"""Repeated faults on a broker group of three processes (run with ``-m faults``; skipped
otherwise, the default run has ``test_broker_group.py``): rounds of a SIGKILLed leader and of
a leader paused past its lease, each followed by the member's return, under two senders; the
whole history is checked at the end and every failover is timed. ``AEROMQ_FAULT_ROUNDS``
(default 6) sets the rounds."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.etcd import EtcdServer
from tests.faults.history import History, check, recovery_times
from tests.system._group import BrokerGroup, GroupSender

FAILOVER_LIMIT_S = 5.0


@pytest.fixture
def faults_selected(request: pytest.FixtureRequest) -> None:
    if "faults" not in (request.config.option.markexpr or ""):
        pytest.skip("a long fault run: select it with -m faults")


@pytest.fixture
def group(faults_selected: None, shm_dir: Path) -> Iterator[BrokerGroup]:
    etcd = EtcdServer(shm_dir / "etcd")
    etcd.start()
    members = BrokerGroup(shm_dir, etcd)
    try:
        yield members
    finally:
        members.close()
        etcd.stop()


@pytest.mark.faults
@pytest.mark.timeout(900)
def test_should_keep_every_acknowledged_send_over_rounds_of_leader_faults(
    group: BrokerGroup,
) -> None:
    rounds = int(os.environ.get("AEROMQ_FAULT_ROUNDS", "6"))
    group.start_all()
    history = History()
    senders = [GroupSender(group, history, f"p{q}", queue_id=q).start() for q in (0, 1)]
    for sender in senders:
        sender.wait_acked(20)
    for round_ in range(rounds):
        leader = group.wait_for_leader()
        if round_ % 2 == 0:
            group.kill(leader)
            history.mark(f"kill leader {leader}")
        else:
            group.pause(leader)
            history.mark(f"pause leader {leader}")
        group.wait_for_leader(other_than=leader)
        for sender in senders:
            sender.wait_acked(sender.acked + 10, timeout_s=60)
        if round_ % 2 == 0:
            group.start(leader)
        else:
            group.resume(leader)
        group.wait_for(lambda s, m=leader: m in s.isr, f"member {leader} back in the ISR", 60)
        time.sleep(0.5)
    for sender in senders:
        sender.stop()
    group.drain(group.wait_for_leader(), history, "c0")

    result = check(history.ops)
    assert result.valid, result.summary()
    times = recovery_times(history.ops)
    print(
        "recovery times:",
        ", ".join(f"{fault}: {seconds:.2f} s" for fault, seconds in times if seconds),
    )
    assert len(times) == rounds
    slow = [
        (fault, seconds)
        for fault, seconds in times
        if seconds is None or seconds > FAILOVER_LIMIT_S
    ]
    assert not slow, times
