"""Leases against a real etcd (keys vanish after the TTL once keep-alives stop, the keeper keeps
them, its deadline never passes the real expiry) and the keeper's timing with a fake etcd."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from aeromq.broker.etcd import (
    EtcdClient,
    EtcdError,
    EtcdLeaseNotFoundError,
    EtcdServer,
    EtcdUnavailableError,
    Lease,
    LeaseKeeper,
)


def _wait_gone(etcd: EtcdClient, key: str, timeout_s: float) -> float:
    """Poll ``key`` until it is gone; returns the monotonic time the first read that saw it
    gone had finished (the key was gone by then)."""
    deadline_s = time.monotonic() + timeout_s
    while time.monotonic() < deadline_s:
        if etcd.get(key) is None:
            return time.monotonic()
        time.sleep(0.02)
    raise AssertionError(f"key still present after {timeout_s} s: key={key!r}")


def _wait(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Wait for ``condition`` (a keeper's count or deadline), at most ``timeout_s``."""
    deadline_s = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline_s, f"not within {timeout_s} s"
        time.sleep(0.005)


def test_should_put_a_key_with_a_lease(etcd: EtcdClient) -> None:
    lease = etcd.grant_lease(2)

    etcd.put("/g/members/0", b"{}", lease_id=lease.id)

    kv = etcd.get("/g/members/0")
    status = etcd.time_to_live(lease.id, keys=True)
    assert kv is not None and kv.lease_id == lease.id
    assert (status.granted_ttl_s, status.keys) == (2, ("/g/members/0",))
    assert 0 <= status.ttl_s <= 2


def test_should_time_a_lease_from_the_send_of_its_request(etcd: EtcdClient) -> None:
    before_s = time.monotonic()
    lease = etcd.grant_lease(2)
    renewed = etcd.keep_alive_once(lease.id)
    after_s = time.monotonic()

    assert before_s + 2 <= lease.deadline_s <= renewed.deadline_s <= after_s + 2
    assert renewed.ttl_s == 2


def test_should_drop_a_lease_s_keys_after_the_ttl_once_keep_alives_stop(
    etcd: EtcdClient,
) -> None:
    lease = etcd.grant_lease(1)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)

    gone_s = _wait_gone(etcd, "/g/members/0", timeout_s=5)

    # the key lived at least its TTL from the grant's send (etcd checks expiries every 500 ms)
    assert gone_s >= lease.deadline_s
    assert etcd.time_to_live(lease.id).ttl_s == -1
    with pytest.raises(EtcdLeaseNotFoundError, match=f"lease_id={lease.id}"):
        etcd.keep_alive_once(lease.id)


def test_should_keep_a_lease_s_keys_while_the_keeper_runs(etcd: EtcdClient) -> None:
    lease = etcd.grant_lease(1)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)
    keeper = etcd.keep_lease_alive(lease)
    try:
        time.sleep(3.5)  # three and a half TTLs
        kv = etcd.get("/g/members/0")
        assert kv is not None
        assert keeper.renewals >= 8  # every TTL/4: 14 in 3.5 s, fewer on a loaded machine
        assert keeper.interval_s == pytest.approx(0.25)
        assert keeper.is_valid()
    finally:
        keeper.stop()

    _wait_gone(etcd, "/g/members/0", timeout_s=5)
    assert not keeper.is_valid()


def test_should_never_extend_the_deadline_past_the_real_expiry(etcd: EtcdClient) -> None:
    lease = etcd.grant_lease(1)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)
    keeper = etcd.keep_lease_alive(lease)
    time.sleep(1.2)
    keeper.stop()
    deadline_s = keeper.deadline_s

    # Every read that completed before the deadline saw the key: the lease was valid then.
    reads: list[tuple[float, bool]] = []
    while True:
        present = etcd.get("/g/members/0") is not None
        reads.append((time.monotonic(), present))
        if not present:
            break
        time.sleep(0.01)

    assert all(present for finished_s, present in reads if finished_s < deadline_s)
    assert reads[-1][0] >= deadline_s
    # and it is not uselessly early: etcd drops the key within a TTL and its 500 ms check
    assert reads[-1][0] - deadline_s < 1.0 + 0.5 + 0.5


def test_should_report_a_revoked_lease_as_lost(etcd: EtcdClient) -> None:
    lease = etcd.grant_lease(2)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)
    lost: list[EtcdError] = []
    keeper = etcd.keep_lease_alive(lease, interval_ms=50, on_lost=lost.append)
    try:
        etcd.revoke(lease.id)
        assert etcd.get("/g/members/0") is None  # revoking deletes at once
        deadline_s = time.monotonic() + 5
        while keeper.lost is None and time.monotonic() < deadline_s:
            time.sleep(0.02)
    finally:
        keeper.stop()

    assert isinstance(keeper.lost, EtcdLeaseNotFoundError)
    assert lost == [keeper.lost]
    assert not keeper.is_valid()


