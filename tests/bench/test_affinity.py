"""``AEROMQ_BENCH_CPU_AFFINITY``: the setting read (and refused with the part at fault), every
thread of a real process pinned, and a real latency run (the floor's three processes) pinned by
role with the row saying where."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("hdrh")

from bench._affinity import AFFINITY_ENV, parse, pin, pin_roles  # after the skip
from bench.suites import latency

CPUS = sorted(os.sched_getaffinity(0))
needs_two_cpus = pytest.mark.skipif(len(CPUS) < 2, reason="pinning apart needs two CPUs")


def test_should_read_roles_and_taskset_style_cpu_lists() -> None:
    first = CPUS[0]
    assert parse("") == {}
    assert parse(f"server={first} producer={first},{first} consumer={first}-{first}") == {
        "server": frozenset({first}),
        "producer": frozenset({first}),
        "consumer": frozenset({first}),
    }


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("broker=0", "'broker=0' is not ROLE=CPULIST"),
        ("server", "'server' is not ROLE=CPULIST"),
        ("server=one", "'server=one' has a CPU list that is not N[-M]"),
        ("server=1-0", "'server=1-0' has an empty or negative range '1-0'"),
        ("consumer=4096", "'consumer=4096' names CPUs [4096] this process cannot run on"),
    ],
)
def test_should_refuse_a_setting_naming_the_part_at_fault(setting: str, says: str) -> None:
    with pytest.raises(ValueError, match=AFFINITY_ENV) as caught:
        parse(setting)
    assert says in str(caught.value)


def _threads_cpus(pid: int) -> dict[int, str]:
    """Each thread of ``pid``: its ``Cpus_allowed_list`` as the kernel says."""
    allowed = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                allowed[int(task.name)] = line.split(":", 1)[1].strip()
    return allowed


@needs_two_cpus
def test_should_pin_every_thread_of_a_process_and_the_threads_it_starts_after() -> None:
    script = (
        "import sys, threading, time\n"
        "gate = threading.Event()\n"
        "for _ in range(3): threading.Thread(target=gate.wait, daemon=True).start()\n"
        "print('up', flush=True); sys.stdin.readline()\n"
        "threading.Thread(target=gate.wait, daemon=True).start()\n"
        "print('more', flush=True); sys.stdin.readline()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline() == "up\n"
            last = CPUS[-1]
            assert pin_roles({"redis-server": child.pid}, {"server": frozenset({last})}) == {
                "redis-server": [last]
            }
            assert pin(child.pid, frozenset({last})) == {last}
            before = _threads_cpus(child.pid)
            assert len(before) == 4 and set(before.values()) == {str(last)}
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline() == "more\n"
            after = _threads_cpus(child.pid)
            assert len(after) == 5 and set(after.values()) == {str(last)}
        finally:
            child.kill()


@needs_two_cpus
@pytest.mark.timeout(60)
def test_should_pin_a_latency_runs_roles_and_say_where_in_its_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, last = CPUS[0], CPUS[-1]
    monkeypatch.setenv(AFFINITY_ENV, f"producer={last} relay={first} consumer={first}")
    settings = latency.Settings((400,), {400: 1.0}, 0.25, 1.0, 0.1, 0.5)
    [floor] = latency._floor_rows(settings)
    assert floor.error is None, floor.error
    assert floor.extra["received"] == 400
    assert floor.extra["cpu_affinity"] == {
        "relay": [first],
        "consumer": [first],
        "producer": [last],
    }
