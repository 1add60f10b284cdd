"""``python burst.py EVENTS.pkl SCHED.txt LIMIT_MS``: for a traced run (``stall.py``'s pickle of
``../../2026-12-02d/raw/``) and the scheduler's record beside it (``perf record -e
sched:sched_switch -e sched:sched_wakeup -a -k CLOCK_MONOTONIC``, then ``perf script -F
comm,tid,cpu,time,event,trace``), every send over LIMIT_MS after the warm-up (the first tenth
of the sends): when the producer's ring signalled a sleeper (the tracer records only those), when
the session agent went to sleep and came back, and the agent's wake-up in the record: from
which context, with how many other wake-ups on that CPU within 100 us, and how long that CPU had
recorded nothing before the burst."""

from __future__ import annotations

import bisect
import pickle
import re
import sys
from pathlib import Path

Event = tuple[int, str, str, int, int]  # t ns, name, thread, count, thread CPU ns
Line = tuple[float, int, str]  # t s, CPU, text

_AGENT = "broker-sessions"
_CPU = re.compile(r" \[(\d{3})\] ")


def _calls(producer: list[Event]) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    started = None
    for t_ns, name, thread, _count, _cpu in producer:
        if thread != "MainThread":
            continue
        if name == "send_call":
            started = t_ns
        elif name == "send_return" and started is not None:
            calls.append((started, t_ns))
            started = None
    return calls


def _lines(path: Path) -> list[Line]:
    lines: list[Line] = []
    for text in path.read_text().splitlines():
        cpu = _CPU.search(text)
        if cpu is None:
            continue
        try:
            t_s = float(text.split("] ", 1)[1].split(":", 1)[0])
        except (IndexError, ValueError):
            continue
        lines.append((t_s, int(cpu.group(1)), text))
    return lines


def _agent_tid(lines: list[Line]) -> str:
    for _t, _cpu, text in lines:
        found = re.search(rf"prev_comm={_AGENT} prev_pid=(\d+)", text)
        if found:
            return found.group(1)
    raise SystemExit("no session agent in the record")


def _wake(lines: list[Line], times: list[float], tid: str, start_s: float, end_s: float) -> str:
    at = bisect.bisect_left(times, start_s)
    while at < len(lines) and lines[at][0] <= end_s:
        t_s, cpu, text = lines[at]
        if f"sched_wakeup: comm={_AGENT} pid={tid} " in text:
            burst = [
                line
                for line in lines[max(0, at - 30) : at + 30]
                if line[1] == cpu and "sched_wakeup" in line[2] and abs(line[0] - t_s) < 1e-4
            ]
            before = [line[0] for line in lines[max(0, at - 400) : at] if line[1] == cpu]
            quiet = [b for b in before if b < burst[0][0]]
            silent_ms = (burst[0][0] - quiet[-1]) * 1e3 if quiet else float("nan")
            return (
                f"woken from {text.split()[0]} on cpu{cpu} at +{(t_s - start_s) * 1e3:.2f} ms "
                f"with {len(burst) - 1} other wake-ups within 100 us, that CPU silent "
                f"{silent_ms:.2f} ms before"
            )
        at += 1
    return "no wake-up of the agent in the record"


def main() -> None:
    events: dict[str, list[Event]] = pickle.loads(Path(sys.argv[1]).read_bytes())
    lines = _lines(Path(sys.argv[2]))
    limit_ns = float(sys.argv[3]) * 1e6
    producer = sorted(events["producer"])
    agent = [e for e in sorted(events["broker"]) if e[2] == _AGENT]
    agent_times = [e[0] for e in agent]
    times = [line[0] for line in lines]
    tid = _agent_tid(lines)
    calls = _calls(producer)
    warm_ns = calls[len(calls) // 10][0]
    slow = [(a, b) for a, b in calls if b - a > limit_ns and a > warm_ns]
    print(f"{len(calls)} sends, {len(slow)} over {sys.argv[3]} ms after the warm-up")
    for a, b in slow:
        at = bisect.bisect_left(agent_times, a)
        woke = next((e for e in agent[at:] if e[1] in ("woken", "timeout")), None)
        slept = [e for e in agent[max(0, at - 30) : at] if e[1] == "sleep"]
        ring = next((e for e in producer if a <= e[0] <= b and e[1] == "ring"), None)
        rang = f"+{(ring[0] - a) / 1e3:.0f} us" if ring else "found no sleeper"
        sleep = f"+{(slept[-1][0] - a) / 1e3:.0f} us" if slept else "?"
        line = f"  send at {a / 1e9:.6f}, {(b - a) / 1e6:.1f} ms: ring {rang}; agent slept {sleep}"
        if woke is not None:
            line += f", {woke[1]} at +{(woke[0] - a) / 1e3:.0f} us; "
            line += _wake(lines, times, tid, a / 1e9, woke[0] / 1e9)
        print(line)


if __name__ == "__main__":
    main()
