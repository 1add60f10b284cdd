"""Java for Spark: found and checked before a JVM starts, so a user with no Java (or an old one)
reads one clear error instead of a JVM launch failure.

PySpark 4 runs on Java 17 or 21. The runtime is ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is
set (as Spark's launcher does), else ``java`` on ``PATH``. Debian and Ubuntu:
``apt-get install -y openjdk-17-jre-headless``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aeromq.pipeline._errors import JavaNotFoundError, JavaVersionError

__all__ = ["MIN_JAVA_VERSION", "JavaRuntime", "check_java", "parse_java_version"]

MIN_JAVA_VERSION: Final = 17
"""The oldest Java release PySpark 4 runs on."""

_INSTALL_HINT: Final = "install Java 17 or 21 (Debian: apt-get install -y openjdk-17-jre-headless)"
_VERSION: Final = re.compile(r'version "(\d+)(?:\.(\d+))?[^"]*"')


@dataclass(frozen=True, slots=True)
class JavaRuntime:
    """The Java that Spark will start: its executable and major release."""

    path: str
    major: int


def parse_java_version(text: str) -> int | None:
    """The major release in ``java -version`` output (``"1.8.0_392"`` is 8, ``"17.0.15"`` 17)."""
    found = _VERSION.search(text)
    if found is None:
        return None
    major = int(found.group(1))
    if major == 1 and found.group(2) is not None:
        return int(found.group(2))
    return major


def _find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise JavaNotFoundError(f"JAVA_HOME has no bin/java: {_INSTALL_HINT}", java_home=home)
    found = shutil.which("java")
    if found is None:
        raise JavaNotFoundError(f"no java on PATH and JAVA_HOME is not set: {_INSTALL_HINT}")
    return found


def check_java(timeout_s: float = 30.0) -> JavaRuntime:
    """The Java runtime Spark will use; raises :class:`~pipeline.JavaNotFoundError` when there
    is none and :class:`~pipeline.JavaVersionError` when it is older than 17."""
    java = _find_java()
    try:
        done = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(f"java does not run: {_INSTALL_HINT}", java=java) from exc
    output = (done.stderr or "") + (done.stdout or "")
    major = parse_java_version(output)
    if done.returncode != 0 or major is None:
        raise JavaNotFoundError(
            f"java -version failed: {_INSTALL_HINT}",
            java=java,
            exit_code=done.returncode,
            output=output.strip()[:200],
        )
    if major < MIN_JAVA_VERSION:
        raise JavaVersionError(
            f"Java {major} is too old for Spark: {_INSTALL_HINT}", java=java, version=major
        )
    return JavaRuntime(java, major)
