"""Finding CPython 3.12 and keeping the pyaeron environment (``aeromq.transport.testing.py312``), and
the harness's skip-or-fail rule. Only the last tests need a CPython 3.12 on the machine."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from aeromq.transport.testing import py312
from aeromq.transport.testing.py312 import (
    INTERPRETER_ENV,
    REQUIRE_INTEROP_ENV,
    VENV_ENV,
    default_venv_dir,
    ensure_pyaeron_venv,
    find_python312,
    interop_required,
    peer_environment,
)

from ._harness import pyaeron_python_or_skip


def _bare_environment(tmp_path: Path, **values: str) -> dict[str, str]:
    """PATH holds only ``tmp_path/bin`` (no python3.12, no pyenv) and nothing names one."""
    (tmp_path / "bin").mkdir(exist_ok=True)
    return {"PATH": str(tmp_path / "bin"), "HOME": str(tmp_path), **values}


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + text + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_should_say_in_one_line_why_no_interpreter_was_found(tmp_path: Path) -> None:
    lookup = find_python312(_bare_environment(tmp_path))
    assert lookup.interpreter is None
    assert lookup.reason.startswith("no CPython 3.12 found")
    assert INTERPRETER_ENV in lookup.reason and "\n" not in lookup.reason


def test_should_pass_over_a_python3_12_on_path_that_does_not_run(tmp_path: Path) -> None:
    # pyenv puts a python3.12 shim on PATH that fails while 3.12 is not selected.
    _script(
        tmp_path / "bin" / "python3.12", "echo 'pyenv: python3.12: command not found' >&2\nexit 127"
    )
    lookup = find_python312(_bare_environment(tmp_path))
    assert lookup.interpreter is None


def test_should_stop_at_a_named_interpreter_that_is_not_3_12(tmp_path: Path) -> None:
    other = _script(tmp_path / "bin" / "python3", "echo 'cpython 3.11.7'")
    lookup = find_python312(_bare_environment(tmp_path, **{INTERPRETER_ENV: str(other)}))
    assert lookup.interpreter is None
    assert lookup.reason == (
        f"{INTERPRETER_ENV}={str(other)!r} is not a usable CPython 3.12: it is 'cpython 3.11.7'"
    )


def test_should_name_the_platform_pyaeron_has_no_wheel_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(py312.platform, "machine", lambda: "aarch64")
    lookup = find_python312(_bare_environment(tmp_path))
    assert lookup.interpreter is None
    assert lookup.reason.endswith("this machine is Linux aarch64")


def test_should_skip_without_an_interpreter_and_fail_when_interop_is_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(INTERPRETER_ENV, str(tmp_path / "missing" / "python3.12"))
    monkeypatch.delenv(REQUIRE_INTEROP_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"not run: {INTERPRETER_ENV}="):
        pyaeron_python_or_skip()
    monkeypatch.setenv(REQUIRE_INTEROP_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_INTEROP_ENV}=1"):
        pyaeron_python_or_skip()


def test_should_require_interop_only_when_the_variable_is_1() -> None:
    assert interop_required({REQUIRE_INTEROP_ENV: "1"})
    assert not interop_required({REQUIRE_INTEROP_ENV: "0"})
    assert not interop_required({})


def test_should_keep_the_environment_in_the_checkout_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    checkout = Path(py312.__file__).resolve().parents[2]
    assert default_venv_dir({}) == checkout / ".cache" / "interop-venv"
    assert default_venv_dir({VENV_ENV: str(tmp_path / "venv")}) == tmp_path / "venv"


def test_should_keep_the_311_package_paths_away_from_a_peer() -> None:
    env = peer_environment({"PATH": "/bin", "PYTHONPATH": "/x", "VIRTUAL_ENV": "/v", "A": "1"})
    assert env == {"PATH": "/bin", "A": "1"}


# ---------------------------------------------------------------------------------------------
# With the machine's CPython 3.12


@pytest.fixture
def interpreter() -> py312.Interpreter:
    lookup = find_python312()
    if lookup.interpreter is None:
        pytest.skip(f"needs a CPython 3.12: {lookup.reason}")
    return lookup.interpreter


def test_should_find_the_newest_3_12_under_pyenv_root(
    interpreter: py312.Interpreter, tmp_path: Path
) -> None:
    for version in ("3.12.1", "3.12.10", "3.12.9"):
        link = tmp_path / "pyenv" / "versions" / version / "bin" / "python3.12"
        link.parent.mkdir(parents=True)
        link.symlink_to(interpreter.path)
    lookup = find_python312(_bare_environment(tmp_path, PYENV_ROOT=str(tmp_path / "pyenv")))
    assert lookup.interpreter is not None
    assert lookup.interpreter.source == "pyenv"
    assert "/3.12.10/" in lookup.interpreter.path
    assert lookup.interpreter.version.startswith("3.12.")


def test_should_reuse_a_ready_environment_without_rebuilding_it(
    interpreter: py312.Interpreter, pyaeron_python: Path
) -> None:
    venv_dir = pyaeron_python.parent.parent
    marker = venv_dir / "aeromq-venv.json"
    if str(interpreter.path) not in marker.read_text():
        pytest.skip("the cached environment was made with another interpreter")
    modified_ns = marker.stat().st_mtime_ns
    started = time.monotonic()
    assert ensure_pyaeron_venv(interpreter, venv_dir) == pyaeron_python
    assert time.monotonic() - started < 5
    assert marker.stat().st_mtime_ns == modified_ns
    assert os.access(pyaeron_python, os.X_OK)
