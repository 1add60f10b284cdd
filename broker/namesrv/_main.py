"""``aeromq namesrv``: run a name server until SIGINT or SIGTERM.

Prints ``aeromq namesrv listening on HOST:PORT`` once serving (so scripts and tests can read
the port when they asked for port 0) and exits 0 after a clean stop, 2 on a bad setting.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from aeromq.broker._errors import BrokerError
from aeromq.broker.namesrv.config import NameServerConfig
from aeromq.broker.namesrv.server import NameServer

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        print(
            "usage: aeromq namesrv [--host HOST] [--port PORT] [--broker-timeout-ms MS] "
            "[--scan-interval-ms MS]\n"
            "environment: AEROMQ_NAMESRV_HOST, _PORT, _BROKER_TIMEOUT_MS, _SCAN_INTERVAL_MS"
        )
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = NameServerConfig.load(args)
    except BrokerError as exc:
        print(f"aeromq namesrv: {exc}", file=sys.stderr)
        return 2
    server = NameServer(config)
    try:
        server.start()
    except BrokerError as exc:
        print(f"aeromq namesrv: {exc}", file=sys.stderr)
        return 1
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    print(f"aeromq namesrv listening on {server.address}", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop(grace_s=1.0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("aeromq namesrv stopped", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
