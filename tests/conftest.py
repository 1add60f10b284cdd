"""Suite-wide fixtures: a per-test temporary directory in /dev/shm where it exists; the
hypothesis profile (no wall-clock deadline per example); small store files for the brokers the
tests start."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from aeromq.broker.config import ENV_PREFIX

# No per-example wall-clock limits for property tests: hypothesis's default 200 ms deadline and
# its too_slow health check fail (or report "Flaky") when a loaded machine stalls one example.
# A test's own @settings still wins for the fields it names.
settings.register_profile("aeromq", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("aeromq")

# Broker processes started by the tests keep small store files. A broker allocates its segments
# and index files in full when it creates them (posix_fallocate: a full disk is an error then,
# never a SIGBUS later), and RocketMQ's defaults (1 GiB commit log segments, a 420 MB index file)
# took ~20 GB of disk over one run of the suite. The environment ranks below a test's own
# arguments and config file (see broker.config), so a test that sets one of these still wins.
for _key, _value in (
    ("COMMIT_LOG_SEGMENT_BYTES", "64MiB"),
    ("INDEX_SLOTS", "50000"),
    ("INDEX_ENTRIES", "400000"),
):
    os.environ.setdefault(ENV_PREFIX + _key, _value)


@pytest.fixture
def shm_dir() -> Iterator[Path]:
    """A fresh directory on shared memory (tmpfs) when the machine has one, removed afterwards."""
    root = "/dev/shm" if os.path.isdir("/dev/shm") else None
    path = Path(tempfile.mkdtemp(prefix="aeromq-test-", dir=root))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


# The Spark connector's tests share one SparkSession (10-20 s to start) and one broker: they run
# on one worker of pytest-xdist, not on each.
_SPARK_DIR = "tests/pipeline/"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test runs on the pytest-xdist worker of its module (the Spark tests on one worker
    together), and tests marked ``long`` (minutes of real processes, or a whole benchmark suite
    whose behaviour a shorter test already covers) run only when selected, ``-m long``: the
    default run stays within CI's budget."""
    _group_by_module(items)
    if "long" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="long: select with -m long")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def _group_by_module(items: list[pytest.Item]) -> None:
    """An ``xdist_group`` for every test without one: its module's path, or ``spark`` for the
    Spark connector's. Under ``--dist loadgroup`` (the suite's default) a group runs on one
    worker, so a module's fixtures are made once and its tests keep their order."""
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        module = item.nodeid.split("::", 1)[0]  # tests/<dir>/test_x.py; xdist adds "@<group>"
        spark = module.startswith(_SPARK_DIR)  # to the id: the short name, not the path
        item.add_marker(pytest.mark.xdist_group("spark" if spark else Path(module).stem))
