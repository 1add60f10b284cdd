"""Suite-wide fixtures: a per-test temporary directory in /dev/shm where it exists; the
hypothesis profile (no wall-clock deadline per example); small store files for the brokers the
tests start; the ``long`` tests skipped unless selected; the pytest-xdist scheduler of the
suite's two workers; SIGINT taken back when the suite was started with it ignored."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from aeromq.broker.config import ENV_PREFIX

# A shell without job control (a script, `bash -c`) starts a background job, e.g.
# `bash .ci/run > log &`, with SIGINT ignored, and an ignored signal is inherited across exec: the
# commands the tests stop with SIGINT, as Ctrl-C would (`aeromq stat`'s refresh loop ends on
# KeyboardInterrupt), then ignore it and the tests time out. That made two `test_stat` tests fail
# in full runs started so, unless a Spark test (PySpark installs a SIGINT handler) had run in the
# same worker first. The suite runs as in the foreground, however it was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (minutes of real processes, or a whole benchmark suite whose
    behaviour a shorter test already covers) run only when selected, ``-m long``: the default
    run stays within CI's budget."""
    if "long" in (config.option.markexpr or ""):
        return
    skip = pytest.mark.skip(reason="long: select with -m long")
    for item in items:
        if item.get_closest_marker("long") is not None:
            item.add_marker(skip)


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """The suite's pytest-xdist scheduler (see :class:`_ModuleScheduling`)."""
    from xdist.scheduler import LoadScopeScheduling

    class _ModuleScheduling(LoadScopeScheduling):
        """Each module's tests on one worker (its fixtures made once, its tests in order), the
        Spark connector's all on one. xdist's own ``loadgroup`` marks a test's group by
        rewriting its node id, which pytest 9.2 no longer lets a plugin do: it split modules
        across the workers, each starting a SparkSession of its own."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            return "spark" if module.startswith(_SPARK_DIR) else module

    return _ModuleScheduling(config, log)
