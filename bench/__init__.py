"""aeromq's benchmarks: ``python -m bench SUITE [--quick] [--json]``.

Each suite is a module ``bench.suites.<name>`` with ``run(quick: bool) -> Iterator[Result |
Target]``. Baselines are measured in the same run and named ``baseline:<what>``; targets compare
a measured figure with the goal an issue sets and say whether it was met.
"""

from bench._harness import Result, Target, latency_summary, main, suites

__all__ = ["Result", "Target", "latency_summary", "main", "suites"]
