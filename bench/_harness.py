"""The benchmark runner: suite discovery, result records, the table and the JSON lines."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Result", "Target", "latency_summary", "main", "suites"]


@dataclass
class Result:
    """One measured case. Rates are per second; latencies in microseconds."""

    name: str
    msgs_per_s: float | None = None
    MB_per_s: float | None = None  # the JSON field name the issues use
    p50_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    ns_per_op: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for key in ("msgs_per_s", "MB_per_s", "p50_us", "p99_us", "p999_us", "ns_per_op"):
            value = getattr(self, key)
            if value is not None:
                out[key] = round(value, 3)
        out.update(self.extra)
        return out


@dataclass
class Target:
    """A goal from an issue (``measured >= goal``, or ``<=`` when ``lower_is_better``)."""

    name: str
    measured: float
    goal: float
    unit: str = ""
    lower_is_better: bool = False

    @property
    def met(self) -> bool:
        if self.lower_is_better:
            return self.measured <= self.goal
        return self.measured >= self.goal

    def as_json(self) -> dict[str, Any]:
        return {
            "name": f"target:{self.name}",
            "measured": round(self.measured, 3),
            "goal": self.goal,
            "unit": self.unit,
            "met": self.met,
        }


class _Suite(Protocol):
    def run(self, quick: bool) -> Iterable[Result | Target]: ...


def latency_summary(samples_ns: Sequence[int]) -> dict[str, float]:
    """p50, p99 and p99.9 in microseconds of round-trip samples in nanoseconds."""
    ordered = sorted(samples_ns)
    if not ordered:
        return {}

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0

    return {"p50_us": pick(0.50), "p99_us": pick(0.99), "p999_us": pick(0.999)}


def suites() -> list[str]:
    import bench.suites as package

    return sorted(
        m.name for m in pkgutil.iter_modules(package.__path__) if not m.name.startswith("_")
    )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _print_table(rows: Iterator[Result | Target]) -> None:
    header = f"{'case':<44} {'msgs/s':>13} {'MB/s':>9} {'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9} {'ns/op':>8}"
    print(header)
    print("-" * len(header))
    for row in rows:
        if isinstance(row, Target):
            cmp = "<=" if row.lower_is_better else ">="
            verdict = "met" if row.met else "NOT MET"
            print(
                f"target {row.name}: {_fmt(row.measured)} {row.unit} (goal {cmp} {row.goal}) {verdict}"
            )
        else:
            print(
                f"{row.name:<44} {_fmt(row.msgs_per_s):>13} {_fmt(row.MB_per_s):>9} "
                f"{_fmt(row.p50_us):>9} {_fmt(row.p99_us):>9} {_fmt(row.p999_us):>9} "
                f"{_fmt(row.ns_per_op):>8}"
            )
        sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    names = suites()
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("suite", choices=names, help="the suite to run")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line and case")
    args = parser.parse_args(argv)
    module: _Suite = importlib.import_module(f"bench.suites.{args.suite}")
    rows = iter(module.run(args.quick))
    if args.json:
        for row in rows:
            print(json.dumps(row.as_json()), flush=True)
    else:
        _print_table(rows)
    return 0
