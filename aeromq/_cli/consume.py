"""``aeromq consume``: poll a topic (or queues) from the command line and print the messages.

Each message is one line on standard output: ``queue_id offset tags keys msg_id body`` (the body
as UTF-8 with escapes, cut at ``--max-body`` characters), or one JSON object with ``--json``.
The summary (``consumed=N elapsed_s=... msgs_per_s=...``) goes to standard error, so standard
output holds only messages.

- ``--count N`` prints and commits exactly N messages: what a poll brought beyond them is
  neither printed nor committed, so the group's next consumer starts at message N+1.
- Without ``--group`` each run joins a group of its own (``aeromq-consume-<random>``), as
  Kafka's console consumer does, so two terminals each see every message; give ``--group`` to
  share the work (and the committed offsets) with other members.
- It stops after ``--count`` messages, after ``--idle`` without one, or at Ctrl-C, then shuts
  the consumer down (committed offsets are persisted).
- ``--queue BROKER:ID`` assigns queues instead of subscribing.
- Progress (count, rate and, with ``--count``, ETA) goes to standard error: a live line on a
  terminal, a plain line every ``--progress-interval`` otherwise; none by default while the
  messages themselves are printed to that terminal.

Exit status: 0 done; 1 the broker is unreachable, the topic does not exist or the consumer
failed (one line on standard error says why); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any, TextIO

from aeromq._cli.options import (
    add_aeron_dir,
    add_alias,
    add_endpoints,
    add_json,
    command_parser,
    duration_ms,
    seconds_as_ms,
    setup_logging,
    split_endpoints,
)
from aeromq._cli.progress import Progress, add_progress
from aeromq._cli.serve import setting
from aeromq.client import (
    ClientError,
    ClientTls,
    Credentials,
    MessageExt,
    MessageQueue,
    RouteResolver,
)
from aeromq.consumer import (
    ConsumeFromWhere,
    DefaultLitePullConsumer,
    LitePullConsumerConfig,
    MessageModel,
)

__all__ = ["format_message", "main", "message_json"]

_FROM = {
    "last": ConsumeFromWhere.LAST_OFFSET,
    "first": ConsumeFromWhere.FIRST_OFFSET,
    "timestamp": ConsumeFromWhere.TIMESTAMP,
}
_POLL_TIMEOUT_MS = 200
_EXAMPLES = (
    "aeromq consume --topic orders --from first --count 5",
    'aeromq consume --topic orders --group billing --tags "A || B" --idle 5s',
    "aeromq consume --topic orders --queue broker-a:0 --from first --json",
    "AEROMQ_ENDPOINTS=10.0.0.5:8081 aeromq consume --topic orders --quiet --count 100000",
)


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq consume`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq consume",
        "Poll messages from a topic (or assigned queues) and print them, one per line.",
        _EXAMPLES,
    )
    add_endpoints(parser)
    parser.add_argument("--topic", required=True, help="the topic to consume (required)")
    parser.add_argument(
        "--group",
        default=None,
        help="consumer group; default: a new group of its own per run (aeromq-consume-<random>)",
    )
    parser.add_argument("--tags", default="*", help='tag expression, e.g. "A || B"')
    parser.add_argument(
        "--queue",
        action="append",
        default=[],
        metavar="BROKER:ID",
        help="assign this queue instead of subscribing (repeatable)",
    )
    parser.add_argument(
        "--from",
        dest="start",
        choices=sorted(_FROM),
        default="last",
        help="where a group with no committed offset starts",
    )
    parser.add_argument(
        "--timestamp-ms",
        type=int,
        default=None,
        help="with --from timestamp: the start time, epoch milliseconds",
    )
    parser.add_argument(
        "--broadcast", action="store_true", help="BROADCASTING model (every member gets all)"
    )
    parser.add_argument(
        "--count", type=int, default=0, help="stop after exactly N messages (0: never)"
    )
    parser.add_argument(
        "--idle",
        type=duration_ms,
        default=0.0,
        metavar="DURATION",
        help="stop after this long without a message, e.g. 5s (0: never); default 0",
    )
    add_alias(parser, "--idle-s", "idle", seconds_as_ms)
    parser.add_argument(
        "--max-body", type=int, default=200, help="body characters printed per message"
    )
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print no messages, only the progress and the summary",
    )
    add_json(parser)
    add_progress(parser)
    parser.add_argument(
        "--transport",
        choices=("auto", "ipc", "udp"),
        default="auto",
        help="how pulls reach the broker (auto: IPC on the broker's host, else UDP)",
    )
    add_aeron_dir(
        parser, "a running media driver for UDP sessions", "none: one embedded in this process"
    )
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


def message_json(message: MessageExt, max_body: int) -> str:
    """One message as a JSON object on one line (the body as UTF-8, cut at ``max_body``)."""
    body = message.body.decode("utf-8", "backslashreplace")
    record: dict[str, object] = {
        "topic": message.topic,
        "broker": message.broker_name,
        "queue_id": message.queue_id,
        "offset": message.queue_offset,
        "msg_id": message.msg_id,
        "tags": message.tags,
        "keys": list(message.keys),
        "born_timestamp_ms": message.born_timestamp_ms,
        "store_timestamp_ms": message.store_timestamp_ms,
        "body": body[:max_body],
        "body_bytes": len(message.body),
    }
    return json.dumps(record, sort_keys=True)


def _queues(topic: str, specs: Sequence[str]) -> list[MessageQueue]:
    queues = []
    for spec in specs:
        broker, sep, queue_id = spec.rpartition(":")
        if not sep or not broker or not queue_id.isdigit():
            raise ValueError(f"--queue wants BROKER:ID: value={spec!r}")
        queues.append(MessageQueue(topic, broker, int(queue_id)))
    return queues


def _config(args: argparse.Namespace) -> LitePullConsumerConfig:
    changes: dict[str, Any] = {}
    if args.timestamp_ms is not None:
        changes["consume_timestamp_ms"] = args.timestamp_ms
    if args.aeron_dir is not None:
        changes["aeron_dir"] = args.aeron_dir
    return LitePullConsumerConfig(
        consumer_group=args.group or f"aeromq-consume-{uuid.uuid4().hex[:12]}",
        endpoints=tuple(split_endpoints(args.endpoints)),
        consume_from_where=_FROM[args.start],
        message_model=MessageModel.BROADCASTING if args.broadcast else MessageModel.CLUSTERING,
        transport=args.transport,
        poll_timeout_ms=_POLL_TIMEOUT_MS,
        auto_commit=False,  # committed here, message by message printed (see --count)
        max_poll_records=min(args.count, 500) if args.count else 500,
        credentials=Credentials.from_env(),  # AEROMQ_USER, AEROMQ_SECRET
        tls=ClientTls.from_env(),  # AEROMQ_TLS_CA_FILE, AEROMQ_TLS_CERT_FILE, AEROMQ_TLS_KEY_FILE
        **changes,
    )


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``aeromq consume``: messages to ``out`` (stdout), errors, progress and the summary to
    ``err`` (stderr); returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    out = out or sys.stdout
    err = err or sys.stderr
    setup_logging(args)
    if args.count < 0 or args.idle < 0 or args.max_body < 0:
        parser.error("--count, --idle and --max-body must be >= 0")
    try:
        queues = _queues(args.topic, args.queue)
        config = _config(args)
    except (ValueError, ClientError) as exc:
        parser.error(str(exc))
    stop = threading.Event()
    on_signal = setting(stop)

    try:  # before the consumer starts: an unreachable broker or no topic is one line, exit 1
        with RouteResolver(
            config.endpoints,
            timeout_s=config.control_timeout_ms / 1000,
            credentials=config.credentials,
            tls=config.tls,
        ) as routes:
            routes.route(args.topic)
    except ClientError as exc:
        print(f"aeromq consume: {type(exc).__name__}: {exc}", file=err)
        return 1
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
        with Progress(
            "consume", args.count, err, mode=_progress_mode(args, out, err),
            interval_ms=args.progress_interval,
        ) as progress:  # fmt: skip
            consumed = _loop(consumer, args, out, progress, stop)
    except ClientError as exc:
        print(f"aeromq consume: {type(exc).__name__}: {exc}", file=err)
        return 1
    finally:
        consumer.shutdown()
        signal.signal(signal.SIGINT, previous)
    elapsed = time.monotonic() - start
    print(
        f"consumed={consumed} group={config.consumer_group} elapsed_s={elapsed:.3f} "
        f"msgs_per_s={consumed / max(elapsed, 1e-9):.0f}",
        file=err,
    )
    return 0


def _progress_mode(args: argparse.Namespace, out: TextIO, err: TextIO) -> str:
    """``--progress``, but ``auto`` shows none while messages are printed to the terminal the
    progress would be drawn on (the messages are the progress there)."""
    if args.progress == "auto" and not args.quiet and out.isatty() and err.isatty():
        return "none"
    return str(args.progress)


def _loop(
    consumer: DefaultLitePullConsumer,
    args: argparse.Namespace,
    out: TextIO,
    progress: Progress,
    stop: threading.Event,
) -> int:
    """Poll, print and commit until the count, the idle time or a signal; returns the count."""
    consumed = 0
    last_message = time.monotonic()
    while not stop.is_set():
        messages = consumer.poll()
        now = time.monotonic()
        if not messages:
            if args.idle and (now - last_message) * 1e3 >= args.idle:
                break
            continue
        last_message = now
        if args.count:
            messages = messages[: args.count - consumed]  # beyond: neither printed nor committed
        if not args.quiet:
            for message in messages:
                line = (
                    message_json(message, args.max_body)
                    if args.json
                    else format_message(message, args.max_body)
                )
                print(line, file=out)
            out.flush()
        next_offsets: dict[MessageQueue, int] = {}
        for message in messages:
            queue = MessageQueue(message.topic, message.broker_name, message.queue_id)
            next_offsets[queue] = max(next_offsets.get(queue, 0), message.queue_offset + 1)
        consumer.commit(next_offsets, persist=False)
        consumed += len(messages)
        progress.advance(len(messages))
        if args.count and consumed >= args.count:
            break
    return consumed
