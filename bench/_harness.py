"""The benchmark runner: suite discovery, result records, the table and the JSON lines.

``python -m bench SUITE`` runs one suite in this process and prints each case as the suite
yields it; ``python -m bench all`` runs every suite, each in a child process with a time limit
(:mod:`bench._all`), and draws the charts (:mod:`bench._charts`).

Every case runs through :func:`attempt` (or :func:`case_rows`), bounded in time with its
workers watched (:mod:`bench._bounded`). A case a suite could not measure (it raised, a worker
of it died, or it overran its time limit) is a :meth:`Result.failed`, in the JSON
``{"name": ..., "failed": "reason"}`` and in the table ``FAILED: reason``, and the suite goes on
to its next case; a target computed from it is reported not measured. A suite that raises ends
with one failed row ``suite NAME`` and exit status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pkgutil
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, TypeVar, TypeVarTuple

from aeromq.common import missing_native_modules
from bench._bounded import FAIL_CASE_ENV, CaseFailed, bounded, isolated

__all__ = [
    "CASE_TIMEOUT_S",
    "MEASURES",
    "CaseFailed",
    "JsonRecord",
    "Result",
    "Target",
    "attempt",
    "best_rate",
    "case_rows",
    "figure",
    "generated_rows",
    "isolated",
    "latency_result",
    "latency_summary",
    "main",
    "note",
    "ratio_of",
    "record_run",
    "started",
    "suites",
]

_T = TypeVar("_T")
_Ts = TypeVarTuple("_Ts")

JsonRecord: TypeAlias = dict[str, Any]
"""One JSON line of a suite (a :class:`Result` or a :class:`Target`), or the run's summary:
values of any JSON shape (a case's ``extra`` is its own), read back by key."""

CASE_TIMEOUT_S = 300.0
"""A case's time limit when its suite names none."""


MEASURES = ("msgs_per_s", "MB_per_s", "p50_us", "p99_us", "p999_us", "ns_per_op")
"""A :class:`Result`'s measured fields, as named in its JSON."""


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
    extra: JsonRecord = field(default_factory=dict)

    @classmethod
    def failed(cls, name: str, reason: str) -> Result:
        """A case that could not be measured (it raised, a worker of it died, or it overran its
        time limit and its workers were stopped): ``{"name": ..., "failed": reason}``."""
        return cls(name, extra={"failed": reason})

    @property
    def error(self) -> str | None:
        """Why the case failed; None when it was measured."""
        reason = self.extra.get("failed")
        return None if reason is None else str(reason)

    def as_json(self) -> JsonRecord:
        out: JsonRecord = {"name": self.name}
        for key in MEASURES:
            value = getattr(self, key)
            if value is not None:
                out[key] = round(value, 3)
        out.update(self.extra)
        return out


@dataclass
class Target:
    """A goal from an issue (``measured >= goal``, or ``<=`` when ``lower_is_better``);
    ``measured`` is None when a case it is computed from failed: not measured."""

    name: str
    measured: float | None
    goal: float
    unit: str = ""
    lower_is_better: bool = False

    @property
    def met(self) -> bool:
        if self.measured is None:
            return False
        if self.lower_is_better:
            return self.measured <= self.goal
        return self.measured >= self.goal

    def as_json(self) -> JsonRecord:
        if self.measured is None:
            return {
                "name": f"target:{self.name}",
                "not_measured": "a case it is computed from failed",
                "goal": self.goal,
                "unit": self.unit,
                "lower_is_better": self.lower_is_better,
            }
        return {
            "name": f"target:{self.name}",
            "measured": round(self.measured, 3),
            "goal": self.goal,
            "unit": self.unit,
            "met": self.met,
            "lower_is_better": self.lower_is_better,
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


def attempt(
    failures: list[str],
    what: str,
    measure: Callable[[*_Ts], _T],
    *args: *_Ts,
    timeout_s: float = CASE_TIMEOUT_S,
    on_stop: Callable[[], None] | None = None,
) -> _T | None:
    """``measure(*args)`` bounded in time (:func:`bench._bounded.bounded`), or None when it
    raises, a worker of it dies or it overruns ``timeout_s``: the reason is appended to
    ``failures``, so the suite can go on and yield the case as failed (``Result.failed(name,
    reason)``). Either way one line on standard error says at once what was measured
    (``what: measured in 2.1 s``) or why not."""
    started = time.monotonic()
    try:
        value = bounded(what, measure, *args, timeout_s=timeout_s, on_stop=on_stop)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, CaseFailed) else f"{type(exc).__name__}: {exc}"
        failures.append(reason)
        note(f"{what}: FAILED after {time.monotonic() - started:.1f} s: {reason}")
        return None
    shown = f"{value:,.0f}" if isinstance(value, int | float) else "done"
    note(f"{what}: {shown} in {time.monotonic() - started:.1f} s")
    return value


def case_rows(
    names: str | Sequence[str],
    measure: Callable[[*_Ts], Result | Iterable[Result]],
    *args: *_Ts,
    timeout_s: float = CASE_TIMEOUT_S,
    on_stop: Callable[[], None] | None = None,
) -> list[Result]:
    """The rows of one case (``measure`` returns one :class:`Result` or several, ``names``
    says which), or each of ``names`` failed with the reason (see :func:`attempt`)."""
    names = [names] if isinstance(names, str) else list(names)
    failures: list[str] = []
    what = names[0] if len(names) == 1 else f"{names[0]} (and {len(names) - 1} more)"
    rows = attempt(failures, what, measure, *args, timeout_s=timeout_s, on_stop=on_stop)
    if rows is None:
        return [Result.failed(name, failures[0]) for name in names]
    return [rows] if isinstance(rows, Result) else list(rows)


def generated_rows(
    name: str, rows: Iterator[Result], timeout_s: float = CASE_TIMEOUT_S
) -> Iterator[Result]:
    """The rows of a generator that measures a case per row, each ``next()`` bounded as
    :func:`attempt` bounds a case; when one fails, a failed row ``name`` ends them (the
    generator closed, so its ``finally`` stops what it started)."""
    while True:
        failures: list[str] = []
        row = attempt(failures, f"{name}: next row", next, rows, None, timeout_s=timeout_s)
        if failures:
            yield Result.failed(name, failures[0])
            close = getattr(rows, "close", None)  # a generator's: its finally runs
            with contextlib.suppress(ValueError):  # still running in a thread left behind
                if close is not None:
                    close()
            return
        if row is None:
            return
        yield row


def started(
    what: str,
    start: Callable[[*_Ts], _T],
    *args: *_Ts,
    cases: Sequence[str],
    timeout_s: float = CASE_TIMEOUT_S,
) -> tuple[_T | None, list[Result]]:
    """A server the suite's ``cases`` share (a broker, ``redis-server``), started bounded in
    time; or None and each of ``cases`` failed, not run, with why the server did not start."""
    failures: list[str] = []
    server = attempt(failures, what, start, *args, timeout_s=timeout_s)
    if server is not None:
        return server, []
    return None, [Result.failed(case, f"not run: {what} failed: {failures[0]}") for case in cases]


def figure(rows: dict[str, Result], name: str, key: str = "msgs_per_s") -> float | None:
    """A measured figure of row ``name`` (a field such as ``msgs_per_s``, or a key of its
    ``extra``), or None when the row is missing or failed: a target's input."""
    row = rows.get(name)
    if row is None or row.error is not None:
        return None
    value = getattr(row, key) if key in MEASURES else row.extra.get(key)
    return float(value) if isinstance(value, int | float) else None


def chosen(env: str, every: Iterable[str], default: Iterable[str] | None = None) -> tuple[str, ...]:
    """The names of ``every`` (cases, sides) that ``env`` lists, comma-separated; unset or empty:
    ``default`` (else all of ``every``). A name not in ``every`` is a ``ValueError``."""
    known = tuple(every)
    value = os.environ.get(env)
    if not value:
        return known if default is None else tuple(default)
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = set(names) - set(known)
    if unknown:
        raise ValueError(f"{env}: unknown {sorted(unknown)}; known: {', '.join(known)}")
    return names


def ratio_of(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either was not measured (or is 0)."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def record_run(
    runs: list[float],
    failures: dict[str, list[str]],
    case: str,
    measure: Callable[[*_Ts], float],
    *args: *_Ts,
    timeout_s: float = CASE_TIMEOUT_S,
) -> None:
    """One run of ``case``, bounded by ``timeout_s``: its rate appended to ``runs``, or its
    failure to ``failures``."""
    rate = attempt(failures.setdefault(case, []), case, measure, *args, timeout_s=timeout_s)
    if rate is not None:
        runs.append(rate)


def best_rate(case: str, runs: list[float], size: int, failures: dict[str, list[str]]) -> Result:
    """The best of the runs (every run and failure in the JSON), or the case failed."""
    if not runs:
        return Result.failed(case, "; ".join(failures.get(case, [])) or "no run")
    rate = max(runs)
    extra: JsonRecord = {"runs_msgs_per_s": [round(r) for r in runs]}
    if failures.get(case):
        extra["failed_runs"] = failures[case]
    return Result(case, msgs_per_s=rate, MB_per_s=rate * size / 1e6, extra=extra)


def latency_result(
    case: str, summary: dict[str, float] | None, samples: int, failures: dict[str, list[str]]
) -> Result:
    """A round-trip case from its :func:`latency_summary`, or the case failed."""
    if summary is None:
        return Result.failed(case, "; ".join(failures.get(case, [])) or "no run")
    return Result(
        case,
        p50_us=summary["p50_us"],
        p99_us=summary["p99_us"],
        p999_us=summary["p999_us"],
        extra={"samples": samples},
    )


def note(text: str) -> None:
    """A line on standard error now (a run measured, a case failed), the tables untouched."""
    print(text, file=sys.stderr, flush=True)


def suites(package: str = "bench.suites") -> list[str]:
    """The suites' names: the public modules of ``package``."""
    path = importlib.import_module(package).__path__
    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_"))


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


HEADER = (
    f"{'case':<44} {'msgs/s':>13} {'MB/s':>9} {'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9} "
    f"{'ns/op':>8}"
)


def format_row(record: JsonRecord) -> str:
    """One JSON record (``Result.as_json`` or ``Target.as_json``) as a line of the table."""
    name = str(record["name"])
    if "failed" in record:
        return f"{name:<44} FAILED: {record['failed']}"
    if "not_measured" in record:
        cmp = "<=" if record.get("lower_is_better") else ">="
        return (
            f"target {name.removeprefix('target:')}: not measured (goal {cmp} {record['goal']}): "
            f"{record['not_measured']}"
        )
    if name.startswith("target:") and "goal" in record:
        cmp = "<=" if record.get("lower_is_better") else ">="
        verdict = "met" if record["met"] else "NOT MET"
        return (
            f"target {name.removeprefix('target:')}: {_fmt(record['measured'])} "
            f"{record['unit']} (goal {cmp} {record['goal']}) {verdict}"
        )
    cells = [record.get(k) for k in ("msgs_per_s", "MB_per_s", "p50_us", "p99_us", "p999_us")]
    return (
        f"{name:<44} {_fmt(cells[0]):>13} {_fmt(cells[1]):>9} {_fmt(cells[2]):>9} "
        f"{_fmt(cells[3]):>9} {_fmt(cells[4]):>9} {_fmt(record.get('ns_per_op')):>8}"
    )


def _print_table(rows: Iterator[Result | Target], suite: str) -> bool:
    """Print each row as it comes; True if the suite itself failed."""
    print(HEADER)
    print("-" * len(HEADER), flush=True)
    failed = False
    for row in rows:
        print(format_row(row.as_json()), flush=True)
        failed |= isinstance(row, Result) and row.name == f"suite {suite}"
    return failed


def _guarded(suite: str, rows: Iterable[Result | Target]) -> Iterator[Result | Target]:
    """The suite's rows, then, if it raised, one failed row ``suite NAME`` naming the error (the
    traceback on standard error)."""
    try:
        yield from rows
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        yield Result.failed(f"suite {suite}", f"{type(exc).__name__}: {exc}")


_EPILOG = f"""\
Each case runs with a time limit; a case that raises, whose worker dies or that overruns its
limit is reported FAILED (in JSON: {{"name": ..., "failed": "reason"}}), its workers are stopped,
and the suite goes on to its next case. A target computed from it is reported not measured.

environment:
  {FAIL_CASE_ENV}=PATTERN[=HOW]
      make every case whose name matches the shell pattern PATTERN fail, to test the failure
      handling; HOW is raise (default: the case raises RuntimeError), exit (a worker of the
      case exits with status 3) or hang[:SECONDS] (a worker of the case never ends; SECONDS
      replaces the case's time limit). E.g. {FAIL_CASE_ENV}='aeromq:pull=hang:5'
  AEROMQ_BENCH_BASELINES=LABEL[,LABEL...]
      what --baselines sets: only these baselines are measured, the others reported skipped
  AEROMQ_BENCH_CPU_AFFINITY='ROLE=CPULIST ...'
      the latency suite pins each system's server and its producer, consumer and relay roles
      to these CPUs, e.g. 'server=1 producer=1 consumer=0' (bench/_affinity.py)

examples:
  python -m bench broker --quick
  python -m bench all --quick --out /tmp/bench
  {FAIL_CASE_ENV}='atomic:put_int64=exit' python -m bench atomic --quick
"""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run a benchmark suite (a table, or JSON lines), or all of them: each in a "
        "child process with a time limit, with JSON lines, a summary and PNG charts.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", help=f"the suite to run ({', '.join(suites())}), or all")
    parser.add_argument("--quick", action="store_true", help="a short run (smoke test)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line and case")
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="with all: where the JSON lines, summary.json and the PNG charts go "
        "(default: bench-results/<UTC time>)",
    )
    parser.add_argument(
        "--suite-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with all: a suite still running after this is stopped and reported as failed "
        "(default: 300 with --quick, else 1800)",
    )
    parser.add_argument(
        "--only",
        default=None,
        metavar="SUITE[,SUITE...]",
        help="with all: only these suites (default: every suite)",
    )
    parser.add_argument(
        "--baselines",
        default=None,
        metavar="LABEL[,LABEL...]",
        help="measure only these baselines (e.g. redis-streams; none for none); the others "
        "are reported skipped (default: every baseline installed)",
    )
    parser.add_argument(
        "--package",
        default="bench.suites",
        help="the package the suites come from (default: bench.suites)",
    )
    args = parser.parse_args(argv)
    if args.baselines is not None:  # read by bench._baselines, in this process and its children
        os.environ["AEROMQ_BENCH_BASELINES"] = args.baselines
    if args.suite not in [*suites(args.package), "all"]:
        parser.error(f"no such suite: {args.suite!r} (one of {', '.join(suites(args.package))})")
    if args.suite == "all":
        from bench._all import run_all

        return run_all(args)
    module: _Suite = importlib.import_module(f"{args.package}.{args.suite}")
    missing = missing_native_modules()
    if missing:  # the figures would be the Python fallbacks', not aeromq's
        print(f"WARNING: native helpers not built: {', '.join(missing)}", file=sys.stderr)
    failed = False
    rows = _guarded(args.suite, module.run(args.quick))
    if args.json:
        for row in rows:
            failed |= isinstance(row, Result) and row.name == f"suite {args.suite}"
            print(json.dumps(row.as_json()), flush=True)
    else:
        failed = _print_table(rows, args.suite)
    return 1 if failed else 0
