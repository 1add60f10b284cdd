"""``aeromq SUBCOMMAND ...``: the command line, one room above every library.

This module is the dispatcher: each subcommand is a ``main(argv) -> int`` in a module of this
package, imported only when it runs, so ``aeromq stat`` does not import the broker and a missing
optional dependency of one subcommand never breaks another. The package holds:

- the kit every command shares: :mod:`~aeromq._cli.options` (the option vocabulary and the
  logging setup), :mod:`~aeromq._cli.progress` (the progress line), :mod:`~aeromq._cli.serve`
  (the serve-until-signal loop of the servers);
- the commands: :mod:`~aeromq._cli.broker`, :mod:`~aeromq._cli.namesrv`,
  :mod:`~aeromq._cli.driver` (servers), :mod:`~aeromq._cli.cluster` (a broker group on one
  host, with ``cluster_runner``), :mod:`~aeromq._cli.produce`,
  :mod:`~aeromq._cli.consume`, :mod:`~aeromq._cli.admin` (with ``admin_commands`` and
  ``admin_target``), :mod:`~aeromq._cli.quickstart` (with ``quickstart_member`` and
  ``quickstart_view``) and :mod:`~aeromq._cli.stat`.

The commands import the libraries' public names only; no library imports this package
(``tests/meta/test_layering.py`` and ``tests/meta/test_cli_room.py`` check both).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

# name -> ("module:function", one-line help); each module also has ``build_parser()``, which the
# documentation's CLI reference and the help tests read (``parser_of``).
COMMANDS: dict[str, tuple[str, str]] = {
    "admin": ("aeromq._cli.admin:main", "manage topics, groups, offsets and clusters"),
    "consume": ("aeromq._cli.consume:main", "poll messages from a topic or queues and print them"),
    "broker": ("aeromq._cli.broker:main", "run a broker (embedded media driver by default)"),
    "cluster": (
        "aeromq._cli.cluster:main",
        "run a broker group on this host: etcd and three brokers (cluster up)",
    ),
    "namesrv": ("aeromq._cli.namesrv:main", "run a name server for multi-broker routes"),
    "produce": ("aeromq._cli.produce:main", "send messages from the command line"),
    "driver": ("aeromq._cli.driver:main", "run a standalone media driver"),
    "quickstart": (
        "aeromq._cli.quickstart:main",
        "run the main job on defaults: a live view, a summary",
    ),
    "stat": (
        "aeromq._cli.stat:main",
        "show a media driver's counters and error log (like AeronStat)",
    ),
}


def parser_of(name: str) -> argparse.ArgumentParser:
    """The argparse parser of subcommand ``name`` (its module's ``build_parser()``)."""
    module_name = COMMANDS[name][0].partition(":")[0]
    build: Callable[[], argparse.ArgumentParser] = importlib.import_module(module_name).build_parser
    return build()


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: aeromq SUBCOMMAND [ARGS...]", "", "subcommands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in sorted(COMMANDS.items())]
    lines += [
        "",
        "Every subcommand takes --help, --log-level LEVEL and -v. The broker address is",
        "--endpoints HOST:PORT (default $AEROMQ_ENDPOINTS, else 127.0.0.1:8081); durations take",
        "a unit (500ms, 5s); the media driver directory is --aeron-dir.",
        "",
        "examples:",
        "  aeromq quickstart",
        "  aeromq broker --data-dir /tmp/aeromq",
        "  aeromq cluster up --data-dir /tmp/aeromq-cluster",
        "  aeromq admin topic create orders --queues 4",
        '  aeromq produce --topic orders --body "hello"',
        "  aeromq consume --topic orders --from first --count 1",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``aeromq SUBCOMMAND ARGS`` (``argv`` without the program name; default
    ``sys.argv[1:]``); returns the exit code: the subcommand's, or 2 for an unknown one."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name == "--version":
        from aeromq import __version__

        print(__version__)
        return 0
    if name not in COMMANDS:
        print(f"aeromq: unknown subcommand {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _, function_name = COMMANDS[name][0].partition(":")
    entry: Callable[[list[str]], int] = getattr(importlib.import_module(module_name), function_name)
    return entry(rest)
