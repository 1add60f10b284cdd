"""``aeromq <command> --help``: every option of every command (and of every ``admin`` action) has
help text naming its default, every command has examples, and the shared vocabulary is the
same everywhere."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

import pytest

from aeromq._cli import COMMANDS, parser_of
from aeromq._cli.options import HelpFormatter
from aeromq.transport.util import format_duration_ms, format_size, parse_duration_ms
from tests.docs._blocks import commands

DATA_COMMANDS = ("admin", "consume", "produce", "quickstart", "stat")
"""The commands that print data, so take ``--json``."""
LONG_COMMANDS = ("admin offset reset", "consume", "produce", "quickstart")
"""The commands that can run long, so show progress (``--progress``, ``--progress-interval``)."""


def _parsers(name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(prog, parser) of a command and of each of its sub-commands, depth first."""
    stack = [parser_of(name)]
    while stack:
        parser = stack.pop()
        yield parser.prog, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())


def _leaves(name: str) -> list[tuple[str, argparse.ArgumentParser]]:
    return [
        (prog, parser)
        for prog, parser in _parsers(name)
        if not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
    ]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_should_give_every_option_help_text_with_its_default(name: str) -> None:
    for prog, parser in _parsers(name):
        formatter = HelpFormatter(prog)
        for action in parser._actions:
            if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
                continue  # hidden aliases; -h
            assert action.help, f"{prog} {action.option_strings or action.dest}: no help"
            shown = formatter._get_help_string(action)
            has_default = not (
                action.default in (None, argparse.SUPPRESS, [])
                or isinstance(action.default, bool)
                or isinstance(action, argparse._CountAction)
            )
            if action.option_strings and has_default:
                assert "default" in shown, f"{prog} {action.option_strings}: default not shown"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_should_show_examples_and_the_logging_options(name: str) -> None:
    top = parser_of(name)
    flags = {flag for action in top._actions for flag in action.option_strings}
    assert {"--log-level", "-v", "--log-format"} <= flags
    for prog, parser in _leaves(name):
        assert parser.epilog and "examples:" in parser.epilog, f"{prog}: no examples"
        for line in parser.epilog.splitlines()[1:]:
            if line.strip().startswith("aeromq"):
                assert line.split()[1] == name, f"{prog}: example of another command: {line}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_should_print_help_and_exit_0_from_the_real_command(name: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "aeromq", name, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: aeromq {name}")
    assert "examples:" in done.stdout


def test_should_use_one_vocabulary_for_the_address_the_aeron_dir_and_json() -> None:
    def flags(name: str) -> set[str]:
        return {
            flag
            for _, parser in _parsers(name)
            for action in parser._actions
            if action.help != argparse.SUPPRESS
            for flag in action.option_strings
        }

    for name in ("admin", "consume", "produce"):
        assert "--endpoints" in flags(name) and "--server" not in flags(name)
    for name in ("broker", "consume", "produce", "driver", "stat"):
        assert "--aeron-dir" in flags(name) and "--dir" not in flags(name)
    for name in DATA_COMMANDS:
        assert "--json" in flags(name)
    for name in sorted(COMMANDS):
        assert not [f for f in flags(name) if f.endswith(("-s", "-ms")) and f != "--timestamp-ms"]


@pytest.mark.parametrize(
    ("text", "expected_ms"),
    [
        ("500ms", 500.0),
        ("5s", 5000.0),
        ("0.5s", 500.0),
        ("2m", 120_000.0),
        ("250", 250.0),
        ("1h", 3_600_000.0),
        ("250us", 0.25),
        (" 3 S ", 3000.0),
    ],
)
def test_should_parse_durations_with_units(text: str, expected_ms: float) -> None:
    assert parse_duration_ms(text) == expected_ms


@pytest.mark.parametrize("text", ["", "5 parsecs", "-1s", "s", "1.s"])
def test_should_refuse_a_duration_without_a_number_and_a_known_unit(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration_ms(text)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_should_give_examples_that_its_parser_accepts(name: str) -> None:
    for prog, parser in _leaves(name):
        assert parser.epilog is not None
        for argv in commands(parser.epilog):
            assert argv[0] == name, f"{prog}: an example of another command: {argv}"
            try:
                parser_of(name).parse_args(argv[1:])
            except (SystemExit, argparse.ArgumentError) as exc:
                raise AssertionError(f"{prog}: example rejected: aeromq {' '.join(argv)}") from exc


@pytest.mark.parametrize("value_ms", [0, 1, 500, 1_500, 5_000, 120_000, 259_200_000, 30_000])
def test_should_show_a_duration_in_a_unit_it_parses_back(value_ms: int) -> None:
    assert parse_duration_ms(format_duration_ms(value_ms)) == value_ms


def test_should_show_sizes_in_their_largest_whole_binary_unit() -> None:
    assert [format_size(v) for v in (1 << 30, 4 << 20, 3 << 10, 1000, 0)] == [
        "1GiB",
        "4MiB",
        "3KiB",
        "1000",
        "0",
    ]


@pytest.mark.parametrize("prog", LONG_COMMANDS)
def test_should_offer_progress_on_every_long_command(prog: str) -> None:
    name = prog.split()[0]
    [parser] = [p for found, p in _parsers(name) if found == f"aeromq {prog}"]
    flags = {flag for action in parser._actions for flag in action.option_strings}
    assert {"--progress", "--progress-interval"} <= flags
    args = parser.parse_args(
        [*_required(prog), "--progress", "plain", "--progress-interval", "250ms"]
    )
    assert (args.progress, args.progress_interval) == ("plain", 250.0)


def _required(prog: str) -> list[str]:
    """The least a command's parser accepts."""
    return {
        "admin offset reset": ["group", "topic", "--earliest"],
        "consume": ["--topic", "t"],
        "produce": ["--topic", "t"],
        "quickstart": [],
    }[prog]
