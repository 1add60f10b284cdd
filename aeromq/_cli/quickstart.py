"""``aeromq quickstart``: the main job on defaults, end to end, with a live view and a summary.

1. A broker process (``aeromq broker``: embedded media driver, durable store, gRPC control plane,
   transport ingress) on a free gRPC port and a free UDP ingress port (not the fixed default
   40456, which a second quickstart or any other broker on the host may hold), its data in a
   temporary directory.
2. A topic with 4 queues, created over gRPC.
3. A group of two lite pull consumers (``DefaultLitePullConsumer``, cluster mode), each in a
   process of its own (:mod:`~aeromq._cli.quickstart_member`), sharing the 4 queues.
4. A producer (this process) sending 100,000 checksummed messages in batches over the
   transport, 8 batches in flight. Half way, a third member joins: the group rebalances and the
   view shows the queues move.
5. While it runs: a live view on a terminal (the producer's count, rate and ETA; each member's
   queues, count, rate and lag), a plain line every ``--progress-interval`` otherwise.
6. The members check every message (CRC) and report; once every message has arrived they
   commit and leave, the broker is shut down gracefully, and a summary table follows: sent,
   consumed, duplicates, throughput, latency p50/p99 (send to poll), CPU per message of the
   producer, the consumers and the broker, each member's queues over time, the group's final
   lag (0: every offset committed) and the broker's exit code (``--json``: the same as one JSON
   object).

``--cluster`` runs the job on a broker group of three and kills its leader half way
(:mod:`~aeromq._cli.quickstart_cluster`).

Exit status 0 only if every message arrived intact (duplicates are allowed: delivery is at
least once), the final lag is 0 and every process stopped cleanly; 1 otherwise; 2 for bad
arguments.
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import queue
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from aeromq._cli.options import command_parser, setup_logging
from aeromq._cli.progress import add_progress
from aeromq._cli.quickstart_member import GROUP, HEADER_LENGTH, TOPIC, Report, body, run_member
from aeromq._cli.quickstart_view import RunState
from aeromq.transport.util import process_cpu_s

if TYPE_CHECKING:
    from rich.live import Live

    from aeromq.client import GrpcClient
    from aeromq.producer import SendResult

_DEADLINE_S = 300.0
_WINDOW = 8  # batches in flight
_QUEUES = 4
_MEMBERS = ("c1", "c2")
_JOINS_MIDWAY = "c3"
_VIEW_INTERVAL_S = 0.25  # the live view's redraw and the broker offsets' refresh
_SETTLE_S = 30.0  # for the members to join, get queues, finish and leave


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq quickstart`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq quickstart",
        "Run the main job end to end on defaults: a broker in a temporary directory, a topic, "
        "a producer and a group of consumers (a third joins midway), every message checked; "
        "exit 0 only if all arrived intact.",
        [
            "aeromq quickstart",
            "aeromq quickstart --messages 10000 --size 1024",
            "aeromq quickstart --json",
            "aeromq quickstart --cluster",
        ],
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=None,
        help="how many to send; default 100000 (20000 with --cluster)",
    )
    parser.add_argument("--size", type=int, default=100, help="message body size, bytes")
    parser.add_argument("--batch", type=int, default=32, help="messages per send request")
    parser.add_argument(
        "--data-dir", type=Path, help="broker data directory; default: a temporary directory"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object (and no progress) instead of the view",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="run on a broker group of three (etcd and three brokers) and kill its leader half "
        "way: the producer and the consumers carry on, nothing acknowledged is lost or stored "
        "twice; ends with 'result: OK'",
    )
    add_progress(parser, default_interval_ms=1_000.0, stream="standard output")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args)
    if args.messages is None:
        args.messages = 20_000 if args.cluster else 100_000
    if args.messages <= 0 or args.size < HEADER_LENGTH or args.batch <= 0:
        parser.error(f"need --messages > 0, --size >= {HEADER_LENGTH} and --batch > 0")

    if args.cluster:
        from aeromq._cli.quickstart_cluster import run_cluster

        return run_cluster(args, sys.stdout)
    from aeromq.broker.testing import start_broker_process
    from aeromq.common import ClientError

    scratch: Path | None = None
    if args.data_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="aeromq-quickstart-"))
    data_dir: Path = args.data_dir if scratch is None else scratch
    mode = "none" if args.json else args.progress
    if mode == "auto":
        mode = "live" if sys.stdout.isatty() else "plain"
    say = _Say(sys.stdout, quiet=args.json)
    broker = start_broker_process(
        data_dir, name="quickstart-broker", extra_args=["--ingress-udp-endpoint", "127.0.0.1:0"]
    )
    state = RunState(args.messages)
    broker_exit: int | None = None
    members: dict[str, BaseProcess] = {}
    failure: str | None = None
    try:
        say(f"broker: pid={broker.pid} grpc={broker.grpc_address} data={data_dir}")
        run = _Run(args, broker.grpc_address, broker.pid, state, mode, members)
        run.go(say)
    except (TimeoutError, ClientError) as exc:
        failure = f"{type(exc).__name__}: {exc}"
    finally:
        for process in members.values():
            if process.is_alive():
                process.kill()
                process.join(5)
        broker_exit = broker.stop()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    if failure is not None:
        print(f"aeromq quickstart: {failure}", file=sys.stderr)
    clean = failure is None and broker_exit == 0 and all(p.exitcode == 0 for p in members.values())
    corrupt = sum(m.corrupt for m in state.members.values())
    ok = clean and state.distinct == args.messages and corrupt == 0 and state.final_lag() == 0
    summary = state.summary(broker_exit, ok)
    if args.json:
        print(json.dumps(summary, sort_keys=True), flush=True)
    else:
        state.print_summary(summary, sys.stdout)
    return 0 if ok else 1


class _Say:
    """Notes for a person (not in ``--json`` output)."""

    def __init__(self, stream: TextIO, quiet: bool) -> None:
        self.stream = stream
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)


class _Run:
    """The producer's loop with the members and the view around it (Caller: :func:`main`)."""

    def __init__(
        self,
        args: argparse.Namespace,
        grpc_address: str,
        broker_pid: int,
        state: RunState,
        mode: str,
        members: dict[str, BaseProcess],
    ) -> None:
        self.args = args
        self.grpc_address = grpc_address
        self.broker_pid = broker_pid
        self.state = state
        self.mode = mode
        self.members = members
        self.ctx = mp.get_context("spawn")
        self.events: Queue[Report] = self.ctx.Queue()
        self.stop = self.ctx.Event()
        self.live: Live | None = None
        self.admin: GrpcClient  # set by go, for its run
        self.next_view = 0.0
        self.next_line = 0.0

    def go(self, say: _Say) -> None:
        from aeromq.client import GrpcClient

        with GrpcClient(self.grpc_address, timeout_s=10.0) as admin:
            self.admin = admin
            admin.create_topic(TOPIC, read_queue_nums=_QUEUES, write_queue_nums=_QUEUES)
            say(f"topic: {TOPIC} with {_QUEUES} queues; group {GROUP}: {', '.join(_MEMBERS)}")
            for name in _MEMBERS:
                self._start_member(name)
            self._wait(
                lambda: (
                    all(m.queues for m in self.state.members.values())
                    and self.state.settled(_QUEUES)
                ),
                "get queues",
            )
            if self.mode == "live":
                from rich.live import Live

                self.live = Live(
                    self.state.live(time.monotonic()), auto_refresh=False, transient=False
                )
                self.live.start()
            try:
                broker_cpu_s = process_cpu_s(self.broker_pid)
                self._produce(say)
                self._wait(lambda: self.state.distinct >= self.args.messages, "receive all")
                self.state.broker_cpu_s = process_cpu_s(self.broker_pid) - broker_cpu_s
                self._wait(
                    lambda: (
                        bool(self.state.members[_JOINS_MIDWAY].queues)
                        and self.state.settled(_QUEUES)
                    ),
                    "rebalance",
                    fail=False,
                )
            finally:
                self._view(force=True)
                self.state.stopping = True
                self.stop.set()
                self._wait(
                    lambda: all(m.state == "stopped" for m in self.state.members.values()),
                    "stop",
                    fail=False,
                )
                for process in self.members.values():
                    process.join(_SETTLE_S)
                self._wait(lambda: self.state.final_lag() == 0, "commit", fail=False)
                self._view(force=True)
                if self.live is not None:
                    self.live.stop()

    def _start_member(self, name: str) -> None:
        self.state.add_member(name)
        process = self.ctx.Process(
            target=run_member,
            args=(name, self.grpc_address, self.events, self.stop),
            name=f"quickstart-{name}",
            daemon=True,
        )
        process.start()
        self.members[name] = process

    def _produce(self, say: _Say) -> None:
        from aeromq.client import Message
        from aeromq.producer import Producer

        args, state = self.args, self.state
        midway = args.messages // 2
        with Producer("quickstart-producers", self.grpc_address) as producer:
            producer.fetch_publish_queues(TOPIC)  # the route, before the clock starts
            state.send_started = time.monotonic()
            cpu_s = time.process_time()  # the producer's, with the view it draws meanwhile
            window: collections.deque[tuple[Future[Sequence[SendResult]], int]] = (
                collections.deque()
            )
            for first in range(0, args.messages, args.batch):
                last = min(first + args.batch, args.messages)
                now_ns = time.time_ns()
                batch = [
                    Message(TOPIC, body(seq, args.size, now_ns), keys=(str(seq),))
                    for seq in range(first, last)
                ]
                window.append((producer.send_batch_async(batch), last - first))
                if len(window) >= _WINDOW:
                    self._acknowledged(*window.popleft())
                if state.joined_midway_at is None and first >= midway:
                    state.joined_midway_at = first
                    self._start_member(_JOINS_MIDWAY)
                self._view()
            for future, count in window:
                self._acknowledged(future, count)
            state.send_ended = time.monotonic()
            state.producer_cpu_s = time.process_time() - cpu_s
        self._view(force=True)

    def _acknowledged(self, future: Future[Sequence[SendResult]], count: int) -> None:
        future.result(_DEADLINE_S)
        self.state.sent += count

    def _wait(self, done: Callable[[], bool], what: str, fail: bool = True) -> None:
        """Drain reports and redraw until ``done()``, at most :data:`_SETTLE_S` (or the run's
        deadline while receiving); raises TimeoutError naming ``what`` if ``fail``."""
        limit_s = _DEADLINE_S if what == "receive all" else _SETTLE_S
        deadline = time.monotonic() + limit_s
        while not done():
            if time.monotonic() > deadline:
                if fail:
                    raise TimeoutError(f"quickstart: the members did not {what} in {limit_s:.0f} s")
                return
            self._drain(timeout_s=0.05)
            self._view()

    def _drain(self, timeout_s: float = 0.0) -> None:
        try:
            report = self.events.get(timeout=timeout_s) if timeout_s else self.events.get_nowait()
            while True:
                self.state.apply(report)
                report = self.events.get_nowait()
        except queue.Empty:
            pass

    def _view(self, force: bool = False) -> None:
        """Drain the reports; every :data:`_VIEW_INTERVAL_S` refresh the offsets and redraw."""
        self._drain()
        now = time.monotonic()
        if not force and now < self.next_view:
            return
        self.next_view = now + _VIEW_INTERVAL_S
        self.state.set_offsets(self.admin.consumer_progress(GROUP, TOPIC))
        if self.live is not None:
            self.live.update(self.state.live(now), refresh=True)
        elif self.mode == "plain" and (force or now >= self.next_line):
            self.next_line = now + self.args.progress_interval / 1e3
            print(self.state.plain(now), flush=True)
