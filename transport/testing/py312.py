"""A CPython 3.12 with ``pyaeron`` in a cached virtual environment, for the interop peers.

``pyaeron`` 0.1.0 (PyPI) embeds the Aeron 1.53 C client and C media driver and ships one wheel,
for CPython 3.12 on x86_64 Linux. The interoperability tests (``tests/interop/``) and the
benchmarks' pyaeron baselines (``bench/_pyaeron.py``) run small peer scripts with it, as
subprocesses of the main (3.11) process. This module is the one place that finds the
interpreter and keeps the environment.

Finding the interpreter (:func:`find_python312`), first match wins:

1. ``$AEROMQ_PY312``: a path or a command name. Set but unusable, it is reported as such and the
   search stops there (the setting says which interpreter to use);
2. ``python3.12`` on ``PATH``, run to check it (a pyenv shim is on ``PATH`` even when pyenv has
   not selected 3.12, and fails when run);
3. ``$(pyenv root)/versions/3.12*/bin/python3.12``, the newest patch release first.

The environment (:func:`ensure_pyaeron_venv`) lives in ``$AEROMQ_INTEROP_VENV``, else
``<checkout>/.cache/interop-venv`` (git-ignored), else ``~/.cache/aeromq/interop-venv`` for an
installed package. It is created once, under a file lock (parallel test runs and benchmarks
share it), with ``python3.12 -m venv`` and ``pip install pyaeron==0.1.0``; a marker file written
last records the interpreter and the requirement, so a half-made or outdated environment is
rebuilt. Later calls check the marker and import ``pyaeron`` once (about 0.1 s).

Peers run with :func:`peer_environment`: the caller's environment without the variables that
would leak the 3.11 interpreter's packages (``PYTHONPATH``, ``PYTHONHOME``, ``VIRTUAL_ENV``).
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aeromq.transport._errors import ConfigurationError

__all__ = [
    "INTERPRETER_ENV",
    "PYAERON_REQUIREMENT",
    "PYAERON_VERSION",
    "REQUIRE_INTEROP_ENV",
    "VENV_ENV",
    "Interpreter",
    "Lookup",
    "default_venv_dir",
    "ensure_pyaeron_venv",
    "find_python312",
    "interop_required",
    "peer_environment",
    "venv_python",
]

INTERPRETER_ENV: Final = "AEROMQ_PY312"
"""Names the CPython 3.12 to use (a path, or a command on PATH)."""
VENV_ENV: Final = "AEROMQ_INTEROP_VENV"
"""Overrides where the pyaeron environment is kept."""
REQUIRE_INTEROP_ENV: Final = "AEROMQ_REQUIRE_INTEROP"
"""``1``: an interop test that cannot run fails instead of skipping (set it in CI)."""
PYAERON_VERSION: Final = "0.1.0"
PYAERON_REQUIREMENT: Final = f"pyaeron=={PYAERON_VERSION}"

_MARKER: Final = "aeromq-venv.json"
_LOCK_SUFFIX: Final = ".lock"
_PROBE_TIMEOUT_S: Final = 20.0
_VENV_TIMEOUT_S: Final = 120.0
_PIP_TIMEOUT_S: Final = 300.0
_LOCK_TIMEOUT_S: Final = _VENV_TIMEOUT_S + _PIP_TIMEOUT_S + 60.0
_LEAKING_VARIABLES: Final = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
_PROBE: Final = "import platform, sys; print(sys.implementation.name, platform.python_version())"
_SUPPORTED_PLATFORM: Final = ("Linux", "x86_64")


@dataclass(frozen=True)
class Interpreter:
    """A CPython 3.12 found on this machine, and how it was found."""

    path: str
    version: str
    source: str
    """``AEROMQ_PY312``, ``PATH`` or ``pyenv``."""


@dataclass(frozen=True)
class Lookup:
    """The outcome of :func:`find_python312`: an interpreter, or why there is none."""

    interpreter: Interpreter | None
    reason: str
    """Where the interpreter came from, or one line saying why none is usable."""


def interop_required(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``AEROMQ_REQUIRE_INTEROP=1``: interop tests must run, never skip."""
    env = os.environ if environ is None else environ
    return env.get(REQUIRE_INTEROP_ENV, "").strip() == "1"


def find_python312(environ: Mapping[str, str] | None = None) -> Lookup:
    """Find a CPython 3.12 able to run pyaeron's wheel (see module for the order)."""
    env = os.environ if environ is None else environ
    system, machine = platform.system(), platform.machine()
    if (system, machine) != _SUPPORTED_PLATFORM:
        return Lookup(
            None,
            f"pyaeron {PYAERON_VERSION} ships only a CPython 3.12 x86_64 Linux wheel; "
            f"this machine is {system} {machine}",
        )
    named = env.get(INTERPRETER_ENV, "").strip()
    if named:
        path = shutil.which(named, path=env.get("PATH")) or named
        version, problem = _probe(path, env)
        if version is None:
            return Lookup(
                None, f"{INTERPRETER_ENV}={named!r} is not a usable CPython 3.12: {problem}"
            )
        return Lookup(Interpreter(path, version, INTERPRETER_ENV), f"{INTERPRETER_ENV}={path}")
    on_path = shutil.which("python3.12", path=env.get("PATH"))
    if on_path is not None:
        version, _ = _probe(on_path, env)
        if version is not None:
            return Lookup(Interpreter(on_path, version, "PATH"), f"python3.12 on PATH: {on_path}")
    for candidate in _pyenv_candidates(env):
        version, _ = _probe(candidate, env)
        if version is not None:
            return Lookup(Interpreter(candidate, version, "pyenv"), f"pyenv: {candidate}")
    return Lookup(
        None,
        f"no CPython 3.12 found (set {INTERPRETER_ENV}, put python3.12 on PATH, "
        "or install 3.12 with pyenv)",
    )