def test_should_keep_a_lease_across_an_etcd_restart(
    etcd_server: EtcdServer, etcd: EtcdClient
) -> None:
    lease = etcd.grant_lease(2)
    etcd.put("/g/members/0", b"{}", lease_id=lease.id)
    keeper = etcd.keep_lease_alive(lease)
    try:
        etcd_server.kill()
        deadline_s = time.monotonic() + 5
        while keeper.failures == 0 and time.monotonic() < deadline_s:
            time.sleep(0.02)
        failed = keeper.failures
        etcd_server.start()  # etcd gives every lease a fresh TTL when it comes back
        renewals = keeper.renewals
        time.sleep(1.0)

        assert failed >= 1
        assert isinstance(keeper.last_error, EtcdUnavailableError)
        assert keeper.renewals > renewals
        assert keeper.lost is None
        assert etcd.get("/g/members/0") is not None
    finally:
        keeper.stop()


class _FakeEtcd:
    """Answers keep-alives as scripted: ``"ok"`` (after ``delay_s``), ``"down"`` or ``"gone"``."""

    def __init__(self, ttl_s: int) -> None:
        self.ttl_s = ttl_s
        self.answer = "ok"
        self.delay_s = 0.0
        self.calls = 0
        self.timeouts: list[int | None] = []
        self.sent_s: list[float] = []

    def renew(self, lease_id: int, *, timeout_ms: int | None = None) -> Lease:
        self.calls += 1
        self.timeouts.append(timeout_ms)
        sent_s = time.monotonic()
        self.sent_s.append(sent_s)
        time.sleep(self.delay_s)
        if self.answer == "down":
            raise EtcdUnavailableError("etcd unavailable", lease_id=lease_id)
        if self.answer == "gone":
            raise EtcdLeaseNotFoundError("etcd lease not found", lease_id=lease_id)
        return Lease(lease_id, self.ttl_s, sent_s + self.ttl_s)


def test_should_renew_every_quarter_ttl_with_a_quarter_ttl_deadline_per_call() -> None:
    fake = _FakeEtcd(ttl_s=2)
    keeper = LeaseKeeper(fake.renew, Lease(7, 2, time.monotonic() + 2))
    keeper.start()
    deadline_s = time.monotonic() + 10
    while fake.calls < 3 and time.monotonic() < deadline_s:
        time.sleep(0.01)
    keeper.stop()

    assert fake.calls >= 3  # at 0, 0.5 and 1.0 s (later on a loaded machine, never sooner)
    gaps_s = [later - earlier for earlier, later in itertools.pairwise(fake.sent_s)]
    assert all(gap_s >= 0.45 for gap_s in gaps_s), gaps_s
    assert set(fake.timeouts) == {500}


def test_should_leave_the_deadline_where_it_was_while_etcd_is_down() -> None:
    fake = _FakeEtcd(ttl_s=1)
    keeper = LeaseKeeper(fake.renew, Lease(7, 1, time.monotonic() + 1), interval_ms=50)
    keeper.start()
    try:
        _wait(lambda: keeper.renewals >= 2)
        fake.answer = "down"
        # the first failure: a renewal answered before the switch has set its deadline by now
        # (a fixed 100 ms pause could end before a preempted keeper had)
        _wait(lambda: keeper.failures >= 1)
        frozen_s = keeper.deadline_s
        _wait(lambda: keeper.failures >= 3)

        assert keeper.deadline_s == frozen_s
        assert isinstance(keeper.last_error, EtcdUnavailableError)
        fake.answer = "ok"
        _wait(lambda: keeper.deadline_s > frozen_s)
    finally:
        keeper.stop()


def test_should_date_the_deadline_from_the_send_not_the_answer() -> None:
    fake = _FakeEtcd(ttl_s=1)
    fake.delay_s = 0.3  # a slow answer
    keeper = LeaseKeeper(fake.renew, Lease(7, 1, time.monotonic() + 1), interval_ms=1000)
    keeper.start()
    try:
        deadline_s = time.monotonic() + 5
        while keeper.renewals == 0 and time.monotonic() < deadline_s:
            time.sleep(0.01)
        answered_s = time.monotonic()

        assert keeper.deadline_s == fake.sent_s[0] + 1
        assert keeper.deadline_s <= answered_s + 1 - 0.25
    finally:
        keeper.stop()


def test_should_stop_renewing_and_report_once_etcd_says_the_lease_is_gone() -> None:
    fake = _FakeEtcd(ttl_s=1)
    ended = threading.Event()
    lost: list[EtcdError] = []

    def on_lost(error: EtcdError) -> None:
        lost.append(error)
        ended.set()

    fake.answer = "gone"
    keeper = LeaseKeeper(
        fake.renew, Lease(7, 1, time.monotonic() + 1), interval_ms=20, on_lost=on_lost
    )
    keeper.start()
    assert ended.wait(5)
    time.sleep(0.1)
    keeper.stop()

    assert fake.calls == 1
    assert len(lost) == 1 and isinstance(lost[0], EtcdLeaseNotFoundError)
    assert not keeper.is_valid()
