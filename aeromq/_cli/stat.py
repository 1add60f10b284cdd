"""``aeromq stat``: a media driver's counters (AeronStat) or error log (ErrorStat), from cnc.dat.

``aeromq stat [--aeron-dir DIR | --broker [DATA_DIR]] [--once] [--interval DURATION] [--json]
[--errors] [--type IDS] [--label REGEX] [--identity IDS] [--session IDS] [--stream IDS]
[--channel REGEX]``

- Maps ``DIR/cnc.dat`` (default ``$AERON_DIR``, else ``/dev/shm/aeron-<user>``; a path to the
  ``cnc.dat`` itself works too): ours, or a real Aeron driver's, which has the same layout.
  ``--broker`` reads the directory of a running broker's media driver from the run file
  (``broker.json``, :mod:`~broker.run_file`) the broker writes in its data directory (default
  ``$AEROMQ_BROKER_DATA_DIR``, else ``~/.aeromq/broker``: the broker's own default); only then
  is the broker's package imported.
- Prints the time, the cnc version, the driver's pid and the age of its heartbeat (the to-driver
  ring buffer's consumer heartbeat), then every allocated counter that passes the filters as
  ``id: value - label`` (formats in :mod:`~transport.tools.stat_format`, filters in
  :mod:`~transport.tools.counter_filter`: AeronStat's pieces, a library); ``--errors`` prints
  the distinct error log instead.
- Refreshes every ``--interval`` (1s) until Ctrl-C, then exits 0; on a terminal each refresh
  clears the screen, into a pipe or file the snapshots follow one another with no escape codes.
  A cnc.dat replaced meanwhile (a new driver in the directory) is mapped again; one that is
  removed stays mapped, so the heartbeat age shows the driver has gone.
- ``--once`` prints one snapshot and exits 0: the mode for scripts.
- ``--json`` prints one JSON object per counter (or error) per line, and no header.
- A missing, unreadable, truncated or incompatible cnc.dat is one line on stderr naming the path,
  and exit 1; a bad option is argparse's usage message and exit 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence

from aeromq._cli.options import (
    add_aeron_dir,
    add_alias,
    add_json,
    command_parser,
    duration_ms,
    setup_logging,
)
from aeromq.transport import CncFileError, ConfigurationError, TransportError
from aeromq.transport.client.context import default_aeron_dir
from aeromq.transport.cnc import CNC_FILE, CncFile
from aeromq.transport.concurrent.counters_reader import CountersReader
from aeromq.transport.concurrent.error_log_reader import read as read_error_log
from aeromq.transport.tools import CounterFilter, parse_id_list, read_counters
from aeromq.transport.tools.stat_format import (
    CLEAR_SCREEN,
    counter_json,
    error_json,
    format_counters,
    format_errors,
    format_header,
)

__all__ = ["build_parser", "main", "render_counters", "render_errors"]

_MAP_TIMEOUT_MS = 1_000
"""How long to wait for a cnc.dat that exists but is not published yet (a driver starting)."""
_PROG = "aeromq stat"
_DEFAULT_BROKER_DATA_DIR = os.path.join("~", ".aeromq", "broker")  # BrokerConfig.data_dir's
_BROKER_DATA_DIR_ENV = "AEROMQ_BROKER_DATA_DIR"  # the broker's own variable for it
_EXAMPLES = (
    "aeromq stat --broker --once",
    "aeromq stat --broker /var/lib/aeromq/broker-a --label 'pub-pos|sub-pos'",
    "aeromq stat --aeron-dir /dev/shm/aeron-me --errors",
    "aeromq stat --once --json --type 1 | jq .value",
)


def _id_list(text: str) -> frozenset[int]:
    try:
        return parse_id_list(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"bad regular expression {text!r}: {exc}") from None


def _positive_ms(text: str) -> float:
    value = duration_ms(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive duration, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq stat`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        _PROG,
        "Print a media driver's counters (like AeronStat) or error log from cnc.dat.",
        [*_EXAMPLES, "", "ID lists are comma-separated; write negative ones as --session=-5,7."],
    )
    where = parser.add_mutually_exclusive_group()
    add_aeron_dir(where)
    where.add_argument(
        "--broker",
        nargs="?",
        const=os.environ.get(_BROKER_DATA_DIR_ENV) or _DEFAULT_BROKER_DATA_DIR,
        default=None,
        metavar="DATA_DIR",
        help="the media driver of the broker running with this data directory "
        "(read from the run file the broker writes there); DATA_DIR defaults to "
        f"${_BROKER_DATA_DIR_ENV}, else {_DEFAULT_BROKER_DATA_DIR}",
    )
    parser.add_argument("--once", action="store_true", help="print one snapshot and exit")
    parser.add_argument(
        "--interval",
        type=_positive_ms,
        default=1000.0,
        metavar="DURATION",
        help="refresh interval, e.g. 500ms, 2s; default 1s",
    )
    add_alias(parser, "--interval-ms", "interval", _positive_ms)
    add_json(parser)
    parser.add_argument("--errors", action="store_true", help="print the distinct error log")
    filters = parser.add_argument_group("counter filters (all must match)")
    filters.add_argument("--type", type=_id_list, help="type ids, e.g. 1,4,12; default: all")
    filters.add_argument("--label", type=_regex, help="regex searched in the label; default: all")
    filters.add_argument(
        "--identity", type=_id_list, help="system counter ids / registration ids; default: all"
    )
    filters.add_argument(
        "--session", type=_id_list, help="session ids of stream counters; default: all"
    )
    filters.add_argument(
        "--stream", type=_id_list, help="stream ids of stream counters; default: all"
    )
    filters.add_argument(
        "--channel", type=_regex, help="regex searched in the key's channel; default: all"
    )
    return parser


def _counter_filter(args: argparse.Namespace) -> CounterFilter:
    return CounterFilter(
        type_ids=args.type,
        label=args.label,
        identities=args.identity,
        session_ids=args.session,
        stream_ids=args.stream,
        channel=args.channel,
    )


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


class _CncView:
    """A mapped cnc.dat and a counters reader over it, mapped again if the file is replaced."""

    __slots__ = ("cnc", "directory", "file_id", "path", "reader")

    def __init__(self, directory: str, timeout_ms: int) -> None:
        self.directory = directory
        self.path = os.path.join(directory, CNC_FILE)
        if not os.path.exists(self.path):
            raise CncFileError("no cnc.dat (is a media driver running?)", path=self.path)
        file_id = _file_id(self.path)
        try:
            cnc = CncFile.map(directory, timeout_ms=timeout_ms)
        except OSError as exc:
            raise CncFileError(
                "cannot read cnc.dat", path=self.path, reason=exc.strerror or str(exc)
            ) from exc
        try:
            reader = CountersReader(cnc.counters_metadata_buffer, cnc.counters_values_buffer)
        except TransportError as exc:
            cnc.close()
            raise CncFileError("cannot read the counters", path=self.path, reason=str(exc)) from exc
        self.cnc = cnc
        self.reader = reader
        self.file_id = file_id

    def remap_if_replaced(self) -> None:
        """Map the directory's cnc.dat again if it is another file now and it is ready."""
        file_id = _file_id(self.path)
        if file_id is None or file_id == self.file_id:
            return
        try:
            fresh = _CncView(self.directory, timeout_ms=0)
        except TransportError:
            return  # not published yet, or unreadable: keep the old one, try on the next refresh
        self.cnc.close()
        self.cnc, self.reader, self.file_id = fresh.cnc, fresh.reader, fresh.file_id

    def close(self) -> None:
        self.cnc.close()


