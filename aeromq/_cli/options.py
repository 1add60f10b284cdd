"""The command-line vocabulary every ``aeromq`` subcommand shares, defined once.

Each subcommand builds its parser with :func:`command_parser`, so they all read alike:

=====================  ==========================================================================
``--endpoints``        the broker (or name server) gRPC address, ``HOST:PORT[,HOST:PORT...]``;
                       default ``$AEROMQ_ENDPOINTS``, else ``127.0.0.1:8081``
                       (:func:`add_endpoints`)
``--aeron-dir``        the media driver directory; default ``$AERON_DIR``, else
                       ``/dev/shm/aeron-<user>`` (:func:`add_aeron_dir`)
durations              a number with a unit: ``500ms``, ``5s``, ``2m``, ``250us``; a bare number is
                       milliseconds (:func:`duration_ms`)
``--log-level``/``-v`` logging level (``-v`` INFO, ``-vv`` DEBUG); every command
``--log-format``       ``text`` (default) or ``json``: one JSON object per log line on stderr
                       (:class:`~transport.util.JsonLogFormatter`); every command
``--json``             one JSON object per line instead of tables, on every command that prints
                       data (:func:`add_json`)
=====================  ==========================================================================

Every option has help text that names its default and unit (the formatter adds ``(default:
X)``), and every command's help ends with examples. Old spellings of a renamed option stay as
hidden aliases (:func:`add_alias`): accepted, not listed.

Callers: every command module of this package, through :func:`command_parser` and
:func:`setup_logging` first. The units themselves (:func:`~transport.util.parse_duration_ms`,
:func:`~transport.util.format_duration_ms`) are a library's, which the broker's configuration
uses too.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

from aeromq.transport.util import TEXT_LOG_FORMAT, JsonLogFormatter, parse_duration_ms

__all__ = [
    "DEFAULT_ENDPOINTS",
    "ENDPOINTS_ENV",
    "LOG_FORMATS",
    "HelpFormatter",
    "add_aeron_dir",
    "add_alias",
    "add_endpoints",
    "add_json",
    "add_logging",
    "command_parser",
    "duration_ms",
    "seconds_as_ms",
    "setup_logging",
    "split_endpoints",
]

ENDPOINTS_ENV: Final = "AEROMQ_ENDPOINTS"
"""The environment variable that sets ``--endpoints`` for every command."""
DEFAULT_ENDPOINTS: Final = "127.0.0.1:8081"
"""A broker on this host with its default gRPC port (``aeromq broker`` with no arguments)."""
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMATS: Final = ("text", "json")
"""``--log-format`` values: :data:`~transport.util.TEXT_LOG_FORMAT` or one JSON object a line."""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written; ``(default: X)`` after every option's help unless
    the help already says it or there is no default worth printing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default is None
            or default is argparse.SUPPRESS
            or isinstance(default, bool)
            or isinstance(action, argparse._CountAction)
            or default == []
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


def command_parser(
    prog: str,
    description: str,
    examples: Sequence[str],
    *,
    default_log_level: str = "WARNING",
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A parser with the shared formatter, ``examples`` as its epilog and the logging options."""
    epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser = argparse.ArgumentParser(
        prog=prog,
        description=description,
        epilog=epilog,
        formatter_class=HelpFormatter,
        allow_abbrev=False,  # `--time` of a subcommand is not an abbreviation of `--timeout`
        **kwargs,
    )
    add_logging(parser, default_log_level)
    return parser


def add_logging(parser: argparse.ArgumentParser, default: str = "WARNING") -> None:
    """``--log-level LEVEL``, ``-v`` (repeatable) and ``--log-format text|json`` on
    ``parser``."""
    parser.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=default,
        metavar="LEVEL",
        help=f"logging level, one of {', '.join(LOG_LEVELS)}",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="more logging: -v is INFO, -vv is DEBUG (wins over --log-level when lower)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log lines as text, or as one JSON object each (ts, level, logger, message, ...)",
    )


def setup_logging(args: argparse.Namespace) -> None:
    """Configure the root logger from ``--log-level``, ``-v`` and ``--log-format``: one
    handler on stderr (the one logging setup of every command)."""
    level = getattr(logging, str(getattr(args, "log_level", "WARNING")))
    verbose = int(getattr(args, "verbose", 0) or 0)
    if verbose:
        level = min(level, logging.INFO if verbose == 1 else logging.DEBUG)
    as_json = getattr(args, "log_format", "text") == "json"
    formatter = JsonLogFormatter() if as_json else logging.Formatter(TEXT_LOG_FORMAT)
    logging.basicConfig(level=level, format=TEXT_LOG_FORMAT)
    root = logging.getLogger()
    root.setLevel(level)
    for handler in root.handlers:  # the stderr handler, not a test harness's capture
        if isinstance(handler, logging.StreamHandler) and handler.stream is sys.stderr:
            handler.setFormatter(formatter)


def add_alias(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    flag: str,
    dest: str,
    type_: Callable[[str], object] | None = None,
) -> None:
    """Accept ``flag`` as an old spelling of the option stored in ``dest``, hidden from help."""
    if type_ is None:
        parser.add_argument(flag, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    else:
        parser.add_argument(
            flag, dest=dest, type=type_, default=argparse.SUPPRESS, help=argparse.SUPPRESS
        )


def add_endpoints(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "brokers or name servers",
    aliases: Sequence[str] = (),
) -> None:
    """``--endpoints HOST:PORT[,...]``, default ``$AEROMQ_ENDPOINTS`` or ``127.0.0.1:8081``."""
    parser.add_argument(
        "--endpoints",
        default=os.environ.get(ENDPOINTS_ENV) or DEFAULT_ENDPOINTS,
        metavar="HOST:PORT[,...]",
        help=f"gRPC address of the {what}, comma-separated; "
        f"default ${ENDPOINTS_ENV}, else {DEFAULT_ENDPOINTS}",
    )
    for alias in aliases:
        add_alias(parser, alias, "endpoints")


def split_endpoints(text: str) -> list[str]:
    """``"a:1, b:2"`` -> ``["a:1", "b:2"]`` (``;`` separates too, as in RocketMQ)."""
    return [item.strip() for item in text.replace(";", ",").split(",") if item.strip()]


def add_aeron_dir(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    what: str = "the media driver",
    default: str = "$AERON_DIR, else /dev/shm/aeron-<user>",
) -> None:
    """``--aeron-dir PATH`` (and the hidden old spelling ``--dir``), default None: the caller
    resolves it (as ``default`` says)."""
    parser.add_argument(
        "--aeron-dir",
        dest="aeron_dir",
        metavar="PATH",
        default=None,
        help=f"directory of {what} (its cnc.dat); default {default}",
    )
    add_alias(parser, "--dir", "aeron_dir")


def add_json(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--json``: one JSON object per line instead of text."""
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object per line instead of text"
    )


def duration_ms(text: str) -> float:
    """An argparse ``type``: :func:`parse_duration_ms` with argparse's error."""
    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds_as_ms(text: str) -> float:
    """An argparse ``type`` for old ``--*-s`` spellings: a bare number is seconds."""
    try:
        return float(text) * 1e3
    except ValueError:
        return duration_ms(text)
