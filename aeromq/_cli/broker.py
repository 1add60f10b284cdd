"""``aeromq broker``: run a broker until SIGINT or SIGTERM.

Works with no arguments (an embedded media driver, ``~/.aeromq/broker`` for data, the default
ingress channels); every ``BrokerConfig`` field is an option (``--grpc-port 0``), and
``--config`` names a TOML file (see ``aeromq.broker.config``). At start it prints what recovery found
and one ``broker ready:`` line of ``key=value`` pairs (name, gRPC address, aeron_dir, ingress
channels, data dir, flush mode, the RocketMQ 5 endpoint as ``rocketmq=HOST:PORT`` or ``none``,
the ``metrics=`` and ``console=`` URLs or ``none``, the process id, and in a broker group its
``group=``, ``role=`` (leader or follower) and ``epoch=``; ``group=none role=single epoch=0``
for a single broker) that scripts and tests read, and writes
the run file ``broker.json`` (:mod:`~broker.run_file`) into its data directory, so ``aeromq stat
--broker DATA_DIR`` finds its media driver; at a signal it shuts down gracefully (stop the
ingress, flush, checkpoint, close the driver), removes ``broker.json`` and prints ``broker
stopped``. SIGQUIT appends every thread's stack to ``stacks.txt`` in the data directory and
the broker runs on (a JVM's ``kill -3``). Once started, the process's garbage collector is set
by the ``gc_freeze`` and ``gc_threshold`` settings (``Broker.tune_gc``). A broker whose transport
client stopped for good (``Broker.failure``: an external media driver timed it out or died)
shuts down the same way and exits with status 1, for its supervisor to start it again.
"""

from __future__ import annotations

import argparse
import atexit
import faulthandler
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from aeromq._cli.options import command_parser, setup_logging
from aeromq._cli.serve import serve, stop_on_signals
from aeromq.broker import (
    BROKER_STACKS_FILE,
    BrokerConfig,
    BrokerConfigError,
    BrokerError,
    write_run_file,
)
from aeromq.broker.broker import Broker
from aeromq.broker.config import add_arguments
from aeromq.common import missing_native_modules
from aeromq.transport import TransportError

__all__ = ["main"]


_EXAMPLES = (
    "aeromq broker",
    "aeromq broker --data-dir /var/lib/aeromq/a --grpc-port 8081 --flush-mode SYNC",
    "aeromq broker --broker-name broker-b --grpc-port 8082 --namesrv-address 127.0.0.1:9876",
    "aeromq broker --ingress-udp-endpoint 0.0.0.0:40456 --grpc-host 0.0.0.0",
    "AEROMQ_BROKER_FLUSH_INTERVAL_MS=200 aeromq broker --config broker.toml",
)


_LOG = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq broker`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq broker",
        "Run an aeromq broker until SIGINT or SIGTERM. Settings: defaults < TOML file "
        "< AEROMQ_BROKER_* environment < options.",
        _EXAMPLES,
        default_log_level="INFO",
    )
    add_arguments(parser)
    return parser


SHUTDOWN_STACKS_AFTER_S = 10.0
"""How long a shutdown may take before every thread's stack is written to stderr."""
_WAIT_SLICE_S = 0.5


def main(argv: Sequence[str] | None = None) -> int:
    """Run the broker (see module); returns the process exit code."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    setup_logging(args)
    try:
        config = BrokerConfig.from_sources(args)
    except BrokerConfigError as exc:
        print(f"aeromq broker: {exc}", file=sys.stderr)
        return 2
    with stop_on_signals() as stop:
        missing = missing_native_modules()
        if missing:
            _LOG.warning(
                "native helpers not built, running their slower Python versions: %s "
                "(pip install the package to build them)",
                ", ".join(missing),
            )
        broker = Broker(config)
        stacks: TextIO | None = None
        run_file: Path | None = None
        try:
            try:
                broker.start()
            except (BrokerError, TransportError, OSError) as exc:
                print(f"aeromq broker: cannot start: {exc}", file=sys.stderr)
                return 1
            stacks = _stacks_on_sigquit(config.data_dir, config.file_mode)
            broker.tune_gc()  # start-up's objects frozen, young collections rare (gc_freeze)
            report = broker.recovery_report
            if report is not None:
                print(
                    report.describe(
                        config.flush_mode, config.flush_interval_ms, group=config.group_mode
                    )
                )
            udp = broker.udp_ingress
            print(
                f"broker ready: name={config.broker_name} cluster={config.cluster_name} "
                f"grpc={broker.grpc_address} aeron_dir={broker.aeron_dir} "
                f"ipc_channel={config.ingress_ipc_channel} "
                f"ipc_stream_id={config.ingress_ipc_stream_id} "
                f"udp_channel={udp[0] if udp else 'none'} udp_stream_id={udp[1] if udp else 0} "
                f"data_dir={config.data_dir} flush_mode={config.flush_mode.value} "
                f"rocketmq={broker.rocketmq_address or 'none'} "
                f"metrics={broker.metrics_url or 'none'} console={broker.console_url or 'none'} "
                f"pid={os.getpid()} {broker.group_line()}",
                flush=True,
            )
            run_file = write_run_file(config, broker.grpc_address, broker.aeron_dir)
            print(f"media driver counters: aeromq stat --broker {config.data_dir}", flush=True)
            serve(stop, _WAIT_SLICE_S, lambda: broker.failure is not None)
        finally:
            # A shutdown that hangs says where: every thread's stack on stderr once it has taken
            # SHUTDOWN_STACKS_AFTER_S (the test harness kills a broker 15 s after SIGTERM), be it
            # in the broker's shutdown or in the interpreter's wait for non-daemon threads after
            # main returns; the watchdog is cancelled at exit, which comes after that wait.
            faulthandler.dump_traceback_later(SHUTDOWN_STACKS_AFTER_S, exit=False)
            atexit.register(faulthandler.cancel_dump_traceback_later)
            broker.shutdown()
            if run_file is not None:
                run_file.unlink(missing_ok=True)
            if stacks is not None:
                faulthandler.unregister(signal.SIGQUIT)
                stacks.close()
    if broker.failure is not None:
        print(f"aeromq broker: stopped, its transport failed: {broker.failure}", file=sys.stderr)
        return 1
    print("broker stopped", flush=True)
    return 0


def _stacks_on_sigquit(data_dir: Path, file_mode: int) -> TextIO | None:
    """Append every thread's stack to ``BROKER_STACKS_FILE`` in ``data_dir`` (made with the store's
    ``file_mode``, whatever the umask: a stack names topics and paths) on SIGQUIT, as a JVM prints
    its threads on ``kill -3`` (``faulthandler``: written from the signal handler, so also while
    the interpreter is stuck). A file, not stderr: a broker whose parent is gone (``aeromq
    cluster up`` killed) has no one reading its output. Returns the open file (kept until the
    broker stops), or None when it cannot be opened (nothing is registered)."""
    try:
        fd = os.open(
            data_dir / BROKER_STACKS_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode
        )
    except OSError as exc:
        _LOG.warning("no stack dump on SIGQUIT: %s", exc)
        return None
    os.fchmod(fd, file_mode)
    stacks = os.fdopen(fd, "a", encoding="utf-8")
    faulthandler.register(signal.SIGQUIT, file=stacks, all_threads=True)
    return stacks
