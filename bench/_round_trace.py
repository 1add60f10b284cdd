"""A broker group's commit round, hop by hop: the replication path's events added to
``bench/_hop_trace.py``'s recorder, and the median round's timeline from what every process
recorded (``python -m bench._round_trace DIR``; ``docs/replication.md``, "The commit round, hop
by hop").

Off unless ``AEROMQ_HOPS_DIR`` names a directory and ``AEROMQ_HOPS_GROUP`` is set: then
``_hop_trace.install`` (through ``bench/_hop_site`` on ``PYTHONPATH``) calls :func:`install`
too, in every process (``python -m bench cluster`` started so traces the group and its clients).
Events, besides ``_hop_trace``'s (each ``CLOCK_MONOTONIC`` ns, one clock across the host):

- any broker: ``snd`` / ``rcv`` (the driver's sender sent, its receiver took datagrams; count:
  how many), ``park`` / ``unpark`` (the network thread's park in its ``SocketWaiter``; park's
  count its timeout in us, unpark's what ended it: 0 the timeout, 1 a wake, 2 a socket),
  ``unsent`` (a park began while the thread's sender had bytes of its publications not sent;
  count: how many), ``fsync0`` / ``fsync1`` (the store's fsync), ``cycN`` (a duty cycle of the driver's network
  thread ended; ``N`` the agents that worked in it, a bit each in their order: 1 the
  conductor, 2 the receiver, 4 the hosted agents, 8 the sender with the hosted agents'
  ``after_send``; count: the cycle's own thread CPU in ns);
- the leader: ``r_sent`` (APPENDs offered, count: frames), ``r_ack`` (an ACK taken, count: the
  member), ``hw`` (the high watermark moved: its batches dispatched and its sends answered),
  ``commit_wait`` (a put started waiting: the agent rung); its first ``ring`` after the first
  ACK is taken for the sends' answers (its driver's thread offering them and ringing the
  producer, ``broker/session/_answers.py``; the session agent's when the agent was in a cycle);
- a follower: ``f_append`` (an APPEND taken), ``f_ack`` (an ACK offered);
- the producer: ``settled`` (an answered request's sends settled); the bench's puller is told
  by its ``answer_read``.

:func:`rounds` cuts the leader's events at each ``request`` its session agent polled and gives
each event's first time after it, for the leader, the followers (in the order their first
``f_append`` came), the producer and the consumer; :func:`timeline` takes the median of each,
:func:`durations` the rounds' lengths (median, mean, how many over :data:`SLOW_ROUND_MS`),
:func:`last_fsyncs` whose fsync (the leader's or a follower's) ended last in the rounds whose
high watermark moved after that. The
producer is the one that settled the most while the leader ran (a ``bench cluster`` run's
group end-to-end phase), and only the rounds of its run are taken.
"""

from __future__ import annotations

import bisect
import itertools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = [
    "PATH",
    "SLOW_ROUND_MS",
    "cpu_per_round",
    "cycles_per_round",
    "durations",
    "install",
    "last_fsyncs",
    "main",
    "rounds",
    "timeline",
]

GROUP_ENV: Final = "AEROMQ_HOPS_GROUP"
CYCLE_EVENT: Final = "cyc"
"""A driver duty cycle's event: ``cyc`` and the mask of the agents that worked (see module)."""
_DRIVER_ROLE: Final = "[driver-conductor"
SLOW_ROUND_MS: Final = 20
"""A round longer than this is counted as a stall by :func:`durations`."""

Record = Callable[..., None]
Wrap = Callable[..., None]


