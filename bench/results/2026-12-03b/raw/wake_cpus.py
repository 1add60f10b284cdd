"""Kernel wake-ups of the three processes at a paced rate, from a light scheduler record.

``PYTHONPATH=TREE perf record -q -e sched:sched_switch -e sched:sched_wakeup -a -k CLOCK_MONOTONIC
-m 2048 -o sched.data -- python wake_cpus.py run 10 40 > pids.json`` runs a broker (the latency
suite's), a consumer and a producer paced at 10 msgs/s for 40 s over IPC and prints the roles'
pids; ``perf script -i sched.data -F comm,pid,tid,cpu,time,event,trace > sched.txt`` then
``python wake_cpus.py report pids.json sched.txt`` prints, for each (woken process, main thread or
not, waker process, same CPU as the waker), the time from each wake-up to the woken thread's
switch-in (p50, p90, p99, max, us); the consumer's main thread after each of the broker's wakes
(preempted before it slept or not, its CPU time); and the session agent's wake-ups by the
producer's main thread. Output of this round: ``wake-cpus-10.txt``.
"""

from __future__ import annotations

import bisect
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

_LINE = re.compile(r"^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:(\w+):\s+(.*)$")
_WOKEN = re.compile(r"comm=(.+?) pid=(\d+) .*target_cpu=(\d+)")
_NEXT = re.compile(r"next_comm=(.+?) next_pid=(\d+)")
_PREV = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+)")


def _run(rate: int, seconds: float) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "2026-12-02" / "raw"))
    from _run import broker_with, paced, run  # (the path above)

    import bench._latency_run as latency_run

    pids: dict[str, int] = {}
    spawn = latency_run.spawn

    def spy(target: Callable[..., object], *args: object) -> object:
        process = spawn(target, *args)
        pids[getattr(target, "__name__", "role").replace("aeromq_", "")] = process.pid or 0
        return process

    latency_run.spawn = spy  # type: ignore[assignment]  # (recording the roles' pids)
    with broker_with({}) as (broker, admin):
        pids["broker"] = broker.pid
        result = run(broker, admin, "W", paced(rate, seconds))
    print(json.dumps({"pids": pids, "p50_us": result.p50_us, "p99_us": result.p99_us}))


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))]

    return (
        f"n {len(ordered)} p50 {at(0.5):.0f} p90 {at(0.9):.0f} p99 {at(0.99):.0f} "
        f"max {ordered[-1]:.0f}"
    )


def _report(pids_file: str, sched_file: str) -> None:
    pids: dict[str, int] = json.loads(Path(pids_file).read_text())["pids"]
    role_of = {pid: role for role, pid in pids.items()}
    tgid: dict[int, int] = {}
    names: dict[int, str] = {}
    wakes: list[tuple[float, int, int, int, int, int]] = []  # t, waker pid, tid, cpu, woken, cpu
    switches: list[tuple[float, int, int, int, str]] = []  # t, cpu, prev tid, next tid, state
    switch_in: dict[int, list[float]] = defaultdict(list)
    for line in Path(sched_file).read_text().splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        _, pid, tid, cpu, t, event, rest = match.groups()
        tgid[int(tid)] = int(pid)
        if event == "sched_wakeup":
            found = _WOKEN.search(rest)
            if found is not None:
                names[int(found.group(2))] = found.group(1)
                wake = (float(t), int(pid), int(tid), int(cpu), int(found.group(2)))
                wakes.append((*wake, int(found.group(3))))
        elif event == "sched_switch":
            into, out = _NEXT.search(rest), _PREV.search(rest)
            if into is not None and out is not None:
                switch_in[int(into.group(2))].append(float(t))
                switches.append(
                    (float(t), int(cpu), int(out.group(1)), int(into.group(2)), out.group(2))
                )
    latencies: dict[tuple[str, str, str, bool], list[float]] = defaultdict(list)
    for t, waker, _, waker_cpu, woken, target_cpu in wakes:
        role = role_of.get(tgid.get(woken, -1))
        ins = switch_in.get(woken, [])
        i = bisect.bisect_left(ins, t)
        if role is None or i == len(ins):
            continue
        thread = "main" if woken in role_of else "thread"
        key = (role, thread, role_of.get(waker, "other"), waker_cpu == target_cpu)
        latencies[key].append((ins[i] - t) * 1e6)
    print("wake-up to switch-in, us: (woken, thread, waker, same cpu)")
    for key, values in sorted(latencies.items()):
        if len(values) >= 20:
            print(" ", key, _quantiles(values))
    consumer, producer, broker = pids["consumer"], pids["producer"], pids["broker"]
    times = [s[0] for s in switches]
    followed = preempted = 0
    cpu_us: list[float] = []
    for t, waker, _, _, woken, _ in wakes:
        if waker != broker or woken != consumer:
            continue
        ran_us, since, slept = 0.0, None, False
        for s_t, _, prev, nxt, state in switches[bisect.bisect_right(times, t) :][:4000]:
            if nxt == consumer:
                since = s_t
            elif prev == consumer:
                ran_us += 0.0 if since is None else (s_t - since) * 1e6
                if state.startswith("R"):
                    preempted += 1
                else:
                    slept = True
                    break
        if slept:
            followed += 1
            cpu_us.append(ran_us)
    print(
        f"the consumer's main thread after the broker's wakes: {followed} followed, preempted "
        f"{preempted} times before it slept; on the CPU p50 {statistics.median(cpu_us):.0f} us"
    )
    agents = [tid for tid, name in names.items() if name == "broker-sessions"]
    by_producer = [
        (switch_in[w][bisect.bisect_left(switch_in[w], t)] - t) * 1e6
        for t, _, tid, _, w, _ in wakes
        if tid == producer
        and w in agents
        and bisect.bisect_left(switch_in[w], t) < len(switch_in[w])
    ]
    print("the session agent woken by the producer's main thread:", _quantiles(by_producer))


def main() -> None:
    if sys.argv[1] == "run":
        _run(int(sys.argv[2]), float(sys.argv[3]))
    else:
        _report(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
