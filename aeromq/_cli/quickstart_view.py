"""What ``aeromq quickstart`` has seen and how it shows it (private to the quickstart).

:class:`RunState` folds the members' reports (:class:`~aeromq._cli.quickstart_member.Report`) and the
broker's offsets into counts: distinct messages, duplicates, lag per member, each member's
assignments over time (a rebalance shows as a new one). It renders a live view (``rich``: the
producer's line, then a row per member with its queues, count, rate and lag), a plain progress
line, and the summary as a table or one JSON object. No I/O but the printing it is asked for.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from aeromq._cli.progress import plain_line
from aeromq._cli.quickstart_member import Report

if TYPE_CHECKING:
    from rich.console import Group

    from aeromq.proto import admin_pb2

__all__ = ["MemberState", "RunState"]

_RATE_WINDOW_S = 1.0


@dataclass
class MemberState:
    """One member as its reports describe it."""

    name: str
    state: str = "joining"
    received: int = 0
    corrupt: int = 0
    queues: tuple[int, ...] = ()
    assignments: list[tuple[int, ...]] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)
    latencies_us: array[int] = field(default_factory=lambda: array("q"))
    cpu_s: float = 0.0

    rate_per_s: float = 0.0
    _mark: tuple[float, int] = (0.0, 0)  # (when, received) at the start of the rate's window

    def count(self, received: int, now: float) -> None:
        """A new count: the rate is over the last second or more (0 when nothing arrives)."""
        when, then = self._mark
        if not when:
            self._mark = (now, received)
        elif now - when >= _RATE_WINDOW_S:
            self.rate_per_s = (received - then) / (now - when)
            self._mark = (now, received)
        self.received = received


class RunState:
    """Counts of one quickstart run (Caller: the quickstart's loop, between send batches)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.sent = 0
        self.send_started = self.send_ended = self.last_distinct_at = 0.0
        self.producer_cpu_s = self.broker_cpu_s = 0.0  # over the run (see quickstart._Run)
        self.members: dict[str, MemberState] = {}
        self._seen = bytearray(total)
        self.distinct = 0
        self.duplicates = 0
        self.broker_offsets: dict[int, int] = {}  # queue id -> max offset
        self.committed: dict[int, int] = {}  # queue id -> the group's committed offset
        self.joined_midway_at: int | None = None  # messages sent when the third member joined
        self.stopping = False  # members leaving: the assignments are no longer the run's

    def add_member(self, name: str) -> None:
        self.members[name] = MemberState(name)

    def apply(self, report: Report) -> None:
        """Fold in one member's report."""
        member = self.members[report.member]
        member.state = "stopped" if report.final else "running"
        member.count(report.received, time.monotonic())
        member.corrupt = report.corrupt
        member.cpu_s = max(member.cpu_s, report.cpu_s)
        member.positions.update(report.positions)
        if not self.stopping:
            member.queues = report.queues
            if report.queues and (
                not member.assignments or member.assignments[-1] != report.queues
            ):
                member.assignments.append(report.queues)
        if report.latencies_us:
            member.latencies_us.frombytes(report.latencies_us)
        seqs = array("q")
        seqs.frombytes(report.seqs)
        seen = self._seen
        for seq in seqs:
            if 0 <= seq < self.total and not seen[seq]:
                seen[seq] = 1
                self.distinct += 1
                self.last_distinct_at = time.monotonic()
            else:
                self.duplicates += 1

    def set_offsets(self, progress: admin_pb2.GetConsumerProgressResponse) -> None:
        """The broker's view (a ``GetConsumerProgressResponse``)."""
        for queue in progress.queues:
            self.broker_offsets[queue.queue_id] = queue.broker_offset
            self.committed[queue.queue_id] = max(queue.consumer_offset, 0)

    def lag(self, member: MemberState) -> int:
        """Messages stored in the member's queues that it has not polled yet."""
        return sum(
            max(0, end - member.positions.get(q, self.committed.get(q, 0)))
            for q in member.queues
            for end in (self.broker_offsets.get(q, 0),)
        )

    def final_lag(self) -> int:
        """The group's lag by its committed offsets (0 when everything was committed)."""
        return sum(max(0, end - self.committed.get(q, 0)) for q, end in self.broker_offsets.items())

    def settled(self, queue_count: int) -> bool:
        """Is each of the topic's queues owned by exactly one member, as the members report?"""
        owned = sorted(q for m in self.members.values() for q in m.queues)
        return owned == list(range(queue_count))

    def rebalanced(self) -> bool:
        """Did the group's assignment change (a member given other queues, or a new member)?"""
        return any(len(m.assignments) > 1 for m in self.members.values()) or (
            sum(1 for m in self.members.values() if m.assignments) > 2
        )

    # -- showing it ----------------------------------------------------------------------------

    def producer_line(self, now: float) -> str:
        elapsed = (self.send_ended or now) - self.send_started if self.send_started else 0.0
        line = plain_line("sent", self.sent, self.total, elapsed, "msgs")
        if self.send_ended:
            line = line.rsplit(" eta ", 1)[0] + " (done)"
        return f"{line}; consumed {self.distinct:,} distinct, {self.duplicates:,} duplicates"

    def plain(self, now: float) -> str:
        members = ", ".join(
            f"{m.name} q{list(m.queues)} {m.received:,} lag {self.lag(m):,}"
            for m in self.members.values()
        )
        return f"quickstart: {self.producer_line(now)}; {members}"

    def live(self, now: float) -> Group:
        """A ``rich`` renderable: the producer's line and a table of the members."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        table = Table(title=None, expand=False)
        for header in ("member", "state", "queues", "consumed", "msgs/s", "lag"):
            table.add_column(header, justify="left" if header in ("member", "state") else "right")
        for m in self.members.values():
            table.add_row(
                m.name,
                m.state,
                ",".join(map(str, m.queues)) or "-",
                f"{m.received:,}",
                f"{m.rate_per_s:,.0f}",
                f"{self.lag(m):,}",
            )
        return Group(Text(self.producer_line(now)), table)

    def summary(self, broker_exit: int | None, ok: bool) -> dict[str, Any]:
        latencies = sorted(x for m in self.members.values() for x in m.latencies_us)
        send_s = max(self.send_ended - self.send_started, 1e-9)
        through_s = max(self.last_distinct_at - self.send_started, 1e-9)

        def pick(q: float) -> float | None:
            if not latencies:
                return None
            return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1000, 3)

        return {
            "sent": self.sent,
            "consumed": sum(m.received for m in self.members.values()),
            "distinct": self.distinct,
            "duplicates": self.duplicates,
            "corrupt": sum(m.corrupt for m in self.members.values()),
            "produce_msgs_per_s": round(self.sent / send_s),
            "end_to_end_msgs_per_s": round(self.distinct / through_s),
            "latency_p50_ms": pick(0.50),
            "latency_p99_ms": pick(0.99),
            "cpu_us_per_msg": {
                "producer": _per_message_us(self.producer_cpu_s, self.sent),
                "consumers": _per_message_us(
                    sum(m.cpu_s for m in self.members.values()), self.distinct
                ),
                "broker": _per_message_us(self.broker_cpu_s, self.sent),
            },
            "members": [
                {
                    "name": m.name,
                    "consumed": m.received,
                    "queues": list(m.queues),
                    "assignments": [list(a) for a in m.assignments],
                }
                for m in self.members.values()
            ],
            "third_joined_at_sent": self.joined_midway_at,
            "rebalanced": self.rebalanced(),
            "final_lag": self.final_lag(),
            "broker_exit": broker_exit,
            "ok": ok,
        }

    def print_summary(self, summary: dict[str, Any], stream: TextIO) -> None:
        """The summary as a table (``rich``), then the verdict line."""
        from rich.console import Console
        from rich.table import Table

        def ms(value: float | None) -> str:
            return "-" if value is None else f"{value:,.1f} ms"

        table = Table(title="quickstart summary", show_header=False)
        table.add_column("what")
        table.add_column("value", justify="right")
        rows = [
            ("sent", f"{summary['sent']:,}"),
            ("consumed (with duplicates)", f"{summary['consumed']:,}"),
            ("distinct", f"{summary['distinct']:,}"),
            ("duplicates", f"{summary['duplicates']:,}"),
            ("corrupt", f"{summary['corrupt']:,}"),
            ("produce throughput", f"{summary['produce_msgs_per_s']:,} msgs/s"),
            ("end-to-end throughput", f"{summary['end_to_end_msgs_per_s']:,} msgs/s"),
            (
                "latency p50 / p99",
                f"{ms(summary['latency_p50_ms'])} / {ms(summary['latency_p99_ms'])}",
            ),
            (
                "CPU per message: producer / consumers / broker",
                " / ".join(
                    "-" if us is None else f"{us:.1f} us"
                    for us in summary["cpu_us_per_msg"].values()
                ),
            ),
        ]
        for member in summary["members"]:
            history = " -> ".join(",".join(map(str, a)) or "-" for a in member["assignments"])
            rows.append(
                (f"{member['name']}: queues", f"{history or '-'} ({member['consumed']:,} msgs)")
            )
        rows += [
            ("rebalance", "seen" if summary["rebalanced"] else "not seen"),
            ("final lag", f"{summary['final_lag']:,}"),
            ("broker exit", str(summary["broker_exit"])),
        ]
        for what, value in rows:
            table.add_row(what, value)
        console = Console(file=stream, width=100)
        console.print(table)
        verdict = (
            "result: OK, every message stored, delivered and intact"
            if summary["ok"]
            else "result: FAILED"
        )
        console.print(verdict, highlight=False)


def _per_message_us(cpu_s: float, count: int) -> float | None:
    """CPU microseconds per message, rounded (None when nothing was measured)."""
    return round(cpu_s * 1e6 / count, 2) if count and cpu_s > 0 else None
