"""``aeromq consume``: poll a topic (or queues) from the command line.

::

    aeromq consume --endpoints 127.0.0.1:8081 --topic T --group G            # print messages
    aeromq consume --endpoints 127.0.0.1:8081 --topic T --tags "A || B" --count 1000 --quiet
    aeromq consume --endpoints 127.0.0.1:8081 --topic T --queue broker-a:0 --from first

Each message is one line: ``queue_id offset tags keys msg_id body`` (the body as UTF-8 with
escapes, cut at ``--max-body`` characters). ``--quiet`` counts instead, with a progress line on
standard error every second. It stops once ``--count`` messages came (a last poll may bring
a few more: they are printed and committed, never dropped), after ``--idle-s`` seconds
without one (0: never), or at Ctrl-C, then shuts the consumer down (offsets are committed) and
prints ``consumed=N elapsed_s=... msgs_per_s=...``. ``--queue BROKER:ID`` assigns queues
instead of subscribing. Exit status 0, 1 when the consumer failed, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from aeromq.client import ClientError, MessageExt, MessageQueue
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig, MessageModel
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer

__all__ = ["format_message", "main"]

_FROM = {
    "last": ConsumeFromWhere.LAST_OFFSET,
    "first": ConsumeFromWhere.FIRST_OFFSET,
    "timestamp": ConsumeFromWhere.TIMESTAMP,
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="aeromq consume", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--endpoints",
        required=True,
        help="gRPC host:port of brokers or name servers, comma-separated",
    )
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", default="aeromq-consume", help="consumer group")
    parser.add_argument("--tags", default="*", help='tag expression, e.g. "A || B" (default *)')
    parser.add_argument(
        "--queue", action="append", default=[], metavar="BROKER:ID", help="assign this queue"
    )
    parser.add_argument("--from", dest="start", choices=sorted(_FROM), default="last")
    parser.add_argument("--timestamp-ms", type=int, help="with --from timestamp: epoch ms")
    parser.add_argument("--broadcast", action="store_true", help="BROADCASTING message model")
    parser.add_argument("--count", type=int, default=0, help="stop after N messages (0: never)")
    parser.add_argument("--idle-s", type=float, default=0.0, help="stop after S idle seconds")
    parser.add_argument("--max-body", type=int, default=200, help="body characters printed")
    parser.add_argument("--quiet", action="store_true", help="count with a progress line")
    parser.add_argument("--transport", choices=("auto", "ipc", "udp"), default="auto")
    return parser


def format_message(message: MessageExt, max_body: int) -> str:
    """One message as a line: queue id, offset, tags, keys, message id, body."""
    body = message.body.decode("utf-8", "backslashreplace")
    if len(body) > max_body:
        body = body[:max_body] + "..."
    body = body.encode("unicode_escape").decode("ascii")
    keys = ",".join(message.keys) or "-"
    return (
        f"{message.queue_id} {message.queue_offset} {message.tags or '-'} {keys} "
        f"{message.msg_id} {body}"
    )


def _queues(topic: str, specs: Sequence[str]) -> list[MessageQueue]:
    queues = []
    for spec in specs:
        broker, sep, queue_id = spec.rpartition(":")
        if not sep or not broker or not queue_id.isdigit():
            raise ValueError(f"--queue wants BROKER:ID, got {spec!r}")
        queues.append(MessageQueue(topic, broker, int(queue_id)))
    return queues


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out = out or sys.stdout
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.count < 0 or args.idle_s < 0 or args.max_body < 0:
        parser.error("--count, --idle-s and --max-body must be >= 0")
    try:
        queues = _queues(args.topic, args.queue)
        changes: dict[str, object] = {}
        if args.timestamp_ms is not None:
            changes["consume_timestamp_ms"] = args.timestamp_ms
        config = LitePullConsumerConfig(
            consumer_group=args.group,
            endpoints=tuple(e for e in args.endpoints.split(",") if e.strip()),
            consume_from_where=_FROM[args.start],
            message_model=MessageModel.BROADCASTING if args.broadcast else MessageModel.CLUSTERING,
            transport=args.transport,
            poll_timeout_ms=200,
            **changes,  # type: ignore[arg-type]
        )
    except (ValueError, ClientError) as exc:
        parser.error(str(exc))
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGINT, on_signal)
    consumer = DefaultLitePullConsumer(config=config)
    consumed = 0
    start = time.monotonic()
    try:
        if queues:
            consumer.assign(queues)
        else:
            consumer.subscribe(args.topic, args.tags)
        consumer.start()
        last_message = next_progress = time.monotonic()
        while not stop.is_set():
            messages = consumer.poll()
            now = time.monotonic()
            if messages:
                last_message = now
                if not args.quiet:
                    for message in messages:
                        print(format_message(message, args.max_body), file=out)
                consumed += len(messages)
            elif args.idle_s and now - last_message >= args.idle_s:
                break
            if args.quiet and now >= next_progress:
                next_progress = now + 1.0
                rate = consumed / max(now - start, 1e-9)
                print(f"\rconsumed={consumed} msgs_per_s={rate:.0f}", end="", file=sys.stderr)
            if args.count and consumed >= args.count:
                break
    except ClientError as exc:
        print(f"aeromq consume: {exc}", file=sys.stderr)
        return 1
    finally:
        consumer.shutdown()
        signal.signal(signal.SIGINT, previous)
    elapsed = time.monotonic() - start
    if args.quiet:
        print(file=sys.stderr)
    print(
        f"consumed={consumed} elapsed_s={elapsed:.3f} msgs_per_s={consumed / max(elapsed, 1e-9):.0f}",
        file=out,
    )
    return 0