def install(record: Record, wrap: Wrap, private_class: Callable[[str, str], type]) -> None:
    """Wrap the replication path's methods with ``record`` (see module)."""
    from aeromq.broker.replication.fetcher import ReplicaFetcher
    from aeromq.broker.replication.replicator import LeaderReplicator
    from aeromq.broker.store import MessageStore
    from aeromq.transport.concurrent.agent import CompositeAgent
    from aeromq.transport.driver import Receiver, Sender
    from aeromq.transport.driver.udp.socket_waiter import SocketWaiter

    def counted(name: str) -> Callable[..., None]:
        def after(result: object, *_: object, **__: object) -> None:
            if isinstance(result, int) and result > 0:
                record(name, result)

        return after

    def sent(result: object, sender: Sender) -> None:
        if sender.waiter is not None:
            senders[id(sender.waiter)] = sender
        if isinstance(result, int) and result > 0:
            record("snd", result)

    wrap(Sender, "do_work", after=sent)
    wrap(Receiver, "do_work", after=counted("rcv"))
    wrap(MessageStore, "flush", "fsync0", "fsync1")
    wrap(LeaderReplicator, "_send", after=counted("r_sent"))
    wrap(LeaderReplicator, "on_ack", lambda *args: record("r_ack", args[1]))
    wrap(LeaderReplicator, "_advance_high_watermark", after=counted("hw"))
    wrap(ReplicaFetcher, "on_append", "f_append")
    wrap(ReplicaFetcher, "_send_ack", after=counted("f_ack"))
    watermark = private_class("aeromq.broker.store._commit_watermark", "CommitWatermark")
    wrap(watermark, "request", "commit_wait")
    async_sends = private_class("aeromq.producer._async_sends", "AsyncSends")
    wrap(async_sends, "_group_settle", after="settled")

    original_wait = SocketWaiter.wait
    senders: dict[int, Sender] = {}  # by waiter: whose publications a park leaves unsent

    def traced_wait(waiter: SocketWaiter, timeout_s: float) -> None:
        record("park", int(timeout_s * 1e6))
        sender = senders.get(id(waiter))
        if sender is not None:
            unsent = sum(
                max(0, publication.producer_position() - publication.sender_position())
                for publication in sender.publications
            )
            if unsent:
                record("unsent", unsent)
        wakes = waiter.wakes
        original_wait(waiter, timeout_s)
        record("unpark", 1 if waiter.wakes != wakes else 0 if waiter.quiet else 2)

    setattr(SocketWaiter, "wait", traced_wait)  # noqa: B010  (mypy: no method assignment)

    original_cycle = CompositeAgent.do_work

    def traced_cycle(composite: CompositeAgent) -> int:
        if not composite.role_name.startswith(_DRIVER_ROLE):
            return original_cycle(composite)
        cpu_ns = time.thread_time_ns()
        work = 0
        mask = 0
        for bit, agent in enumerate(composite.agents):
            done = agent.do_work()
            if done > 0:
                work += done
                mask |= 1 << bit
        record(f"{CYCLE_EVENT}{mask}", time.thread_time_ns() - cpu_ns)
        return work

    setattr(CompositeAgent, "do_work", traced_cycle)  # noqa: B010


Events = list[tuple[int, str, str, int]]
"""(t ns, event, thread, count) of one process, in time order."""
CpuMarks = dict[str, list[tuple[int, int]]]
"""Each thread's (t ns, thread CPU ns) at its events, of one process, in time order."""


def _load(directory: Path) -> dict[int, Events]:
    return {pid: events for pid, (events, _) in _load_with_cpu(directory).items()}


def _load_with_cpu(directory: Path) -> dict[int, tuple[Events, CpuMarks]]:
    out: dict[int, tuple[Events, CpuMarks]] = {}
    for path in sorted(directory.glob("*.hops")):
        events = []
        marks: CpuMarks = defaultdict(list)
        for line in path.read_text(encoding="utf-8").splitlines():
            t_ns, name, thread, count, cpu_ns = line.split(" ")
            events.append((int(t_ns), name, thread, int(count)))
            marks[thread].append((int(t_ns), int(cpu_ns)))
        for thread_marks in marks.values():
            thread_marks.sort()
        out[int(path.stem)] = (sorted(events), dict(marks))
    return out


