"""``aeromq produce``: send messages from the command line and print a summary.

::

    aeromq produce --topic T --count 10000 --size 100 --rate 5000
    aeromq produce --endpoints 127.0.0.1:8081 --topic T --body "hello" --tags A --keys k1

Bodies are ``--body`` (UTF-8) or ``--size`` bytes of a repeating pattern. ``--batch N`` sends N
messages per request; ``--window W`` keeps up to W requests in flight (pipelined, async);
``--rate`` caps messages per second (0: as fast as possible). The summary line is ``key=value``
pairs: sent, failed, elapsed_s, msgs_per_s, mb_per_s and the request latency p50/p99 in us;
the first error of each kind is printed. ``--json`` prints the summary as one JSON object.
Timer messages: ``--deliver-at`` (epoch milliseconds, or an ISO 8601 time) or ``--delay``
(a duration after each send, e.g. ``30s``) or ``--delay-level`` (RocketMQ 4's 1..18); the
broker holds them until then.
Progress (count, rate, ETA) goes to standard error: a live line on a terminal, a plain line
every ``--progress-interval`` otherwise (``--progress`` chooses).
Exit status 0 when every message was stored, 1 when some failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence

from aeromq._cli.options import (
    add_aeron_dir,
    add_alias,
    add_endpoints,
    add_json,
    command_parser,
    duration_ms,
    setup_logging,
    split_endpoints,
)
from aeromq._cli.progress import Progress, add_progress
from aeromq.client import ClientError, ClientTls, Credentials, Message
from aeromq.producer import Producer, ProducerConfig

__all__ = ["main"]

_PATTERN = b"aeromq-0123456789-abcdefghijklmnopqrstuvwxyz-"


_EXAMPLES = (
    'aeromq produce --topic orders --body "hello" --tags A --keys order-1',
    "aeromq produce --topic orders --count 100000 --size 100 --batch 32 --window 4",
    "aeromq produce --topic orders --count 1000 --rate 500 --json",
    "aeromq produce --endpoints 127.0.0.1:9876 --namesrv --topic orders --count 10",
    'aeromq produce --topic orders --body "expire order-1" --delay 30m',
)


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq produce`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq produce", "Send messages to a topic and print a summary.", _EXAMPLES
    )
    add_endpoints(parser)
    parser.add_argument(
        "--namesrv", action="store_true", help="the endpoints are name servers, not brokers"
    )
    parser.add_argument("--topic", required=True, help="the topic to send to (required)")
    parser.add_argument("--group", default="aeromq-produce", help="producer group")
    parser.add_argument("--count", type=int, default=1, help="messages to send")
    parser.add_argument("--size", type=int, default=100, help="body size, bytes")
    parser.add_argument("--body", help="the body text, UTF-8 (overrides --size)")
    parser.add_argument("--tags", help="the messages' tag")
    parser.add_argument("--keys", help="the messages' keys, space-separated")
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a user property (repeatable)",
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument(
        "--deliver-at",
        type=_epoch_ms,
        metavar="TIME",
        help="timer messages, delivered at TIME: epoch milliseconds or ISO 8601 "
        "(2030-01-01T08:00:00+00:00; local time without an offset)",
    )
    when.add_argument(
        "--delay",
        type=duration_ms,
        metavar="DURATION",
        help="timer messages, delivered DURATION after each is sent, e.g. 10s, 30m",
    )
    when.add_argument(
        "--delay-level",
        type=int,
        choices=range(1, 19),
        metavar="LEVEL",
        help="RocketMQ 4's delay level 1..18 (1s 5s 10s 30s 1m..10m 20m 30m 1h 2h)",
    )
    parser.add_argument(
        "--rate", type=float, default=0.0, help="messages per second, 0: as fast as possible"
    )
    parser.add_argument("--batch", type=int, default=1, help="messages per request")
    parser.add_argument(
        "--window", type=int, default=1, help="requests in flight (above 1: async sends)"
    )
    parser.add_argument(
        "--transport",
        choices=("auto", "ipc", "udp"),
        default="auto",
        help="how sends reach the broker (auto: IPC on the broker's host, else UDP)",
    )
    parser.add_argument(
        "--compression",
        choices=("lz4", "zstd", "zlib"),
        default=None,
        help="compress each request's batch of 4 KiB of bodies or more (default: none)",
    )
    add_aeron_dir(
        parser, "a running media driver for UDP sessions", "none: one embedded in this process"
    )
    parser.add_argument(
        "--timeout",
        type=duration_ms,
        default=3_000.0,
        metavar="DURATION",
        help="per send, retries included, e.g. 500ms, 3s; default 3s",
    )
    add_alias(parser, "--timeout-ms", "timeout", duration_ms)
    parser.add_argument(
        "--quiet", action="store_true", help="print the summary only, not the first errors"
    )
    add_json(parser)
    add_progress(parser)
    return parser


def _epoch_ms(text: str) -> int:
    """An argparse ``type``: epoch milliseconds, or an ISO 8601 time."""
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not epoch milliseconds or an ISO 8601 time: {text!r}"
        ) from None


def _percentile(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    setup_logging(args)
    args.timeout_ms = max(1, round(args.timeout))
    if args.count < 0 or args.size <= 0 or args.batch <= 0 or args.window <= 0 or args.rate < 0:
        parser.error("--count >= 0, --size, --batch and --window > 0, --rate >= 0")
    properties: dict[str, str] = {}
    for item in args.property:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--property wants NAME=VALUE: {item!r}")
        properties[name] = value
    body = (
        args.body.encode()
        if args.body is not None
        else (_PATTERN * (args.size // 45 + 1))[: args.size]
    )
    try:
        template = Message(
            args.topic,
            body,
            tags=args.tags,
            keys=args.keys or (),
            properties=properties,
            delivery_timestamp_ms=args.deliver_at,
            delay_level=args.delay_level or 0,
        )
        config = ProducerConfig(
            send_timeout_ms=args.timeout_ms,
            transport=args.transport,
            compression=args.compression,
            aeron_dir=args.aeron_dir,
            credentials=Credentials.from_env(),  # AEROMQ_USER, AEROMQ_SECRET
            tls=ClientTls.from_env(),  # AEROMQ_TLS_CA_FILE, AEROMQ_TLS_CERT_FILE, AEROMQ_TLS_KEY_FILE
        )
    except ClientError as exc:
        print(f"aeromq produce: {exc}", file=sys.stderr)
        return 2
    endpoints = split_endpoints(args.endpoints)
    stats = _Stats(quiet=args.quiet)
    progress = Progress(
        "produce",
        args.count,
        sys.stderr,
        mode=args.progress,
        interval_ms=args.progress_interval,
    )
    with (
        Producer(args.group, endpoints, namesrv=args.namesrv, config=config) as producer,
        progress,
    ):
        stats.progress = progress
        _run(producer, template, args, stats)
    stats.report(args.count, body, as_json=args.json)
    return 0 if stats.failed == 0 and stats.sent == args.count else 1


class _Stats:
    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.sent = 0
        self.failed = 0
        self.errors: Counter[str] = Counter()
        self.latencies_us: list[float] = []
        self.began = time.perf_counter()
        self.ended = self.began
        self.progress: Progress | None = None

    def ok(self, count: int, began: float) -> None:
        self.sent += count
        if self.progress is not None:
            self.progress.advance(count)
        self.latencies_us.append((time.perf_counter() - began) * 1e6)

    def fail(self, count: int, error: BaseException) -> None:
        self.failed += count
        if self.progress is not None:
            self.progress.advance(count)
        kind = type(error).__name__
        if not self.errors[kind] and not self.quiet:
            print(f"send failed: {kind}: {error}", file=sys.stderr)
        self.errors[kind] += count

    def report(self, count: int, body: bytes, as_json: bool = False) -> None:
        elapsed = max(self.ended - self.began, 1e-9)
        latencies = sorted(self.latencies_us)
        if as_json:
            summary = {
                "sent": self.sent,
                "failed": self.failed,
                "of": count,
                "elapsed_s": round(elapsed, 6),
                "msgs_per_s": round(self.sent / elapsed),
                "mb_per_s": round(self.sent * len(body) / elapsed / 1e6, 3),
                "p50_us": round(_percentile(latencies, 0.5)),
                "p99_us": round(_percentile(latencies, 0.99)),
                "errors": dict(sorted(self.errors.items())),
            }
            print(json.dumps(summary, sort_keys=True), flush=True)
            return
        print(
            f"sent={self.sent} failed={self.failed} of={count} elapsed_s={elapsed:.3f} "
            f"msgs_per_s={self.sent / elapsed:.0f} "
            f"mb_per_s={self.sent * len(body) / elapsed / 1e6:.2f} "
            f"p50_us={_percentile(latencies, 0.5):.0f} p99_us={_percentile(latencies, 0.99):.0f}"
            + "".join(f" {kind}={n}" for kind, n in sorted(self.errors.items())),
            flush=True,
        )


_SYSTEM_COPIED = frozenset(("TAGS", "KEYS", "WAIT", "DELAY", "TIMER_DELIVER_MS"))


def _copy(template: Message, delay_ms: float | None) -> Message:
    """A fresh message like ``template`` (each send gets its own unique id); ``delay_ms``:
    due that long from now."""
    return Message(
        template.topic,
        template.body,
        tags=template.tags,
        keys=template.keys,
        properties={k: v for k, v in template.properties.items() if k not in _SYSTEM_COPIED},
        delivery_timestamp_ms=(
            template.delivery_timestamp_ms
            if delay_ms is None
            else time.time_ns() // 1_000_000 + round(delay_ms)
        ),
        delay_level=template.delay_level,
    )


def _run(producer: Producer, template: Message, args: argparse.Namespace, stats: _Stats) -> None:
    interval_s = args.batch / args.rate if args.rate else 0.0
    in_flight = threading.Semaphore(args.window)
    lock = threading.Lock()
    remaining = args.count
    next_at = time.perf_counter()
    stats.began = next_at
    while remaining > 0:
        if interval_s:
            delay = next_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            next_at += interval_s
        count = min(args.batch, remaining)
        remaining -= count
        messages = [_copy(template, args.delay) for _ in range(count)]
        began = time.perf_counter()
        if args.window == 1:
            try:
                producer.send_batch(messages, args.timeout_ms)
            except ClientError as exc:
                stats.fail(count, exc)
            else:
                stats.ok(count, began)
            continue
        in_flight.acquire()

        def done(
            result: object, error: BaseException | None, count: int = count, began: float = began
        ) -> None:
            with lock:
                if error is None:
                    stats.ok(count, began)
                else:
                    stats.fail(count, error)
            in_flight.release()

        try:
            producer.send_batch_async(messages, done, args.timeout_ms)
        except ClientError as exc:
            in_flight.release()
            with lock:
                stats.fail(count, exc)
    wait_s = args.timeout_ms / 1000 + 5.0  # every future completes by its timeout
    for _ in range(args.window):  # every callback has run once all permits are back
        in_flight.acquire(timeout=wait_s)
    stats.ended = time.perf_counter()
