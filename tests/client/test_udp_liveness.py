"""The UDP session's probe (``client/_udp_liveness.py``) on an injected clock: silent while
nothing waits, a keepalive every 200 ms of silence while a request waits, the session failed
after 1 s of it; an answer, or bytes of one arriving, is a sign of life."""

from __future__ import annotations

from aeromq.client._udp_liveness import PROBE_AFTER_NS, SILENT_NS, ProbeAction, UdpProbe

MS = 1_000_000


def _run(probe: UdpProbe, until_ns: int, *, waiting: bool) -> dict[int, ProbeAction]:
    """The actions of a check every millisecond from 0 to ``until_ns`` (nothing heard), by
    time."""
    actions = {}
    for now_ns in range(0, until_ns, MS):
        action = probe.check(now_ns, 0, waiting)
        if action is not ProbeAction.NOTHING:
            actions[now_ns] = action
    return actions


def test_should_do_nothing_while_no_request_waits() -> None:
    assert _run(UdpProbe(), 5_000 * MS, waiting=False) == {}


def test_should_probe_every_200_ms_of_silence_and_fail_after_a_second() -> None:
    actions = _run(UdpProbe(), 1_100 * MS, waiting=True)
    probes = [t for t, a in actions.items() if a is ProbeAction.PROBE]
    assert probes == [200 * MS, 400 * MS, 600 * MS, 800 * MS, 1_000 * MS]
    assert min(t for t, a in actions.items() if a is ProbeAction.FAIL) == SILENT_NS + MS


def test_should_count_silence_from_the_request_not_from_an_old_answer() -> None:
    probe = UdpProbe()
    for now_ms in range(0, 5_000, 100):  # idle: the poller runs, nothing waits
        probe.check(now_ms * MS, last_heard_ns=0, waiting=False)
    assert probe.check(5_000 * MS, last_heard_ns=0, waiting=True) is ProbeAction.NOTHING
    assert probe.check(5_100 * MS, last_heard_ns=0, waiting=True) is ProbeAction.NOTHING
    assert probe.check(5_000 * MS + PROBE_AFTER_NS, 0, True) is ProbeAction.PROBE


def test_should_take_an_answer_or_its_bytes_for_a_sign_of_life() -> None:
    probe = UdpProbe()
    actions = {}
    for now_ms in range(0, 2_800, 10):
        heard_ms = 800 if now_ms >= 800 else 0
        position = 4096 if now_ms >= 1_700 else 0  # bytes of a long answer arriving
        action = probe.check(now_ms * MS, heard_ms * MS, True, position)
        if action is not ProbeAction.NOTHING:
            actions[now_ms] = action
    assert actions[200] is ProbeAction.PROBE and 800 not in actions
    assert actions[1_000] is ProbeAction.PROBE  # 200 ms after the answer heard at 800
    assert ProbeAction.FAIL not in [actions.get(ms) for ms in range(0, 2_700, 10)]
    assert actions[2_710] is ProbeAction.FAIL  # a second after the last bytes, at 1,700


def test_should_not_take_a_starved_poller_for_a_silent_broker() -> None:
    probe = UdpProbe()
    assert probe.check(0, 0, True) is ProbeAction.NOTHING
    # the poller's thread was off the CPU for 3 s: answers may wait unread, start again
    assert probe.check(3_000 * MS, 0, True) is ProbeAction.NOTHING
    assert probe.check(3_100 * MS, 0, True) is ProbeAction.NOTHING
