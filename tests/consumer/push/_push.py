"""Helpers of the push consumer tests: a real broker per module, consumers made fast for tests,
and a bounded wait."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.push import PushConsumerConfig

_names = itertools.count()


def unique(prefix: str) -> str:
    return f"{prefix}{next(_names)}"


def fast_pull(group: str, endpoint: str) -> LitePullConsumerConfig:
    return LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(endpoint,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        broker_suspend_max_time_ms=500,
        pull_time_delay_ms_when_pause=50,
        rebalance_retry_interval_ms=200,
    )


def push_config(group: str, endpoint: str, **changes: Any) -> PushConsumerConfig:
    values: dict[str, Any] = {
        "consumer_group": group,
        "endpoints": (endpoint,),
        "consume_from_where": ConsumeFromWhere.FIRST_OFFSET,
        "consume_thread_count": 4,
        "persist_interval_ms": 200,
        "pull": fast_pull(group, endpoint),
        **changes,
    }
    return PushConsumerConfig(**values)


def wait_until(check: Callable[[], bool], timeout_s: float = 20.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what or check}")