def _roles(processes: dict[int, Events]) -> dict[str, Events]:
    """The processes by role: leader (took ``request`` and sent APPENDs), followers (``f1``,
    ``f2``: by the time of their first APPEND), producer (``settled``), consumer (``pulled``,
    or ``answer_read``: the bench's puller)."""
    roles: dict[str, Events] = {}
    followers = []
    producers = []
    for events in processes.values():
        names = {name for _, name, _, _ in events}
        if "r_sent" in names:
            roles["leader"] = events
        elif "f_append" in names:
            first = next(t for t, name, _, _ in events if name == "f_append")
            followers.append((first, events))
        elif "settled" in names:
            producers.append(events)
        elif "pulled" in names or "answer_read" in names:
            roles["consumer"] = events  # a consumer, or the bench's puller (answers read)
    for index, (_, events) in enumerate(sorted(followers)):
        roles[f"f{index + 1}"] = events
    leader = roles.get("leader")
    if producers and leader:  # the group's producer that settled the most (its end-to-end)
        begin, end = leader[0][0], leader[-1][0]
        roles["producer"] = max(
            producers,
            key=lambda events: sum(
                1 for t, name, _, _ in events if name == "settled" and begin <= t <= end
            ),
        )
    elif producers:
        roles["producer"] = producers[-1]
    return roles


PATH: Final = (
    ("appended", "leader", "send_end", ""),
    ("agent rung", "leader", "unpark", "appended"),
    ("APPENDs offered", "leader", "r_sent", "appended"),
    ("first datagrams sent", "leader", "snd", "APPENDs offered"),
    ("leader fsync start", "leader", "fsync0", "APPENDs offered"),
    ("leader fsync end", "leader", "fsync1", "leader fsync start"),
    ("f1 received", "f1", "rcv", "first datagrams sent"),
    ("f1 appended", "f1", "f_append", "first datagrams sent"),
    ("f1 fsync start", "f1", "fsync0", "f1 appended"),
    ("f1 fsync end", "f1", "fsync1", "f1 fsync start"),
    ("f1 ACK offered", "f1", "f_ack", "f1 fsync end"),
    ("f1 ACK sent", "f1", "snd", "f1 ACK offered"),
    ("f2 received", "f2", "rcv", "first datagrams sent"),
    ("f2 appended", "f2", "f_append", "first datagrams sent"),
    ("f2 fsync start", "f2", "fsync0", "f2 appended"),
    ("f2 fsync end", "f2", "fsync1", "f2 fsync start"),
    ("f2 ACK offered", "f2", "f_ack", "f2 fsync end"),
    ("f2 ACK sent", "f2", "snd", "f2 ACK offered"),
    ("first ACK taken", "leader", "r_ack", "first datagrams sent"),
    ("high watermark moved", "leader", "hw", "first ACK taken"),
    ("sends' answers offered, producer rung", "leader", "ring", "first ACK taken"),
    ("sends settled", "producer", "settled", "sends' answers offered, producer rung"),
    ("next request offered", "producer", "offer", "sends settled"),
    ("held pull released", "leader", "stored", "first ACK taken"),
    ("consumer read the pull's answer", "consumer", "answer_read", "held pull released"),
)
"""The steps of a commit round (label, role, event, the step it follows): each step is the
first ``event`` of ``role`` after the step it follows (``""``: the round's start, the
leader's ``send_start``)."""


def rounds(directory: Path) -> list[dict[str, int]]:
    """Each commit round's steps (:data:`PATH`), in ns since its start: the rounds from one
    ``send_start`` of the leader to the next (a step not found before the next round's start
    is left out of that round)."""
    roles = _roles(_load(directory))
    leader = roles.get("leader")
    if leader is None:
        return []
    times: dict[tuple[str, str], list[int]] = defaultdict(list)
    for role, events in roles.items():
        for t, name, _, count in events:
            if name in ("pulled", "rcv", "snd") or count >= 0:
                times[(role, name)].append(t)
    starts = _round_starts(roles)
    out = []
    for start, end in itertools.pairwise(starts):
        at = {"": start}
        for label, role, name, after in PATH:
            since = at.get(after)
            if since is None:
                continue
            found = _first_after(times[(role, name)], since)
            if found is not None and found < end + 20_000_000:
                at[label] = found
        out.append({label: t - start for label, t in at.items() if label})
    return out


def durations(directory: Path) -> tuple[int, float, float, int]:
    """The rounds of :func:`rounds` by length: (how many, median ms, mean ms, how many took
    over :data:`SLOW_ROUND_MS`): the mean against the median tells the stalls."""
    starts = _round_starts(_roles(_load(directory)))
    lengths = [(b - a) / 1e6 for a, b in itertools.pairwise(starts)]
    if not lengths:
        return 0, 0.0, 0.0, 0
    slow = sum(1 for length in lengths if length > SLOW_ROUND_MS)
    return len(lengths), statistics.median(lengths), statistics.mean(lengths), slow


