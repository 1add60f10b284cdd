"""An idle broker (its embedded driver, no clients) sleeps: every agent thread parks (Agrona's
backoff, deepened to 10 ms after a quiet while), so the process uses under 2% of a core."""

from __future__ import annotations

import os
import time
from pathlib import Path

from aeromq.broker.testing import start_broker_process

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
SETTLE_S = 3.0
MEASURE_S = 4.0
# The target is 2% of a core. Slack: /proc counts CPU time in ticks (10 ms: 0.25% of the 4 s
# window), and on a loaded 2-core CI machine each wake-up costs more (cache misses, waiting
# for the GIL's hand-over); measured 1.8-2.0% with a load average of 11, ~1% on a quiet one.
MAX_CORE_FRACTION = 0.025


def _cpu_s(pid: int) -> float:
    """User plus system CPU time of the whole process (every thread), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS_PER_S


def test_should_use_under_two_percent_of_a_core_when_idle(tmp_path: Path) -> None:
    broker = start_broker_process(
        tmp_path / "data",
        extra_args=["--index-enabled", "false", "--commit-log-segment-bytes", "16MiB"],
    )
    try:
        time.sleep(SETTLE_S)  # start-up work done, every agent parked deep
        cpu_before, at_before = _cpu_s(broker.pid), time.monotonic()
        time.sleep(MEASURE_S)
        cpu_after, at_after = _cpu_s(broker.pid), time.monotonic()
        fraction = (cpu_after - cpu_before) / (at_after - at_before)
        assert fraction < MAX_CORE_FRACTION, (
            f"idle broker used {fraction:.2%} of a core (load average {os.getloadavg()[0]:.1f})"
        )
        assert broker.process.poll() is None
    finally:
        assert broker.stop() == 0
