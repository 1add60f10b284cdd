"""The official RocketMQ 5 Python client (``rocketmq-python-client``, import name ``rocketmq``) in
a process of its own, against a RocketMQ 5 endpoint: ``rocketmq5_official.py COMMAND ...``.

protobuf keeps one registry of message names per process, and the client carries its own copy of
the ``apache.rocketmq.v2`` schema that aeromq compiles too, so the client cannot share a process
with aeromq's broker modules: the tests (``tests/rocketmq5``) and the benchmark
(``bench/suites/rocketmq5.py``) run it here. It imports nothing of aeromq.

Commands (every one prints one JSON object on its last line of output):

- ``send ENDPOINT TOPIC COUNT [--tag T] [--key K]... [--property K=V]... [--group G] [--async]
  [--delay-s S]``: ``{"ids": [...]}``, the message ids in send order (bodies
  ``b"<prefix>-<i>"``); ``--delay-s``: delayed messages (``delivery_timestamp``, whole seconds).
- ``receive ENDPOINT TOPIC GROUP COUNT [--filter EXPR] [--sql] [--invisible-s S] [--no-ack]
  [--timeout-s T] [--await-s A]``: receives until ``COUNT`` messages came or ``--timeout-s``
  passed, acking each unless ``--no-ack``: ``{"messages": [{"id", "body", "tag", "keys",
  "properties", "attempt", "topic", "delivery_ms"}]}``.
- ``ack-stale ENDPOINT TOPIC GROUP``: receives one message with a 1 s invisible duration, waits
  until it is delivered again, then acks the first delivery's handle: ``{"error": ...}`` says
  how the broker refused it (``null`` if it did not).
- ``transact ENDPOINT TOPIC [--commit B]... [--rollback B]... [--check-commit B]...
  [--check-rollback B]... [--timeout-s T]``: sends each body ``B`` as a transactional message
  (``begin_transaction``) and commits or rolls it back, or leaves it to the broker's check-back,
  which the checker answers with a commit (``--check-commit``) or rollback; waits until every
  checked body was checked (or ``--timeout-s``): ``{"ids": {body: id}, "checked": [body, ...]}``.
- ``bench ENDPOINT TOPIC GROUP COUNT BODY_BYTES``: sends ``COUNT`` messages (``send_async``, 32
  in flight), then receives and acks them (batches of 32): ``{"send_s", "receive_s",
  "cpu_s"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from rocketmq import (  # type: ignore[import-untyped]  # the official client ships no types
    ClientConfiguration,
    Credentials,
    FilterExpression,
    Message,
    Producer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)
from rocketmq.grpc_protocol import FilterType  # type: ignore[import-untyped]  # as above

_BENCH_WINDOW = 32
_CHECK_ROUNDS = 3


def _config(endpoint: str) -> ClientConfiguration:
    return ClientConfiguration(endpoint, Credentials(), request_timeout=10)


def _message(topic: str, body: bytes, args: argparse.Namespace) -> Message:
    message = Message()
    message.topic = topic
    message.body = body
    if args.tag:
        message.tag = args.tag
    for key in args.key:
        message.keys = key
    for item in args.property:
        name, _, value = item.partition("=")
        message.add_property(name, value)
    if args.group:
        message.message_group = args.group
    if getattr(args, "delay_s", None):
        message.delivery_timestamp = int(time.time()) + args.delay_s
    return message


def _send(args: argparse.Namespace) -> dict[str, object]:
    producer = Producer(_config(args.endpoint), (args.topic,))
    producer.startup()
    try:
        ids: list[str] = []
        futures = []
        for i in range(args.count):
            message = _message(args.topic, f"{args.prefix}-{i}".encode(), args)
            if args.use_async:
                futures.append(producer.send_async(message))
            else:
                ids.append(producer.send(message).message_id)
        ids += [future.result(30).message_id for future in futures]
        return {"ids": ids}
    finally:
        producer.shutdown()


class _Checker(TransactionChecker):  # type: ignore[misc]  # an untyped base class
    """Answers the broker's check-backs by body; records each body checked."""

    def __init__(self, commit: Sequence[str], rollback: Sequence[str]) -> None:
        self.answers = {body: TransactionResolution.COMMIT for body in commit}
        self.answers.update({body: TransactionResolution.ROLLBACK for body in rollback})
        self.checked: list[str] = []

    def check(self, message: Message) -> object:
        body = bytes(message.body).decode()
        self.checked.append(body)
        return self.answers.get(body, TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED)


def _transact(args: argparse.Namespace) -> dict[str, object]:
    checker = _Checker(args.check_commit, args.check_rollback)
    producer = Producer(_config(args.endpoint), (args.topic,), checker)
    producer.startup()
    try:
        ids: dict[str, str] = {}
        ends = [(b, "commit") for b in args.commit] + [(b, "rollback") for b in args.rollback]
        ends += [(b, "") for b in (*args.check_commit, *args.check_rollback)]
        for body, end in ends:
            transaction = producer.begin_transaction()
            message = Message()
            message.topic = args.topic
            message.body = body.encode()
            ids[body] = producer.send(message, transaction).message_id
            if end == "commit":
                transaction.commit()
            elif end == "rollback":
                transaction.rollback()
        waited = {*args.check_commit, *args.check_rollback}
        for _ in range(_CHECK_ROUNDS):
            deadline = time.monotonic() + args.timeout_s / _CHECK_ROUNDS
            while not waited <= set(checker.checked) and time.monotonic() < deadline:
                time.sleep(0.05)
            if waited <= set(checker.checked):
                break
            # The client (5.0.x) can lose its telemetry stream's reader at start (two settings
            # writes at once: GRPC_CALL_ERROR_TOO_MANY_OPERATIONS, then "read stream ...
            # INTERNAL" in its log), and with it every check-back: a new producer reads again.
            producer.shutdown()
            producer = Producer(_config(args.endpoint), (args.topic,), checker)
            producer.startup()
        time.sleep(0.5)  # the last answer's EndTransaction is sent after check() returns
        return {"ids": ids, "checked": sorted(set(checker.checked))}
    finally:
        producer.shutdown()