def last_fsyncs(found: list[dict[str, int]]) -> dict[str, int]:
    """Of the rounds of :func:`rounds` whose high watermark moved after :data:`SLOW_ROUND_MS`,
    how many had each member's fsync end last (``leader``, ``f1``, ``f2``; ``none`` when no
    fsync of the round was traced): the one the ack rule waited for."""
    labels = {"leader": "leader fsync end", "f1": "f1 fsync end", "f2": "f2 fsync end"}
    counts = dict.fromkeys((*labels, "none"), 0)
    for one in found:
        if one.get("high watermark moved", 0) <= SLOW_ROUND_MS * 1_000_000:
            continue
        ends = {member: one[label] for member, label in labels.items() if label in one}
        counts[max(ends, key=ends.__getitem__) if ends else "none"] += 1
    return counts


def cpu_per_round(directory: Path) -> tuple[int, dict[str, dict[str, float]]]:
    """The traced threads' CPU a round, by role and thread (us): each thread's CPU between its
    first and its last event within the rounds of :func:`rounds` (its ``thread_time_ns`` at
    them), over their count; with how many rounds. Threads that record no event (the
    producer's retry timer, gRPC's) are not seen."""
    loaded = _load_with_cpu(directory)
    roles = _roles({pid: events for pid, (events, _) in loaded.items()})
    starts = _round_starts(roles)
    if len(starts) < 2:
        return 0, {}
    begin, end, count = starts[0], starts[-1], len(starts) - 1
    by_events = {id(events): marks for events, marks in loaded.values()}
    out: dict[str, dict[str, float]] = {}
    for role, events in roles.items():
        threads = {}
        for thread, marks in by_events[id(events)].items():
            inside = [cpu for t, cpu in marks if begin <= t <= end]
            if len(inside) > 1:
                threads[thread] = (inside[-1] - inside[0]) / 1e3 / count
        out[role] = threads
    return count, out


def cycles_per_round(directory: Path) -> tuple[int, dict[str, dict[str, float]]]:
    """The driver threads' duty cycles and parks a round, by member (``leader``, ``f1``,
    ``f2``), within the rounds of :func:`rounds`: ``cycles``, ``empty`` (no agent worked),
    ``parks``, those begun while the sender had bytes not sent (``unsent``), the parks a wake,
    a socket or the timeout ended (``by_wake``, ``by_socket``, ``by_timeout``), the cycles' own CPU a round (``cycle_cpu_us``), and the median CPU of an
    empty and of a working cycle (``empty_us``, ``working_us``); with how many rounds."""
    roles = _roles(_load(directory))
    starts = _round_starts(roles)
    if len(starts) < 2:
        return 0, {}
    begin, end, count = starts[0], starts[-1], len(starts) - 1
    unparked = {1: "by_wake", 2: "by_socket", 0: "by_timeout"}
    out: dict[str, dict[str, float]] = {}
    for role, events in roles.items():
        if role not in ("leader", "f1", "f2"):
            continue
        totals = dict.fromkeys(("cycles", "empty", "parks", "unsent", *unparked.values()), 0.0)
        empty_ns: list[int] = []
        working_ns: list[int] = []
        for t, name, _, value in events:
            if not begin <= t < end:
                continue
            if name.startswith(CYCLE_EVENT):
                totals["cycles"] += 1
                if name == f"{CYCLE_EVENT}0":
                    totals["empty"] += 1
                    empty_ns.append(value)
                else:
                    working_ns.append(value)
            elif name == "park":
                totals["parks"] += 1
            elif name == "unsent":
                totals["unsent"] += 1
            elif name == "unpark":
                totals[unparked.get(value, "by_socket")] += 1
        found = {key: value / count for key, value in totals.items()}
        found["cycle_cpu_us"] = (sum(empty_ns) + sum(working_ns)) / 1e3 / count
        found["empty_us"] = statistics.median(empty_ns) / 1e3 if empty_ns else 0.0
        found["working_us"] = statistics.median(working_ns) / 1e3 if working_ns else 0.0
        out[role] = found
    return count, out


