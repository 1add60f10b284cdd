"""The wheel: built from this checkout, then installed (not editable) in a fresh virtual environment.

The build runs on a copy of the repository in a temporary directory (the links in ``aeromq/``
kept as links), so it leaves no ``build/`` in the checkout and takes nothing stale from one. The
wheel must hold one top-level package, ``aeromq``, with every module, stub, ``py.typed`` marker,
``.proto`` file and web console static file of the checkout's ``aeromq/``, the built ``_atomic`` extension and the
LICENSE, and nothing of ``bench/`` or ``tests/``.

The environment gets proto-plus first: its import name is ``proto``, a top-level name aeromq's
schema package must not take. Installing the wheel (its dependencies from the package index)
must leave ``import proto`` working, the user API must import from the installed files, the
generated protobuf code must load on the protobuf that pip chose, the ``aeromq`` command must run,
and uninstalling aeromq must leave every file of proto-plus in place.

Every step is a subprocess with a timeout, run from an empty directory outside the checkout,
without PYTHONPATH and with ``python -I``, so only what is installed can be imported; a failing
step fails the test with its output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

REPO_ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
VERSION: str = PROJECT["version"]
DIST_INFO = f"aeromq-{VERSION}.dist-info"
# Not copied for the build: version control, caches, build output and built extensions.
COPY_IGNORE = shutil.ignore_patterns(
    ".git",
    ".cache",
    ".venv",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "*.so",
    ".*_cache",
    ".hypothesis",
)
# The files of the package that the wheel must carry, by suffix (the console's static files too).
PACKAGE_SUFFIXES = (".py", ".pyi", ".proto", ".typed", ".js", ".css", ".LICENSE", ".md")
OUTPUT_TAIL_CHARS = 6000


def _environment() -> dict[str, str]:
    """This process's environment without what would put other code on a subprocess's path."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV")
    }
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", PYTHONNOUSERSITE="1")
    return env


def _run(args: Sequence[str | Path], cwd: Path, timeout_s: float) -> str:
    """Run ``args``; its stdout, or the test fails with the command's output."""
    command = [str(a) for a in args]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=_environment(),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr
        pytest.fail(_report(command, f"timed out after {timeout_s}s", out, err), pytrace=False)
    if done.returncode != 0:
        pytest.fail(
            _report(command, f"exit_code={done.returncode}", done.stdout, done.stderr),
            pytrace=False,
        )
    return done.stdout


def _report(command: list[str], outcome: str, stdout: str | None, stderr: str | None) -> str:
    return (
        f"command failed: {outcome} command={' '.join(command)}\n"
        f"--- stdout (tail) ---\n{(stdout or '')[-OUTPUT_TAIL_CHARS:]}\n"
        f"--- stderr (tail) ---\n{(stderr or '')[-OUTPUT_TAIL_CHARS:]}"
    )


def _package_files() -> list[str]:
    """The checkout's ``aeromq/`` files that belong in the wheel, as wheel paths (links followed)."""
    found = []
    for directory, subdirectories, files in os.walk(REPO_ROOT / "aeromq", followlinks=True):
        subdirectories[:] = [d for d in subdirectories if d != "__pycache__"]
        relative = Path(directory).relative_to(REPO_ROOT)
        found += [(relative / f).as_posix() for f in files if f.endswith(PACKAGE_SUFFIXES)]
    return sorted(found)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built by ``pip wheel --no-deps`` from a copy of the repository."""
    root = tmp_path_factory.mktemp("wheel-build")
    source = root / "aeromq-src"
    shutil.copytree(REPO_ROOT, source, symlinks=True, ignore=COPY_IGNORE)
    wheelhouse = root / "wheelhouse"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", wheelhouse, source],
        cwd=root,
        timeout_s=600,
    )
    built = sorted(wheelhouse.glob("aeromq-*.whl"))
    assert len(built) == 1, built
    return built[0]


def test_should_hold_one_package_with_its_stubs_markers_schema_and_extension(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        license_text = archive.read(f"{DIST_INFO}/licenses/LICENSE")
        metadata = archive.read(f"{DIST_INFO}/METADATA").decode()
    assert {name.split("/", 1)[0] for name in names} == {"aeromq", DIST_INFO}
    assert [n for n in names if {"bench", "tests"} & set(n.split("/"))] == []
    missing = [name for name in _package_files() if name not in names]
    assert missing == [], f"package files not in the wheel: {missing}"
    subpackages = {n.rsplit("/", 1)[0] for n in names if n.count("/") == 2 and "__init__" in n}
    assert subpackages >= {"aeromq/broker", "aeromq/proto", "aeromq/transport"}, subpackages
    assert sorted(p for p in {"aeromq", *subpackages} if f"{p}/py.typed" not in names) == []
    assert len([n for n in names if n.startswith("aeromq/proto/") and n.endswith(".proto")]) >= 6
    extension = f"aeromq/transport/concurrent/_atomic{sysconfig.get_config_var('EXT_SUFFIX')}"
    assert extension in names
    assert license_text == (REPO_ROOT / "LICENSE").read_bytes()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()


PROBE_INSTALLED = """
import importlib.metadata, pathlib, sys
import proto
proto.Message
import aeromq
from aeromq import DefaultLitePullConsumer, Message, MessageQueue, Producer
from aeromq.proto import admin_pb2_grpc, common_pb2
from aeromq.transport.concurrent import _atomic
assert pathlib.Path(aeromq.__file__).is_relative_to(sys.prefix), aeromq.__file__
assert common_pb2.TopicConfig.FromString(common_pb2.TopicConfig(topic_name="t").SerializeToString()).topic_name == "t"
print("protobuf", importlib.metadata.version("protobuf"), "grpcio", importlib.metadata.version("grpcio"))
"""

PROBE_UNINSTALLED = """
import importlib.metadata, importlib.util
import proto
proto.Message
assert importlib.util.find_spec("aeromq") is None
missing = [str(f) for f in importlib.metadata.files("proto-plus") if not f.locate().exists()]
assert missing == [], missing
"""


def test_should_install_beside_proto_plus_run_and_uninstall_cleanly(
    wheel: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"  # the working directory of every step: empty, outside the checkout
    run_dir.mkdir()
    venv = tmp_path / "venv"
    # no pip of its own (bootstrapping one took seconds): this pip installs into it (--python)
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=run_dir, timeout_s=180)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-I", "-m", "pip", "--python", python]

    _run([*pip, "install", "proto-plus"], cwd=run_dir, timeout_s=600)
    _run([python, "-I", "-c", "import proto; proto.Message"], cwd=run_dir, timeout_s=120)
    _run([*pip, "install", wheel], cwd=run_dir, timeout_s=600)
    print(_run([python, "-I", "-c", PROBE_INSTALLED], cwd=run_dir, timeout_s=120))  # the versions
    assert _run([venv / "bin" / "aeromq", "--version"], cwd=run_dir, timeout_s=120).strip() == (
        VERSION
    )

    _run([*pip, "uninstall", "--yes", "aeromq"], cwd=run_dir, timeout_s=120)
    _run([python, "-I", "-c", PROBE_UNINSTALLED], cwd=run_dir, timeout_s=120)
