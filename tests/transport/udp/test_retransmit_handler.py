"""RetransmitHandler: one resend per gap, linger against duplicate NAKs, delays, limits."""

from __future__ import annotations

from aeromq.transport.driver.system_counters import SystemCounter, SystemCounters
from aeromq.transport.driver.udp.retransmit_handler import RetransmitHandler
from tests.transport.udp.support import system_counters

TERM = 64 * 1024


def _handler(
    delay_ns: int = 0, max_resend: int = 16
) -> tuple[RetransmitHandler, list[tuple[int, int, int]], SystemCounters]:
    _, system = system_counters()
    handler = RetransmitHandler(
        delay_ns=delay_ns,
        linger_ns=1_000,
        max_resend=max_resend,
        invalid_packets=system.get(SystemCounter.INVALID_PACKETS),
        overflows=system.get(SystemCounter.RETRANSMIT_OVERFLOW),
    )
    return handler, [], system


def test_should_resend_at_once_and_ignore_duplicates_while_lingering() -> None:
    handler, resent, _ = _handler()
    resend = lambda *args: resent.append(args)  # noqa: E731
    handler.on_nak(5, 1024, 512, TERM, 0, resend)
    handler.on_nak(5, 1024, 512, TERM, 500, resend)
    assert resent == [(5, 1024, 512)]
    assert handler.process_timeouts(900, resend) == 0
    assert handler.process_timeouts(1_001, resend) == 1  # linger over
    handler.on_nak(5, 1024, 512, TERM, 1_100, resend)
    assert resent == [(5, 1024, 512), (5, 1024, 512)]


def test_should_delay_the_resend_when_configured() -> None:
    handler, resent, _ = _handler(delay_ns=100)
    resend = lambda *args: resent.append(args)  # noqa: E731
    handler.on_nak(5, 0, 64, TERM, 0, resend)
    handler.process_timeouts(50, resend)
    assert resent == []
    handler.process_timeouts(101, resend)
    assert resent == [(5, 0, 64)]
    handler.on_nak(5, 0, 64, TERM, 150, resend)  # still lingering
    assert len(resent) == 1


def test_should_cut_a_resend_at_the_end_of_the_term() -> None:
    handler, resent, _ = _handler()
    handler.on_nak(1, TERM - 64, 4096, TERM, 0, lambda *args: resent.append(args))
    assert resent == [(1, TERM - 64, 64)]


def test_should_count_invalid_naks_and_pool_overflows() -> None:
    handler, resent, system = _handler(max_resend=2)
    resend = lambda *args: resent.append(args)  # noqa: E731
    handler.on_nak(1, -32, 64, TERM, 0, resend)
    handler.on_nak(1, TERM, 64, TERM, 0, resend)
    handler.on_nak(1, 0, 0, TERM, 0, resend)
    assert system.get(SystemCounter.INVALID_PACKETS).get() == 3
    for offset in (0, 64, 128):
        handler.on_nak(1, offset, 64, TERM, 0, resend)
    assert len(resent) == 2 and handler.active_count == 2
    assert system.get(SystemCounter.RETRANSMIT_OVERFLOW).get() == 1
