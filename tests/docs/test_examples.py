"""Every code block of the documentation runs (or parses) in CI, against a real broker process
started with ``aeromq.broker.testing``: see ``tests/docs/_blocks.py`` for what each language
means."""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq._cli import COMMANDS, parser_of
from aeromq.broker.config import BrokerConfig
from aeromq.broker.testing import ServerProcess, start_broker_process

from ._blocks import LANGUAGES, REPO, Block, all_blocks, commands

BLOCKS = all_blocks()
RUN_TIMEOUT_S = 120.0
"""Generous: a block starts consumers and producers on a loaded 2-core machine."""


def _of(language: str) -> list[Block]:
    return [block for block in BLOCKS if block.language == language]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker_process(
        tmp_path_factory.mktemp("docs-broker") / "data",
        "broker-a",
        ["--flush-interval", "50ms", "--ingress-udp-endpoint", "none", "--log-level", "WARNING"],
    )
    yield process
    process.stop()


def _env(broker: ServerProcess) -> dict[str, str]:
    return {
        **os.environ,
        "AEROMQ_ENDPOINTS": broker.grpc_address,
        "AEROMQ_ROCKETMQ_ENDPOINT": broker.ready["rocketmq"],
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }


def test_should_know_the_language_of_every_block() -> None:
    unknown = [block.id for block in BLOCKS if block.language not in LANGUAGES]
    assert unknown == [], f"blocks of no known language: {unknown}"
    assert _of("python") and _of("shell") and _of("bash")


def _skip_unless_installed(block: Block) -> None:
    # Looked up, not imported: the official RocketMQ client cannot share this process with
    # aeromq's copy of its schema (tests/rocketmq5/conftest.py).
    for module in block.requires:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{block.id} needs {module} (an optional extra)")


@pytest.mark.parametrize("block", _of("python"), ids=lambda b: b.id)
def test_should_run_the_python_block(block: Block, broker: ServerProcess, tmp_path: Path) -> None:
    _skip_unless_installed(block)
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=_env(broker),
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"{block.id}\n{done.stdout}\n{done.stderr}"


@pytest.mark.parametrize("block", _of("shell"), ids=lambda b: b.id)
def test_should_run_the_shell_block(block: Block, broker: ServerProcess, tmp_path: Path) -> None:
    _skip_unless_installed(block)
    prelude = f'set -euo pipefail\naeromq() {{ "{sys.executable}" -m aeromq "$@"; }}\n'
    done = subprocess.run(
        ["bash", "-c", prelude + block.code],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        env=_env(broker),
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, f"{block.id}\n{done.stdout}\n{done.stderr}"


def _parse(argv: list[str]) -> None:
    name, rest = argv[0], argv[1:]
    assert name in COMMANDS, f"no such command: aeromq {name}"
    parser = parser_of(name)
    try:
        parser.parse_args(rest)
    except argparse.ArgumentError as exc:  # admin's parser raises instead of exiting
        raise AssertionError(f"aeromq {' '.join(argv)}: {exc}") from exc
    except SystemExit as exc:
        assert exc.code == 0, f"aeromq {' '.join(argv)}: rejected by its parser"


@pytest.mark.parametrize("block", _of("bash") + _of("shell"), ids=lambda b: b.id)
def test_should_parse_every_aeromq_command_of_the_block(block: Block) -> None:
    for argv in commands(block.code):
        if argv and argv[0] not in ("--help", "--version"):
            _parse(argv)


@pytest.mark.parametrize("block", _of("toml"), ids=lambda b: b.id)
def test_should_load_the_toml_block_as_a_broker_config(block: Block) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as file:
        file.write(block.code)
    try:
        BrokerConfig.load([], environ={}, config_file=Path(file.name))
    finally:
        os.unlink(file.name)
