"""The Python that runs the Spark Connect tests' client, and the client's run.

pyspark's Connect client (``aeromq[spark-connect]``: pandas, grpcio-status and a protobuf of
6.33.5 or later, which pyspark 4.3's generated code checks) does not install beside the test
and dev extras, which hold protobuf at 4 (``docs/dependencies.md``). So the client runs in a
process of its own (``_cluster_driver.py``) under ``AEROMQ_SPARK_CONNECT_PYTHON`` (an
environment of its own, ``docs/spark-cluster.md``), or under this interpreter when it has the
client; the tests that need it skip, saying why, when neither does. The server's Python workers
run this interpreter, as the executors of the other tests do."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PYTHON_ENV = "AEROMQ_SPARK_CONNECT_PYTHON"
_CLIENT_CHECK = "import pandas, grpc_status, pyspark.sql.connect.proto"
_DRIVER_TIMEOUT_S = 600


@functools.cache
def connect_python() -> tuple[str | None, str]:
    """(a Python with the Connect client, or None; why not)."""
    python = os.environ.get(PYTHON_ENV, sys.executable)
    done = subprocess.run(
        [python, "-c", _CLIENT_CHECK], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return None, f"no Spark Connect client in {python} (set {PYTHON_ENV}): {last}"
    return python, ""


def run_driver(
    master: str,
    driver_host: str,
    endpoints: str,
    source: str,
    sink: str,
    root: Path,
    environment: dict[str, str] | None = None,
    python: str = sys.executable,
) -> dict[str, Any]:
    """Run ``_cluster_driver.py`` under ``python``; its JSON line (asserts it succeeded)."""
    done = subprocess.run(
        [python, "-m", "tests.pipeline._cluster_driver", master, driver_host, endpoints, source,
         sink, str(root / "checkpoint")],
        env=environment, capture_output=True, text=True, timeout=_DRIVER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
