from __future__ import annotations

from collections.abc import Iterator

from bench import Result, Target


def run(quick: bool) -> Iterator[Result | Target]:
    yield Result("before the error", msgs_per_s=10.0)
    raise RuntimeError("the suite broke")