def _consumer(args: argparse.Namespace) -> SimpleConsumer:
    kind = FilterType.SQL if getattr(args, "sql", False) else FilterType.TAG
    expression = FilterExpression(getattr(args, "filter", "*"), kind)
    consumer = SimpleConsumer(
        _config(args.endpoint), args.consumer_group, {args.topic: expression}, args.await_s
    )
    consumer.startup()
    return consumer


def _describe(message: Message) -> dict[str, object]:
    return {
        "id": message.message_id,
        "topic": message.topic,
        "body": message.body.decode(errors="replace"),
        "tag": message.tag,
        "keys": sorted(message.keys),
        "properties": dict(message.properties),
        "attempt": message.delivery_attempt,
        "delivery_ms": _delivery_ms(message),
    }


def _delivery_ms(message: Message) -> int | None:
    """A received delayed message's delivery time (a protobuf Timestamp), epoch ms."""
    stamp = message.delivery_timestamp
    return stamp.ToMilliseconds() or None if stamp is not None else None


def _receive(args: argparse.Namespace) -> dict[str, object]:
    consumer = _consumer(args)
    try:
        found: list[dict[str, object]] = []
        deadline = time.monotonic() + args.timeout_s
        while len(found) < args.count and time.monotonic() < deadline:
            for message in consumer.receive(args.count - len(found), args.invisible_s):
                found.append(_describe(message))
                if not args.no_ack:
                    consumer.ack(message)
        return {"messages": found}
    finally:
        consumer.shutdown()


def _ack_stale(args: argparse.Namespace) -> dict[str, object]:
    consumer = _consumer(args)
    try:
        first = _receive_one(consumer, 1)
        second = _receive_one(consumer, 30)
        error = None
        try:
            consumer.ack(first)
        except Exception as exc:  # the client's own exception for the broker's code
            error = f"{type(exc).__name__}: {exc}"
        consumer.ack(second)
        return {"error": error, "attempts": [first.delivery_attempt, second.delivery_attempt]}
    finally:
        consumer.shutdown()


def _receive_one(consumer: SimpleConsumer, invisible_s: int) -> Message:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        messages = consumer.receive(1, invisible_s)
        if messages:
            return messages[0]
    raise TimeoutError("no message within 60 s")


def _bench(args: argparse.Namespace) -> dict[str, object]:
    body = b"x" * args.body_bytes
    producer = Producer(_config(args.endpoint), (args.topic,))
    producer.startup()
    consumer = _consumer(args)
    try:
        producer.send(_message(args.topic, body, args))  # warm up: route, channel
        cpu = time.process_time()
        began = time.perf_counter()
        window = []
        for _ in range(args.count):
            window.append(producer.send_async(_message(args.topic, body, args)))
            if len(window) >= _BENCH_WINDOW:
                window.pop(0).result(30)
        for future in window:
            future.result(30)
        sent = time.perf_counter()
        received = 0
        deadline = time.monotonic() + 300
        while received < args.count + 1 and time.monotonic() < deadline:
            for message in consumer.receive(_BENCH_WINDOW, 30):
                consumer.ack(message)
                received += 1
        done = time.perf_counter()
        return {
            "send_s": sent - began,
            "receive_s": done - sent,
            "cpu_s": time.process_time() - cpu,
            "received": received - 1,
        }
    finally:
        consumer.shutdown()
        producer.shutdown()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rocketmq5_official.py")
    commands = parser.add_subparsers(dest="command", required=True)
    send = commands.add_parser("send")
    send.add_argument("endpoint")
    send.add_argument("topic")
    send.add_argument("count", type=int)
    receive = commands.add_parser("receive")
    stale = commands.add_parser("ack-stale")
    bench = commands.add_parser("bench")
    for command in (receive, stale, bench):
        command.add_argument("endpoint")
        command.add_argument("topic")
        command.add_argument("consumer_group")
        command.add_argument("--filter", default="*")
        command.add_argument("--sql", action="store_true")
        command.add_argument("--await-s", type=int, default=5)
    receive.add_argument("count", type=int)
    receive.add_argument("--invisible-s", type=int, default=30)
    receive.add_argument("--no-ack", action="store_true")
    receive.add_argument("--timeout-s", type=float, default=30.0)
    bench.add_argument("count", type=int)
    bench.add_argument("body_bytes", type=int)
    for command in (send, bench):
        command.add_argument("--tag")
        command.add_argument("--key", action="append", default=[])
        command.add_argument("--property", action="append", default=[])
        command.add_argument("--group")
    send.add_argument("--async", dest="use_async", action="store_true")
    send.add_argument("--prefix", default="m")
    send.add_argument("--delay-s", type=int, default=0, help="a delayed message, due this late")
    transact = commands.add_parser("transact")
    transact.add_argument("endpoint")
    transact.add_argument("topic")
    for end in ("commit", "rollback", "check-commit", "check-rollback"):
        transact.add_argument(f"--{end}", action="append", default=[])
    transact.add_argument("--timeout-s", type=float, default=30.0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    run = {
        "send": _send,
        "receive": _receive,
        "ack-stale": _ack_stale,
        "bench": _bench,
        "transact": _transact,
    }
    result = run[args.command](args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
