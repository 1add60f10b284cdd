"""Suite-wide fixtures: a per-test temporary directory in /dev/shm where it exists; and the
hypothesis profile (no wall-clock deadline per example)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No per-example wall-clock limits for property tests: hypothesis's default 200 ms deadline and
# its too_slow health check fail (or report "Flaky") when a loaded machine stalls one example.
# A test's own @settings still wins for the fields it names.
settings.register_profile("aeromq", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aeromq")


@pytest.fixture
def shm_dir() -> Iterator[Path]:
    """A fresh directory on shared memory (tmpfs) when the machine has one, removed afterwards."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    path = Path(tempfile.mkdtemp(prefix="aeromq-test-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
