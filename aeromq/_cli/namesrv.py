"""``aeromq namesrv``: run a name server until SIGINT or SIGTERM.

Prints ``aeromq namesrv listening on HOST:PORT`` once serving (so scripts and tests can read
the port when they asked for port 0) and exits 0 after a clean stop, 2 on a bad setting.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aeromq._cli.options import command_parser, setup_logging
from aeromq._cli.serve import serve, stop_on_signals
from aeromq.broker import BrokerError
from aeromq.broker.namesrv import NameServer, NameServerConfig
from aeromq.broker.namesrv.config import add_arguments

__all__ = ["main"]

_WAIT_SLICE_S = 0.5

_EXAMPLES = (
    "aeromq namesrv",
    "aeromq namesrv --host 0.0.0.0 --port 9876 --broker-timeout 30s",
    "AEROMQ_NAMESRV_PORT=0 aeromq namesrv",
)


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq namesrv`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq namesrv",
        "Run a name server (brokers register, clients ask it for routes) until SIGINT or "
        "SIGTERM. Settings: defaults < AEROMQ_NAMESRV_* environment < options.",
        _EXAMPLES,
        default_log_level="INFO",
    )
    add_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the name server (see module); returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    parsed = build_parser().parse_args(args)  # --help, and usage errors with exit 2
    setup_logging(parsed)
    settings = [
        item
        for name in ("host", "port", "broker_timeout_ms", "scan_interval_ms")
        if (value := getattr(parsed, name, None)) is not None
        for item in (f"--{name.replace('_', '-')}", str(value))
    ]
    try:
        config = NameServerConfig.load(settings)
    except BrokerError as exc:
        print(f"aeromq namesrv: {exc}", file=sys.stderr)
        return 2
    server = NameServer(config)
    try:
        server.start()
    except BrokerError as exc:
        print(f"aeromq namesrv: {exc}", file=sys.stderr)
        return 1
    with stop_on_signals() as stop:
        print(f"aeromq namesrv listening on {server.address}", flush=True)
        try:
            serve(stop, _WAIT_SLICE_S)
        finally:
            server.stop(grace_s=1.0)
    print("aeromq namesrv stopped", flush=True)
    return 0
