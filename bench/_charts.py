"""PNG charts of a suite's rows (matplotlib, from the bench extra), one per measure.

A chart is a horizontal bar per case, each case followed by the baselines it is measured
against (``baseline:...`` rows, drawn in grey, measured in the same run): a baseline goes after
the case whose name ends in the most words like its own (``aeromq:pull`` and
``baseline:redis-streams:pull``); when one matches no case, the suite's own order is kept. Measures: ``msgs_per_s`` (longer is better), ``p50_us`` with ``p99_us``
(round trips; shorter is better) and ``ns_per_op`` (shorter is better). A wide range uses a
log scale. Failed cases and targets are not drawn (the JSON lines and the table have them).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.patches import Patch

    from bench._harness import JsonRecord

__all__ = ["MEASURES", "beside", "draw"]

MEASURES = {
    "msgs_per_s": "messages per second (longer is better)",
    "p50_us": "round trip p50 and p99, us (shorter is better)",
    "ns_per_op": "ns per operation (shorter is better)",
}
_OURS, _BASELINE, _TAIL = "#1f6fb4", "#9a9a9a", "#a9c8e8"


def beside(rows: list[JsonRecord]) -> list[JsonRecord]:
    """``rows`` with each baseline moved after the case it matches (see the module docstring)."""
    ours = [r for r in rows if not str(r["name"]).startswith("baseline:")]
    after: dict[int, list[JsonRecord]] = {i: [] for i in range(len(ours))}
    for row in rows:
        if row in ours:
            continue
        scores = [_common_tail(str(row["name"]), str(case["name"])) for case in ours]
        if not scores or max(scores) == 0:
            return rows
        after[scores.index(max(scores))].append(row)
    return [r for i, case in enumerate(ours) for r in (case, *after[i])]


def _common_tail(a: str, b: str) -> int:
    """How many trailing words (split at spaces and colons) ``a`` and ``b`` share."""
    words_a, words_b = a.replace(":", " ").split(), b.replace(":", " ").split()
    count = 0
    while count < min(len(words_a), len(words_b)) and words_a[-1 - count] == words_b[-1 - count]:
        count += 1
    return count


def _human(value: float) -> str:
    """``1670000`` -> ``1.67M``, ``45600`` -> ``45.6k``, ``3.75`` -> ``3.75``."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def _legend(measure: str) -> list[Patch]:
    from matplotlib.patches import Patch

    handles = [Patch(color=_OURS, label="aeromq"), Patch(color=_BASELINE, label="baseline")]
    if measure == "p50_us":
        handles.append(Patch(color=_TAIL, label="p99"))
    return handles


def draw(suite: str, rows: list[JsonRecord], out: Path, caption: str) -> list[Path]:
    """Write ``out/SUITE-MEASURE.png`` for each measure some row has; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for measure, label in MEASURES.items():
        cases = beside(
            [r for r in rows if isinstance(r.get(measure), int | float) and "failed" not in r]
        )
        if not cases:
            continue
        names = [str(r["name"]) for r in cases]
        values = [float(r[measure]) for r in cases]
        colors = [_BASELINE if n.startswith("baseline:") else _OURS for n in names]
        figure, axes = plt.subplots(figsize=(10, 0.32 * len(cases) + 1.4))
        positions = list(range(len(cases)))[::-1]
        if measure == "p50_us":
            tails = [float(r.get("p99_us") or v) for r, v in zip(cases, values, strict=True)]
            axes.barh(positions, tails, color=_TAIL, label="p99")
        axes.barh(positions, values, color=colors)
        axes.set_yticks(positions, names, fontsize=8)
        positive = [v for v in values if v > 0]
        if positive and max(positive) / min(positive) > 100:
            axes.set_xscale("log")
        for y, value in zip(positions, values, strict=True):
            axes.text(value, y, f" {_human(value)}", va="center", fontsize=7)
        axes.legend(handles=_legend(measure), fontsize=7, loc="lower right")
        axes.set_xlabel(label, fontsize=9)
        axes.set_title(f"python -m bench {suite}: {caption}", fontsize=9)
        axes.grid(axis="x", alpha=0.3)
        figure.tight_layout()
        path = out / f"{suite}-{measure}.png"
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append(path)
    return written
