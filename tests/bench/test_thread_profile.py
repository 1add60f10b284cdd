"""The per-thread profile (``bench/_thread_profile.py``): every thread of a process profiled,
the window from a mark to the dump, each role's threads summed back."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from bench._thread_profile import PROFILE_DIR_ENV, PROFILE_ROLE_ENV, calls, label, load, top

_SITE = Path(__file__).resolve().parents[2] / "bench" / "_profile_site"

_SCRIPT = textwrap.dedent(
    """
    import threading
    from bench import _thread_profile

    def work(n):
        return sum(range(n))

    for _ in range(5):
        work(10)  # before the mark: not counted
    _thread_profile.mark()
    for _ in range(7):
        work(10)
    thread = threading.Thread(target=lambda: [work(10) for _ in range(3)])
    thread.start()
    thread.join()
    _thread_profile.dump()
    """
)


def test_should_count_every_thread_from_the_mark_on(tmp_path: Path) -> None:
    root = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        PROFILE_DIR_ENV: str(tmp_path),
        PROFILE_ROLE_ENV: "worker",
        "PYTHONPATH": os.pathsep.join([str(_SITE), root, os.environ.get("PYTHONPATH", "")]),
    }
    subprocess.run([sys.executable, "-c", _SCRIPT], env=env, check=True, timeout=60)
    stats = load(tmp_path)["worker"]
    work = [entry for func, entry in stats.items() if func[2] == "work"]
    assert [entry[1] for entry in work] == [10]  # 7 on the main thread, 3 on the other
    total, python = calls(stats)
    assert total > python >= 10  # sum() and range() are built-ins
    assert any(label(func).endswith("(work)") for func, _ in top(stats, 50))
