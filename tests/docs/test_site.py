"""The documentation site builds with no warning (``mkdocs build --strict``), and its generated
references cover every configuration field and every command-line option."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from aeromq._cli import COMMANDS, parser_of

from ._blocks import REPO

BUILD_TIMEOUT_S = 300.0
"""Generous: the build takes about 7 s alone, far more on a loaded 2-core machine."""


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", REPO / "docs/_gen/hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_should_build_the_site_with_no_warning(tmp_path: Path) -> None:
    pytest.importorskip(
        "mkdocs", reason="mkdocs comes with the test extra: pip install -e '.[test]'"
    )
    pytest.importorskip("material", reason="mkdocs-material comes with the test extra")
    pytest.importorskip("mkdocstrings", reason="mkdocstrings comes with the test extra")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cli_page = (tmp_path / "reference/cli/index.html").read_text()
    assert "aeromq admin topic update" in cli_page
    config_page = (tmp_path / "reference/configuration/index.html").read_text()
    assert "flush_interval_ms" in config_page
    assert "<!-- generated" not in cli_page + config_page


def test_should_describe_every_field_of_every_config_object() -> None:
    from aeromq.broker.config import BrokerConfig
    from aeromq.broker.namesrv.config import NameServerConfig
    from aeromq.consumer import LitePullConsumerConfig
    from aeromq.producer import ProducerConfig

    page = _hooks().configuration_reference()
    rows = {line.split("|")[1].strip(" `"): line for line in page.splitlines() if "| `" in line}
    for config in (BrokerConfig, NameServerConfig, ProducerConfig, LitePullConsumerConfig):
        for field in dataclasses.fields(config):
            assert field.name in rows, f"{config.__name__}.{field.name} missing"
            meaning = rows[field.name].rstrip(" |").rsplit("|", 1)[1].strip()
            assert meaning, f"{config.__name__}.{field.name} has no description"


def test_should_list_every_visible_option_of_every_command() -> None:
    page = _hooks().cli_reference()
    for name in sorted(COMMANDS):
        assert f"## `aeromq {name}`" in page
        stack = [parser_of(name)]
        while stack:
            parser = stack.pop()
            for action in parser._actions:
                if isinstance(action, argparse._SubParsersAction):
                    stack.extend(action.choices.values())
                elif action.help != argparse.SUPPRESS and not isinstance(
                    action, argparse._HelpAction
                ):
                    for flag in action.option_strings:
                        assert f"`{flag}" in page or f", {flag}" in page, f"{parser.prog} {flag}"


def test_should_turn_rest_roles_and_literal_blocks_into_markdown() -> None:
    spec = importlib.util.spec_from_file_location("docs_rst", REPO / "docs/_gen/rst_docstrings.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    pytest.importorskip("griffe", reason="griffe comes with mkdocstrings, in the test extra")
    spec.loader.exec_module(module)
    text = "Uses :class:`~producer.StaticRoute` and ``route``. For example::\n\n    a = 1\n\nEnd."
    assert module.rst_to_markdown(text) == (
        "Uses `StaticRoute` and `route`. For example:\n\n```python\na = 1\n```\n\nEnd."
    )
    assert module.rst_to_markdown(":func:`common.check_body`") == "`common.check_body`"
