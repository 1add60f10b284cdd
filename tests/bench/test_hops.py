"""The per-hop timeline's analysis (``bench/_hop_trace.py``): following each message from its
``send()`` through the broker to the ``poll()`` that returned it, and the CPU and wall time
between consecutive events of one thread."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench._hop_trace import BESIDE, CHAIN, Event, beside, chains, load, steps
from bench.suites import hops


def _message(start_ns: int, gap_ns: int) -> dict[str, list[Event]]:
    """The events of one message, ``gap_ns`` apart, in :data:`CHAIN`'s order."""
    roles: dict[str, list[Event]] = {}
    for index, (role, name, _) in enumerate(CHAIN):
        count = 1 if name in ("pulled", "polled") else 0
        event = Event(start_ns + index * gap_ns, name, "MainThread", count, index * gap_ns // 2)
        roles.setdefault(role, []).append(event)
    return roles


def _merged(*messages: dict[str, list[Event]]) -> dict[str, list[Event]]:
    roles: dict[str, list[Event]] = {}
    for message in messages:
        for role, events in message.items():
            roles.setdefault(role, []).extend(events)
    return {role: sorted(events, key=lambda e: e.t_ns) for role, events in roles.items()}


def test_should_follow_each_message_through_its_steps() -> None:
    roles = _merged(_message(0, 10), _message(1_000, 20), _message(2_000, 30))
    paths = chains(roles, skip=1)
    assert [path[0] for path in paths] == [1_000, 2_000]  # the first left out (warm-up)
    assert paths[0] == [1_000 + i * 20 for i in range(len(CHAIN))]


def test_should_time_a_step_beside_the_chain_against_it() -> None:
    # the send's answer (send_end) is off the message's way to poll(): found after the chain's
    # step it follows, whether before or after the steps that come next; a step never seen: 0
    roles = _merged(_message(0, 10), _message(1_000, 20))
    follows = BESIDE[0][2]
    made = 1_000 + follows * 20 + 25
    roles["broker"].append(Event(made, "send_end", "MainThread", 0, 0))
    roles["broker"].sort(key=lambda e: e.t_ns)
    paths = chains(roles)
    times = beside(roles, paths)
    assert len(times) == len(BESIDE)
    assert times[0] == [made, made]  # the first message's path found the next one made
    assert times[1] == [0, 0]  # no "queued" event recorded


def test_should_skip_empty_pulls_and_polls_and_drop_an_unfinished_path() -> None:
    roles = _merged(_message(0, 10))
    roles["consumer"].insert(0, Event(5, "polled", "MainThread", 0, 0))  # an empty poll()
    del roles["consumer"][-1]  # and the message's poll() never came
    assert chains(roles) == []


def test_should_time_the_steps_between_events_of_one_thread() -> None:
    events = [
        Event(0, "sleep", "T", 0, 0),
        Event(1_000_000, "woken", "T", 0, 10_000),
        Event(1_050_000, "sleep", "T", 0, 40_000),
        Event(2_050_000, "woken", "T", 0, 50_000),
    ]
    hops = {(hop.start, hop.end): hop for hop in steps(events)}
    assert hops[("sleep", "woken")].count == 2
    assert hops[("sleep", "woken")].cpu_us == 10.0  # the median of 10 and 10 us
    assert hops[("woken", "sleep")].wall_us == 50.0


def test_should_load_each_process_by_the_events_it_recorded(tmp_path: Path) -> None:
    (tmp_path / "1.hops").write_text("10 request agent 0 5\n20 answer agent 0 9\n")
    (tmp_path / "2.hops").write_text("5 send_call MainThread 0 1\n")
    (tmp_path / "3.hops").write_text("30 polled MainThread 1 2\n")
    roles = load(tmp_path)
    assert sorted(roles) == ["broker", "consumer", "producer"]
    assert [event.name for event in roles["broker"]] == ["request", "answer"]


def _run_traced(code: str, hops_dir: Path) -> str:
    """``code`` in a fresh interpreter (the tracer's events are its process's), with
    ``AEROMQ_HOPS_DIR`` set; its output."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "AEROMQ_HOPS_DIR": str(hops_dir)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_should_record_events_of_two_threads_without_setting_off_a_collection(
    tmp_path: Path,
) -> None:
    code = """
import gc, threading
from bench import _hop_trace
def record(n):
    for i in range(n):
        _hop_trace._record("send_call", i)
threads = [threading.Thread(target=record, args=(5000,), name=f"t{k}") for k in range(2)]
gc.collect(); before = sum(s["collections"] for s in gc.get_stats())
for t in threads: t.start()
for t in threads: t.join()
print(sum(s["collections"] for s in gc.get_stats()) - before)
_hop_trace._dump()
"""
    collections = int(_run_traced(code, tmp_path))
    events = load(tmp_path)["producer"]

    assert collections == 0  # no object an event: a tuple each set off one every 700 or so
    assert len(events) == 10_000
    assert {event.thread for event in events} == {"t0", "t1"}
    by_thread = [[e.count for e in events if e.thread == name] for name in ("t0", "t1")]
    assert by_thread == [list(range(5000))] * 2  # each thread's in order, none torn


def test_should_name_a_wrapped_call_made_with_keywords(tmp_path: Path) -> None:
    code = """
from bench import _hop_trace
class Cache:
    def take(self, timeout, first=True):
        return ["request"] if not first else None
_hop_trace._wrap(Cache, "take", after=lambda got, *_: "taken" if got else None)
print(Cache().take(0.0, first=False))
_hop_trace._record("polled", 1)  # (a consumer's: load tells the role by it)
_hop_trace._dump()
"""
    assert _run_traced(code, tmp_path).strip() == "['request']"
    assert [event.name for event in load(tmp_path)["consumer"]] == ["taken", "polled"]


def test_should_find_every_method_it_wraps() -> None:
    # install() names private classes at run time: a rename fails here, not in a traced run
    code = "from bench._hop_trace import install; install(); print('installed')"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "installed"


def test_should_follow_messages_from_send_to_poll_in_a_traced_run(tmp_path: Path) -> None:
    # a broker, a producer and a consumer process, traced: every step of CHAIN must still be
    # recorded by what the straight paths call (a path moved off a wrapped method broke the
    # suite once: "no message was followed"); rows_of raises when no chain completes
    run = hops.traced_run(tmp_path, 1_000, 60, warm_up=5)
    assert run.skip == 5 and {"broker", "consumer", "producer"} <= set(run.roles)
    rows = hops.rows_of(run, 1_000, 60)
    followed = [row.extra["followed"] for row in rows if "followed" in row.extra]
    assert len(followed) == len(CHAIN) + len(BESIDE)
    assert min(int(str(count)) for count in followed) >= 30, followed