def _probe(path: str, env: Mapping[str, str]) -> tuple[str | None, str]:
    """Run ``path`` and return its version if it is CPython 3.12, else why not."""
    try:
        completed = subprocess.run(
            [path, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            env=peer_environment(env),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"cannot run it ({exc})"
    if completed.returncode != 0:
        last = (completed.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit status {completed.returncode}: {last}"
    fields = completed.stdout.split()
    if len(fields) != 2 or fields[0] != "cpython" or not fields[1].startswith("3.12."):
        return None, f"it is {completed.stdout.strip()!r}"
    return fields[1], ""


def _pyenv_candidates(env: Mapping[str, str]) -> list[str]:
    root = env.get("PYENV_ROOT", "").strip()
    if not root:
        pyenv = shutil.which("pyenv", path=env.get("PATH"))
        if pyenv is None:
            return []
        try:
            completed = subprocess.run(
                [pyenv, "root"],
                capture_output=True,
                text=True,
                timeout=_PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return []
        root = completed.stdout.strip()
        if completed.returncode != 0 or not root:
            return []
    found = glob.glob(os.path.join(root, "versions", "3.12*", "bin", "python3.12"))
    return sorted(found, key=_patch_level, reverse=True)


def _patch_level(path: str) -> tuple[int, ...]:
    match = re.search(r"3\.12\.(\d+)", path)
    return (int(match.group(1)),) if match else (-1,)


def peer_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a 3.12 subprocess: the caller's, minus the 3.11 package paths."""
    env = dict(os.environ if environ is None else environ)
    for name in _LEAKING_VARIABLES:
        env.pop(name, None)
    return env


def default_venv_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$AEROMQ_INTEROP_VENV``, else ``<checkout>/.cache/interop-venv``, else under ``~``."""
    env = os.environ if environ is None else environ
    named = env.get(VENV_ENV, "").strip()
    if named:
        return Path(named)
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        return checkout / ".cache" / "interop-venv"
    return Path.home() / ".cache" / "aeromq" / "interop-venv"


def venv_python(venv_dir: Path) -> Path:
    return venv_dir / "bin" / "python"


def ensure_pyaeron_venv(interpreter: Interpreter, venv_dir: Path | None = None) -> Path:
    """The environment's python, creating the environment first if needed (see module).

    Raises :class:`~transport.ConfigurationError` naming the step, the directory and the tail
    of the tool's output if ``venv`` or ``pip`` fails, or the lock is held too long.
    """
    directory = default_venv_dir() if venv_dir is None else venv_dir
    directory.parent.mkdir(parents=True, exist_ok=True)
    wanted = {"interpreter": interpreter.path, "requirement": PYAERON_REQUIREMENT}
    with _Lock(directory.with_name(directory.name + _LOCK_SUFFIX)):
        if _is_ready(directory, wanted):
            return venv_python(directory)
        shutil.rmtree(directory, ignore_errors=True)
        _run_step("venv", [interpreter.path, "-m", "venv", str(directory)], _VENV_TIMEOUT_S)
        _run_step(
            "pip install",
            [
                str(venv_python(directory)),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                PYAERON_REQUIREMENT,
            ],
            _PIP_TIMEOUT_S,
        )
        _run_step("import check", [str(venv_python(directory)), "-c", "import pyaeron"], 60.0)
        (directory / _MARKER).write_text(json.dumps(wanted, sort_keys=True) + "\n")
    return venv_python(directory)


def _is_ready(directory: Path, wanted: Mapping[str, str]) -> bool:
    try:
        recorded = json.loads((directory / _MARKER).read_text())
    except (OSError, ValueError):
        return False
    if recorded != dict(wanted) or not venv_python(directory).exists():
        return False
    try:
        completed = subprocess.run(
            [str(venv_python(directory)), "-c", "import pyaeron"],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            env=peer_environment(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return completed.returncode == 0


def _run_step(step: str, command: list[str], timeout_s: float) -> None:
    try:
        completed = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=peer_environment(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ConfigurationError(
            "cannot create the pyaeron environment", step=step, error=str(exc)
        ) from exc
    if completed.returncode != 0:
        output = (completed.stdout + completed.stderr).strip().splitlines()
        raise ConfigurationError(
            "cannot create the pyaeron environment",
            step=step,
            exit_status=completed.returncode,
            output=" | ".join(output[-5:]),
        )


class _Lock:
    """An exclusive ``flock`` on a file next to the environment, waited for in bounded time."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._fd = -1

    def __enter__(self) -> _Lock:
        self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + _LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self._fd)
                    raise ConfigurationError(
                        "the pyaeron environment is locked by another process for too long",
                        lock=str(self._path),
                        timeout_s=_LOCK_TIMEOUT_S,
                    ) from None
                time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)


if (
    __name__ == "__main__"
):  # pragma: no cover - a manual check: python -m aeromq.transport.testing.py312
    lookup = find_python312()
    print(lookup.reason)
    if lookup.interpreter is not None:
        started = time.monotonic()
        print(ensure_pyaeron_venv(lookup.interpreter), f"{time.monotonic() - started:.1f}s")
    sys.exit(0 if lookup.interpreter is not None else 1)
