"""Helpers for the media driver tests: small, fast contexts and bounded waits."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aeromq.transport.driver import MediaDriverContext, allow_termination

TERM_LENGTH = 64 * 1024
WINDOW = TERM_LENGTH // 2


def small_context(aeron_dir: Path, **overrides: Any) -> MediaDriverContext:
    """64 KiB terms and buffers, a 10 ms timer, short linger: tests run in milliseconds."""
    values: dict[str, Any] = {
        "aeron_dir": str(aeron_dir),
        "term_buffer_length": TERM_LENGTH,
        "ipc_term_buffer_length": TERM_LENGTH,
        "to_driver_buffer_length": 64 * 1024 + 768,
        "to_clients_buffer_length": 64 * 1024 + 128,
        "counters_values_buffer_length": 64 * 1024,
        "error_buffer_length": 64 * 1024,
        "timer_interval_ns": 10_000_000,
        "publication_linger_timeout_ns": 50_000_000,
        "client_liveness_timeout_ns": 10_000_000_000,
        "publication_unblock_timeout_ns": 15_000_000_000,
        "counter_free_to_reuse_timeout_ns": 0,
        "conductor_idle_strategy": "sleep-ms:1",
        "termination_validator": allow_termination,
    }
    values.update(overrides)
    return MediaDriverContext(**values)


def wait_until(predicate: Callable[[], object], timeout_s: float = 5.0, what: str = "") -> None:
    """Poll ``predicate`` every millisecond until true; fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s}s waiting for {what or predicate}")
        time.sleep(0.001)


def voluntary_switches(native_id: int) -> int:
    """How often this process's thread ``native_id`` has gone to sleep and been woken (its
    voluntary context switches, from ``/proc``)."""
    with open(f"/proc/self/task/{native_id}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc")


def free_udp_port() -> int:
    """A UDP port of 127.0.0.1 free a moment ago (bound and let go)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
