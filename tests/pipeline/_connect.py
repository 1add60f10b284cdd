"""The Python that runs the Spark Connect tests' client, and the client's run.

pyspark's Connect client (``aeromq[spark-connect]``: pandas, grpcio-status and a protobuf of
6.33.5 or later, which pyspark 4.3's generated code checks) does not install beside the test
and dev extras, which hold protobuf at 4 (``docs/dependencies.md``). So the client runs in a
process of its own (``_cluster_driver.py``) under ``AEROMQ_SPARK_CONNECT_PYTHON`` (an
environment of its own, ``docs/spark-cluster.md``), or under this interpreter when it has the
client, or else under an environment these tests make once (:func:`connect_python`: a venv
beside this interpreter's packages, ``--system-site-packages``, with the extra's requirements
from ``pyproject.toml`` installed by pip, kept under ``~/.cache/aeromq``); the tests skip, saying
why, only when pip cannot make it (no package index). The server's Python workers run this
interpreter, as the executors of the other tests do. Making the environment takes a minute or
two, so the tests that need it are ``long``."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

PYTHON_ENV = "AEROMQ_SPARK_CONNECT_PYTHON"
_CLIENT_CHECK = "import pandas, grpc_status, pyspark.sql.connect.proto"
_DRIVER_TIMEOUT_S = 600
_INSTALL_TIMEOUT_S = 900
_REPO = Path(__file__).resolve().parents[2]
_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aeromq"


def _last_line(stderr: str) -> str:
    """What a failed command said last (its error, usually)."""
    return (stderr.strip().splitlines() or ["?"])[-1]


def _has_client(python: str) -> str:
    """Why ``python`` cannot run the Connect client ("" when it can)."""
    done = subprocess.run(
        [python, "-c", _CLIENT_CHECK], capture_output=True, text=True, timeout=60, check=False
    )
    if done.returncode == 0:
        return ""
    return _last_line(done.stderr)


def _extra_requirements() -> list[str]:
    """The ``spark-connect`` extra's requirements, as ``pyproject.toml`` lists them."""
    with (_REPO / "pyproject.toml").open("rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    requirements: list[str] = extras["spark-connect"]
    return requirements


def _made_environment() -> tuple[str | None, str]:
    """A venv with the client beside this interpreter's packages, made once per list of
    requirements (see module); (its Python, or None; why not)."""
    requirements = _extra_requirements()
    key = hashlib.sha256("\n".join([sys.executable, *requirements]).encode()).hexdigest()[:12]
    home = _CACHE / f"spark-connect-{key}"
    python = str(home / "bin" / "python")
    if (home / "bin" / "python").exists() and not _has_client(python):
        return python, ""
    steps = [
        [sys.executable, "-m", "venv", "--clear", "--system-site-packages", str(home)],
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         *requirements],
    ]  # fmt: skip
    for step in steps:
        done = subprocess.run(
            step, capture_output=True, text=True, timeout=_INSTALL_TIMEOUT_S, check=False
        )
        if done.returncode != 0:
            last = _last_line(done.stderr)
            return None, f"cannot make a Spark Connect client environment at {home}: {last}"
    why_not = _has_client(python)
    return (
        (None, f"the environment at {home} has no client: {why_not}") if why_not else (python, "")
    )


@functools.cache
def connect_python() -> tuple[str | None, str]:
    """(a Python with the Connect client, or None; why not): ``AEROMQ_SPARK_CONNECT_PYTHON``,
    this interpreter, or an environment made for it (see module)."""
    given = os.environ.get(PYTHON_ENV)
    if given:
        why_not = _has_client(given)
        return (None, f"no Spark Connect client in {given}: {why_not}") if why_not else (given, "")
    if not _has_client(sys.executable):
        return sys.executable, ""
    return _made_environment()


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