def _round_starts(roles: dict[str, Events]) -> list[int]:
    """The leader's ``send_start`` times within its producer's run (from the round of its
    first settled sends to its last: the suite's other phases left out), or all of them
    without one."""
    starts = [t for t, name, _, _ in roles.get("leader", []) if name == "send_start"]
    settled = [t for t, name, _, _ in roles.get("producer", []) if name == "settled"]
    if not settled:
        return starts
    first = max(0, bisect.bisect_right(starts, settled[0]) - 1)
    return [t for t in starts[first:] if t <= settled[-1]]


def _first_after(times: list[int], at: int) -> int | None:
    index = bisect.bisect_left(times, at)
    return times[index] if index < len(times) else None


def timeline(found: list[dict[str, int]]) -> list[tuple[str, float, float, int]]:
    """Each step of :data:`PATH`: (label, median us since the round's start, median us since
    the step it follows, rounds that saw it)."""
    rows = []
    for label, _, _, after in PATH:
        at = [one[label] for one in found if label in one]
        own = [one[label] - one.get(after, 0) for one in found if label in one]
        if at:
            rows.append((label, statistics.median(at) / 1e3, statistics.median(own) / 1e3, len(at)))
    return rows


def one_round(directory: Path, index: int) -> list[tuple[float, str, str, str, int]]:
    """Every event of round ``index`` (as :func:`rounds` counts them): (us since its start,
    role, thread, event, count), in time order."""
    roles = _roles(_load(directory))
    starts = [t for t, name, _, _ in roles.get("leader", []) if name == "send_start"]
    if index + 1 >= len(starts):
        return []
    start, end = starts[index], starts[index + 1]
    rows = [
        ((t - start) / 1e3, role, thread, name, count)
        for role, events in roles.items()
        for t, name, thread, count in events
        if start <= t < end
    ]
    return sorted(rows)


def main(argv: list[str]) -> None:
    """Print the median round's timeline of the traces in ``argv[0]`` (or, given ``argv[1]``,
    every event of that round)."""
    if len(argv) > 1:
        for at_us, role, thread, name, count in one_round(Path(argv[0]), int(argv[1])):
            print(f"{at_us:8.0f} us  {role:8} {thread[:24]:24} {name} {count}")
        return
    found = rounds(Path(argv[0]))
    count, median_ms, mean_ms, slow = durations(Path(argv[0]))
    print(
        f"rounds: {count}, median {median_ms:.2f} ms, mean {mean_ms:.2f} ms, "
        f"over {SLOW_ROUND_MS} ms: {slow}"
    )
    held = ", ".join(f"{member} {n}" for member, n in last_fsyncs(found).items())
    print(f"high watermark after {SLOW_ROUND_MS} ms, the last fsync: {held}")
    for label, at_us, own_us, seen in timeline(found):
        print(f"{at_us:8.0f} us {own_us:+7.0f}  {label} ({seen})")
    counted, cpu = cpu_per_round(Path(argv[0]))
    print(f"CPU a round (us, the traced threads, over {counted} rounds):")
    for role, threads in cpu.items():
        named = ", ".join(f"{name} {us:.0f}" for name, us in sorted(threads.items()))
        print(f"  {role}: {sum(threads.values()):.0f} ({named})")
    counted, cycles = cycles_per_round(Path(argv[0]))
    print(f"the driver thread's duty cycles a round (over {counted} rounds):")
    for role, member in cycles.items():
        print(
            f"  {role}: {member['cycles']:.2f} cycles ({member['empty']:.2f} empty), "
            f"{member['parks']:.2f} parks ({member['unsent']:.2f} with bytes unsent; ended by a "
            f"wake {member['by_wake']:.2f}, a socket {member['by_socket']:.2f}, the timeout "
            f"{member['by_timeout']:.2f}); cycles' CPU {member['cycle_cpu_us']:.0f} us, a cycle's "
            f"median: empty {member['empty_us']:.0f} us, working {member['working_us']:.0f} us"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
