"""The reader's malloc tuning, in fresh processes: with it, memory freed by a read is reused by
the next without page faults; without it (the opt-out), glibc gives it back and faults it in
again."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

from aeromq.pipeline import _malloc

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)

# Four answers of about 3 MB alive at once, then freed: the churn of a read, five rounds after
# a first one; prints the page faults of those rounds.
_CHURN = """
import random, sys
from aeromq.pipeline._reader_sessions import reader_sessions
from aeromq.pipeline import _malloc
reader_sessions()  # what a read takes first
def faults():
    with open("/proc/self/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[7])
random.seed(1)
def churn():
    answers = [b"x" * (3_000_000 + random.randrange(100_000)) for _ in range(4)]
    del answers
churn()
before = faults()
for _ in range(5):
    churn()
print(faults() - before, _malloc.retain_freed_memory())
"""


def _churn_faults(opt_out: bool) -> tuple[int, bool]:
    env = dict(os.environ)
    env.pop(_malloc.OPT_OUT_ENV, None)
    if opt_out:
        env[_malloc.OPT_OUT_ENV] = "0"
    done = subprocess.run(
        [sys.executable, "-c", _CHURN], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    faults, tuned = done.stdout.split()
    return int(faults), tuned == "True"


def test_should_reuse_freed_memory_without_page_faults_once_a_read_began() -> None:
    faults, tuned = _churn_faults(opt_out=False)
    assert tuned
    assert faults < 200  # 5 rounds of 12 MB: about 15,000 pages if each came fresh


def test_should_leave_malloc_alone_when_opted_out() -> None:
    faults, tuned = _churn_faults(opt_out=True)
    assert not tuned
    assert faults > 5_000  # glibc gave the memory back and faulted it in again
