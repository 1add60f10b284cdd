"""``aeromq driver``: run a standalone media driver until SIGINT, SIGTERM or TERMINATE_DRIVER.

Options override the environment (Aeron's ``AERON_*`` variables), which overrides the defaults.
Durations and sizes follow Aeron's rules, so a value that works for the real driver works here:
``10s``, ``500ms``, ``250us`` (a bare number is nanoseconds, as in Aeron); ``64k``, ``16m``.
Prints one line when the driver is ready (``media driver ready: aeron_dir=... pid=...``), then
waits; on a signal it closes the driver (deleting the directory with
``--dir-delete-on-shutdown``) and exits 0. A driver already alive in the directory is an error
(exit 1), as is a bad option value (exit 2).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

from aeromq._cli.options import add_aeron_dir, command_parser, setup_logging
from aeromq._cli.serve import serve, stop_on_signals
from aeromq.transport import ActiveDriverError, ConfigurationError
from aeromq.transport.driver import (
    MediaDriver,
    MediaDriverContext,
    ThreadingMode,
    allow_termination,
    parse_duration_ns,
    parse_size,
)

__all__ = ["main"]

_WAIT_SLICE_S = 0.2
_T = TypeVar("_T")


def _arg(parse: Callable[[str, str], _T], name: str) -> Callable[[str], _T]:
    def convert(text: str) -> _T:
        try:
            return parse(name, text)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


_EXAMPLES = (
    "aeromq driver",
    "aeromq driver --aeron-dir /dev/shm/aeron-app --threading-mode DEDICATED",
    "aeromq driver --term-length 16m --client-liveness-timeout 5s --dir-delete-on-shutdown",
    "AERON_DIR=/dev/shm/aeron-app aeromq driver --allow-termination",
)
_DURATION = "; a duration (10s, 500ms, 250us; a bare number is ns, as in Aeron)"
_SIZE = "; a size in bytes (64k, 16m, 1g)"


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq driver`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq driver",
        "Run a standalone media driver (IPC and UDP). Options override Aeron's AERON_* "
        "environment variables, which override the defaults.",
        _EXAMPLES,
    )
    add_aeron_dir(parser, "the media driver to create")
    modes = [mode.value for mode in ThreadingMode if mode.value != "INVOKER"]
    parser.add_argument(
        "--threading-mode",
        choices=modes,
        help="SHARED (one thread for every agent), SHARED_NETWORK or DEDICATED (a thread each); "
        "default $AERON_THREADING_MODE, else DEDICATED",
    )
    parser.add_argument(
        "--term-length",
        type=_arg(parse_size, "term-length"),
        help="term buffer length of network publications" + _SIZE + "; default 16m",
    )
    parser.add_argument(
        "--ipc-term-length",
        type=_arg(parse_size, "ipc-term-length"),
        help="term buffer length of IPC publications" + _SIZE + "; default 64m",
    )
    parser.add_argument(
        "--mtu", type=_arg(parse_size, "mtu"), help="UDP frame size" + _SIZE + "; default 1408"
    )
    parser.add_argument(
        "--ipc-mtu",
        type=_arg(parse_size, "ipc-mtu"),
        help="IPC fragment size" + _SIZE + "; default 1408",
    )
    parser.add_argument(
        "--client-liveness-timeout",
        type=_arg(parse_duration_ns, "client-liveness-timeout"),
        help="a client silent this long is closed" + _DURATION + "; default 10s",
    )
    parser.add_argument(
        "--publication-unblock-timeout",
        type=_arg(parse_duration_ns, "publication-unblock-timeout"),
        help="a claim left uncommitted this long is unblocked" + _DURATION + "; default 15s",
    )
    parser.add_argument(
        "--publication-linger-timeout",
        type=_arg(parse_duration_ns, "publication-linger-timeout"),
        help="a closed publication's log lingers this long" + _DURATION + "; default 5s",
    )
    parser.add_argument(
        "--timer-interval",
        type=_arg(parse_duration_ns, "timer-interval"),
        help="the conductor's timer check interval" + _DURATION + "; default 1s",
    )
    parser.add_argument(
        "--driver-timeout",
        type=_arg(parse_duration_ns, "driver-timeout"),
        help="clients consider the driver dead after this long" + _DURATION + "; default 10s",
    )
    parser.add_argument(
        "--idle-strategy",
        help="conductor idle strategy, e.g. backoff, sleep-ms:1; default backoff",
    )
    parser.add_argument(
        "--sparse",
        action=argparse.BooleanOptionalAction,
        help="sparse log buffer files; default $AERON_TERM_BUFFER_SPARSE_FILE, else not sparse",
    )
    parser.add_argument(
        "--dir-delete-on-start",
        action="store_true",
        default=None,
        help="delete a dead driver's directory at start",
    )
    parser.add_argument(
        "--dir-delete-on-shutdown",
        action="store_true",
        default=None,
        help="delete the directory at shutdown",
    )
    parser.add_argument(
        "--allow-termination",
        action="store_true",
        help="accept TERMINATE_DRIVER from clients (refused by default)",
    )
    return parser


def _context(args: argparse.Namespace) -> MediaDriverContext:
    options = {
        "aeron_dir": args.aeron_dir,
        "threading_mode": ThreadingMode(args.threading_mode) if args.threading_mode else None,
        "term_buffer_length": args.term_length,
        "ipc_term_buffer_length": args.ipc_term_length,
        "mtu_length": args.mtu,
        "ipc_mtu_length": args.ipc_mtu,
        "client_liveness_timeout_ns": args.client_liveness_timeout,
        "publication_unblock_timeout_ns": args.publication_unblock_timeout,
        "publication_linger_timeout_ns": args.publication_linger_timeout,
        "timer_interval_ns": args.timer_interval,
        "driver_timeout_ms": (
            args.driver_timeout // 1_000_000 if args.driver_timeout is not None else None
        ),
        "conductor_idle_strategy": args.idle_strategy,
        "term_buffer_sparse_file": args.sparse,
        "dir_delete_on_start": args.dir_delete_on_start,
        "dir_delete_on_shutdown": args.dir_delete_on_shutdown,
        "termination_validator": allow_termination if args.allow_termination else None,
    }
    return MediaDriverContext.from_env(**{k: v for k, v in options.items() if v is not None})


def main(argv: Sequence[str] | None = None) -> int:
    """Run the driver (see module); returns the process exit code."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    setup_logging(args)
    try:
        context = _context(args)
    except ConfigurationError as exc:
        print(f"aeromq driver: {exc}", file=sys.stderr)
        return 2

    with stop_on_signals() as stop:
        try:
            driver = MediaDriver.launch(context)
        except ActiveDriverError as exc:
            print(f"aeromq driver: {exc}", file=sys.stderr)
            return 1
        try:
            print(f"media driver ready: aeron_dir={driver.aeron_dir} pid={os.getpid()}", flush=True)
            serve(stop, _WAIT_SLICE_S, lambda: driver.is_terminated)
        finally:
            driver.close()
        reason = "terminated by a client" if driver.is_terminated else "stopped by a signal"
        print(f"media driver {reason}: aeron_dir={driver.aeron_dir}", flush=True)
        return 0
