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
    assert probe.check(5_000 * MS, last_heard_ns=0, waiting=True) is ProbeAction.NOTHING
    assert probe.check(5_100 * MS, last_heard_ns=0, waiting=True) is ProbeAction.NOTHING
    assert probe.check(5_000 * MS + PROBE_AFTER_NS, 0, True) is ProbeAction.PROBE


def test_should_take_an_answer_or_its_bytes_for_a_sign_of_life() -> None:
    probe = UdpProbe()
    probe.check(0, last_heard_ns=0, waiting=True)
    assert probe.check(900 * MS, last_heard_ns=800 * MS, waiting=True) is ProbeAction.NOTHING
    assert probe.check(1_500 * MS, last_heard_ns=800 * MS, waiting=True) is ProbeAction.PROBE
    assert probe.check(1_700 * MS, 800 * MS, True, received_position=4096) is ProbeAction.NOTHING
    assert probe.check(2_600 * MS, 800 * MS, True, received_position=4096) is ProbeAction.PROBE
    assert probe.check(2_701 * MS, 800 * MS, True, received_position=4096) is ProbeAction.FAIL
