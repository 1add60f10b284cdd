"""``aeromq broker``: run a broker until SIGINT or SIGTERM.

Works with no arguments (an embedded media driver, ``~/.aeromq/broker`` for data, the default
ingress channels); every ``BrokerConfig`` field is an option (``--grpc-port 0``), and
``--config`` names a TOML file (see ``aeromq.broker.config``). At start it prints what recovery found
and one ``broker ready:`` line of ``key=value`` pairs (name, gRPC address, aeron_dir, ingress
channels, data dir, flush mode) that scripts and tests read; at a signal it shuts down gracefully (stop the
ingress, flush, checkpoint, close the driver) and prints ``broker stopped``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from aeromq.broker._errors import BrokerError
from aeromq.broker.broker import Broker, describe_recovery
from aeromq.broker.config import BrokerConfig, BrokerConfigError, add_arguments
from aeromq.transport import TransportError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aeromq broker", description="Run an aeromq broker until SIGINT or SIGTERM."
    )
    add_arguments(parser)
    parser.add_argument(
        "--log-level",
        default="INFO",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="logging level (default INFO)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    logging.basicConfig(
        level=getattr(logging, args.log_level),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        config = BrokerConfig.from_sources(args)
    except BrokerConfigError as exc:
        print(f"aeromq broker: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    broker = Broker(config)
    try:
        try:
            broker.start()
        except (BrokerError, TransportError, OSError) as exc:
            print(f"aeromq broker: cannot start: {exc}", file=sys.stderr)
            return 1
        report = broker.recovery_report
        if report is not None:
            print(describe_recovery(report, config.flush_mode, config.flush_interval_ms))
        udp = broker.udp_ingress
        print(
            f"broker ready: name={config.broker_name} cluster={config.cluster_name} "
            f"grpc={broker.grpc_address} aeron_dir={broker.aeron_dir} "
            f"ipc_channel={config.ingress_ipc_channel} "
            f"ipc_stream_id={config.ingress_ipc_stream_id} "
            f"udp_channel={udp[0] if udp else 'none'} udp_stream_id={udp[1] if udp else 0} "
            f"data_dir={config.data_dir} flush_mode={config.flush_mode.value}",
            flush=True,
        )
        while not stop.wait(0.5):
            pass
    finally:
        broker.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("broker stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
