"""``aeromq quickstart``: the main job on defaults, end to end, with a one-screen report.

1. A broker process (``aeromq broker``: embedded media driver, durable store, gRPC control plane,
   transport ingress) on a free gRPC port and a free UDP ingress port (not the fixed default
   40456, which a second quickstart or any other broker on the host may hold), its data in a
   temporary directory.
2. A topic with 4 queues, created over gRPC.
3. A consumer process (``DefaultLitePullConsumer``, cluster mode) subscribed to the topic.
4. A producer (this process) sending checksummed messages in batches over the transport, 8
   batches in flight.
5. The consumer checks every message (sequence number and CRC) and reports; the broker is shut
   down gracefully. Exit code 0 only if every message arrived intact, at least once.

The report gives msgs/s and CPU per message of the producer, the consumer and the broker.
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import shutil
import struct
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from aeromq.transport.tools.cli import command_parser, setup_logging

TOPIC = "QuickStart"
_GROUP = "quickstart-consumers"
_HEAD = struct.Struct("<qI")  # sequence number, crc32 of the rest of the body
_DEADLINE_S = 120.0
_WINDOW = 8  # batches in flight


def _body(seq: int, size: int) -> bytes:
    filler = (seq.to_bytes(8, "little") * (size // 8 + 1))[: max(0, size - _HEAD.size)]
    return _HEAD.pack(seq, zlib.crc32(filler)) + filler


def _consume(grpc_address: str, count: int, ready: Connection, result: Connection) -> None:
    from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig

    config = LitePullConsumerConfig(
        consumer_group=_GROUP,
        endpoints=(grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=200,
    )
    seen: set[int] = set()
    duplicates = corrupt = 0
    cpu_s = 0.0
    with DefaultLitePullConsumer(config=config) as consumer:
        consumer.subscribe(TOPIC, "*")
        ready.send(True)
        deadline = time.monotonic() + _DEADLINE_S
        start = 0.0
        while len(seen) < count and time.monotonic() < deadline:
            for message in consumer.poll():
                if not start:
                    start = time.perf_counter()
                    cpu_s = time.process_time()
                body = message.body
                seq, crc = _HEAD.unpack_from(body)
                if zlib.crc32(body[_HEAD.size :]) != crc:
                    corrupt += 1
                elif seq in seen:
                    duplicates += 1
                else:
                    seen.add(seq)
        elapsed = time.perf_counter() - start if start else 0.0
        cpu_s = time.process_time() - cpu_s if start else 0.0
        consumer.commit()
    result.send((len(seen), duplicates, corrupt, elapsed, cpu_s))


def _process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _per_message_us(cpu_s: float, count: int) -> str:
    return f"{cpu_s * 1e6 / count:.1f} us" if count and cpu_s else "n/a"


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq quickstart`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq quickstart",
        "Run the main job end to end on defaults: a broker in a temporary directory, a topic, "
        "a producer and a consumer, every message checked; exit 0 only if all arrived intact.",
        ["aeromq quickstart", "aeromq quickstart --messages 1000 --size 1024"],
    )
    parser.add_argument("--messages", type=int, default=20_000, help="how many to send")
    parser.add_argument("--size", type=int, default=100, help="message body size, bytes")
    parser.add_argument("--batch", type=int, default=32, help="messages per send request")
    parser.add_argument(
        "--data-dir", type=Path, help="broker data directory; default: a temporary directory"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(args)
    if args.messages <= 0 or args.size < _HEAD.size or args.batch <= 0:
        parser.error(f"need --messages > 0, --size >= {_HEAD.size} and --batch > 0")

    from aeromq.broker.testing import start_broker_process
    from aeromq.client import Message
    from aeromq.client.grpc_client import GrpcClient
    from aeromq.producer import Producer

    scratch: Path | None = None
    if args.data_dir is None:
        scratch = Path(tempfile.mkdtemp(prefix="aeromq-quickstart-"))
    data_dir: Path = args.data_dir if scratch is None else scratch
    broker = start_broker_process(
        data_dir, name="quickstart-broker", extra_args=["--ingress-udp-endpoint", "127.0.0.1:0"]
    )
    ok = False
    try:
        print(f"broker:    pid={broker.pid} grpc={broker.grpc_address} data={data_dir}")
        with GrpcClient(broker.grpc_address, timeout_s=10.0) as admin:
            admin.create_topic(TOPIC, read_queue_nums=4, write_queue_nums=4)
        print(f"topic:     {TOPIC} with 4 queues")

        ctx = mp.get_context("spawn")
        ready_rx, ready_tx = ctx.Pipe(duplex=False)
        result_rx, result_tx = ctx.Pipe(duplex=False)
        consumer = ctx.Process(
            target=_consume,
            args=(broker.grpc_address, args.messages, ready_tx, result_tx),
            daemon=True,
        )
        consumer.start()
        if not ready_rx.poll(60):
            print("consumer did not start within 60 s", file=sys.stderr)
            return 1

        broker_cpu_s = _process_cpu_s(broker.pid)
        with Producer("quickstart-producers", broker.grpc_address) as producer:
            producer.fetch_publish_queues(TOPIC)  # the route, before the clock starts
            start = time.perf_counter()
            cpu_s = time.process_time()
            window: collections.deque[Future[Any]] = collections.deque()
            for first in range(0, args.messages, args.batch):
                last = min(first + args.batch, args.messages)
                batch = [
                    Message(TOPIC, _body(seq, args.size), keys=(str(seq),))
                    for seq in range(first, last)
                ]
                window.append(producer.send_batch_async(batch))
                if len(window) >= _WINDOW:
                    window.popleft().result(_DEADLINE_S)
            for future in window:
                future.result(_DEADLINE_S)
            sent_s = time.perf_counter() - start
            cpu_s = time.process_time() - cpu_s
        print(
            f"produced:  {args.messages:,} messages of {args.size} B in {sent_s:.2f} s "
            f"({args.messages / sent_s:,.0f} msgs/s, acknowledged; batches of {args.batch}, "
            f"{_WINDOW} in flight; producer CPU {_per_message_us(cpu_s, args.messages)}/msg)"
        )

        received = duplicates = corrupt = 0
        recv_s = consumer_cpu_s = 0.0
        if result_rx.poll(_DEADLINE_S):
            received, duplicates, corrupt, recv_s, consumer_cpu_s = result_rx.recv()
        broker_cpu_s = _process_cpu_s(broker.pid) - broker_cpu_s
        consumer.join(30)
        rate = received / recv_s if recv_s else 0.0
        print(
            f"consumed:  {received:,} distinct messages, {rate:,.0f} msgs/s, {duplicates} "
            f"duplicates, {corrupt} corrupt; consumer CPU "
            f"{_per_message_us(consumer_cpu_s, received)}/msg"
        )
        print(
            f"broker:    CPU {_per_message_us(broker_cpu_s, args.messages)}/msg "
            "(produce and pull, with its embedded media driver)"
        )
        ok = received == args.messages and corrupt == 0
    finally:
        code = broker.stop()
        print(f"broker:    stopped (exit {code})")
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    print(
        "result:    OK, every message stored, delivered and intact" if ok else "result:    FAILED"
    )
    return 0 if ok else 1
