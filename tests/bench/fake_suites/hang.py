from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

from bench import Result, Target


def run(quick: bool) -> Iterator[Result | Target]:
    yield Result("before the hang", msgs_per_s=10.0)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    with open(os.environ["BENCH_TEST_CHILD_PID"], "w") as pid_file:
        pid_file.write(str(child.pid))
    time.sleep(300)  # stopped by `all` at its --suite-timeout, child and all
    yield Result("never", msgs_per_s=1.0)
