from __future__ import annotations

from collections.abc import Iterator

from bench import Result, Target
from bench._harness import attempt


def _broken() -> float:
    raise RuntimeError("benchmark workers failed: exit codes [1]")


def run(quick: bool) -> Iterator[Result | Target]:
    yield Result("ours 64B", msgs_per_s=2_000_000.0 if quick else 1.0, MB_per_s=128.0)
    yield Result("baseline:theirs 64B", msgs_per_s=1_000.0)
    failures: list[str] = []
    rate = attempt(failures, "ours 1024B", _broken)
    assert rate is None
    yield Result.failed("ours 1024B", failures[0])
    yield Result("ours ping-pong", p50_us=3.0, p99_us=9.0, p999_us=20.0)
    yield Result("baseline:theirs ping-pong", p50_us=30.0, p99_us=90.0)
    yield Target("ours 64B", 2_000_000.0, 1_000_000, "msgs/s")
    yield Target("ours 1024B", None, 1_000_000, "msgs/s")  # its case failed