def render_counters(
    cnc: CncFile, reader: CountersReader, counter_filter: CounterFilter, now_ms: int, as_json: bool
) -> str:
    """One snapshot of the counters that pass ``counter_filter``, as text or JSON lines."""
    counters = [counter for counter in read_counters(reader) if counter_filter.matches(counter)]
    if as_json:
        return "".join(counter_json(counter, now_ms) + "\n" for counter in counters)
    header = format_header(cnc.cnc_version, cnc.pid, cnc.driver_heartbeat_ms(), now_ms)
    return format_counters(header, counters)


def render_errors(cnc: CncFile, as_json: bool) -> str:
    """The distinct error log of ``cnc``, as ErrorStat's text or JSON lines."""
    entries: list[tuple[int, int, int, str]] = []

    def consume(count: int, first_ms: int, last_ms: int, text: str) -> None:
        entries.append((count, first_ms, last_ms, text))

    read_error_log(cnc.error_log_buffer, consume)
    if as_json:
        return "".join(error_json(*entry) + "\n" for entry in entries)
    return format_errors(entries)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``stat`` (see module); return the exit code."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    setup_logging(args)
    counter_filter = _counter_filter(args)
    if args.errors and counter_filter != CounterFilter():
        parser.error("counter filters do not apply to --errors")
    if args.broker:
        from aeromq.broker import BrokerError, broker_aeron_dir  # only here: a heavy import

        try:
            directory = broker_aeron_dir(args.broker)
        except BrokerError as exc:
            print(f"{_PROG}: {exc}", file=sys.stderr)
            return 1
    else:
        directory = args.aeron_dir or default_aeron_dir()
    if os.path.basename(directory) == CNC_FILE and os.path.isfile(directory):
        directory = os.path.dirname(directory) or "."
    try:
        view = _CncView(directory, _MAP_TIMEOUT_MS)
    except TransportError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1

    def render() -> str:
        if args.errors:
            return render_errors(view.cnc, args.json)
        now_ms = time.time_ns() // 1_000_000
        return render_counters(view.cnc, view.reader, counter_filter, now_ms, args.json)

    try:
        clear = not args.json and sys.stdout.isatty()  # no escape codes into a pipe or file
        return _run(view, render, once=args.once, clear=clear, interval_ms=args.interval)
    except TransportError as exc:
        print(f"{_PROG}: {exc}: path={view.path!r}", file=sys.stderr)
        return 1
    finally:
        view.close()


def _run(
    view: _CncView, render: Callable[[], str], *, once: bool, clear: bool, interval_ms: float
) -> int:
    out = sys.stdout
    try:
        if once:
            out.write(render())
            out.flush()
            return 0
        while True:
            view.remap_if_replaced()
            text = render()
            out.write(CLEAR_SCREEN + text if clear else text)
            out.flush()
            time.sleep(interval_ms / 1000)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:
        _silence_stdout()
        return 0
