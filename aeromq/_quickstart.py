"""``aeromq quickstart``: the main job on defaults, end to end, with a one-screen report.

Today it runs the transport end to end: an embedded media driver, a subscriber process and a
publisher process moving checksummed messages over ``aeron:ipc`` through shared memory, then
verifies that every message arrived intact and in order. It grows into broker + producer +
consumer as those layers land.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import struct
import sys
import time
import zlib
from collections.abc import Sequence
from multiprocessing.connection import Connection

_CHANNEL = "aeron:ipc?term-length=1m"
_STREAM_ID = 1001
_SEQ = struct.Struct("<qI")  # sequence number, crc32 of the rest of the payload
_DEADLINE_S = 120.0


def _payload(seq: int, size: int) -> bytes:
    body = random.Random(seq).randbytes(max(0, size - _SEQ.size))
    return _SEQ.pack(seq, zlib.crc32(body)) + body


def _subscribe(aeron_dir: str, count: int, ready: Connection, result: Connection) -> None:
    from transport.client import Aeron, AeronContext

    state = {"next": 0, "bad": 0, "bytes": 0}

    def on_fragment(buffer: object, offset: int, length: int, header: object) -> None:
        data = buffer.get_bytes(offset, length)  # type: ignore[attr-defined]
        seq, crc = _SEQ.unpack_from(data)
        if seq != state["next"] or zlib.crc32(data[_SEQ.size :]) != crc:
            state["bad"] += 1
        state["next"] = seq + 1
        state["bytes"] += length

    with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
        subscription = aeron.add_subscription(_CHANNEL, _STREAM_ID)
        ready.send(True)
        deadline = time.monotonic() + _DEADLINE_S
        start = 0.0
        while state["next"] < count and time.monotonic() < deadline:
            if subscription.poll(on_fragment, 256) and not start:
                start = time.perf_counter()
        elapsed = time.perf_counter() - start if start else 0.0
        result.send((state["next"], state["bad"], state["bytes"], elapsed))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aeromq quickstart", description=__doc__)
    parser.add_argument("--messages", type=int, default=200_000, help="how many to send")
    parser.add_argument("--max-size", type=int, default=1024, help="largest message in bytes")
    args = parser.parse_args(argv)
    if args.messages <= 0 or args.max_size < _SEQ.size:
        parser.error(f"need --messages > 0 and --max-size >= {_SEQ.size}")

    from transport.client import ADMIN_ACTION, BACK_PRESSURED, NOT_CONNECTED, Aeron, AeronContext
    from transport.driver import MediaDriver

    ctx = mp.get_context("spawn")
    with MediaDriver.launch_embedded() as driver:
        aeron_dir = str(driver.context.aeron_dir)
        print(f"media driver: embedded, dir={aeron_dir}")
        ready_rx, ready_tx = ctx.Pipe(duplex=False)
        result_rx, result_tx = ctx.Pipe(duplex=False)
        subscriber = ctx.Process(
            target=_subscribe, args=(aeron_dir, args.messages, ready_tx, result_tx), daemon=True
        )
        subscriber.start()
        if not ready_rx.poll(30):
            print("subscriber did not start within 30 s", file=sys.stderr)
            return 1
        sizes = random.Random(7)
        with Aeron.connect(AeronContext(aeron_dir=aeron_dir)) as aeron:
            publication = aeron.add_publication(_CHANNEL, _STREAM_ID)
            deadline = time.monotonic() + _DEADLINE_S
            while not publication.is_connected and time.monotonic() < deadline:
                time.sleep(0.001)
            messages = [
                _payload(i, sizes.randint(_SEQ.size, args.max_size)) for i in range(args.messages)
            ]
            start = time.perf_counter()
            seq, retries = 0, 0
            while seq < args.messages and time.monotonic() < deadline:
                result = publication.offer(messages[seq])
                if result > 0:
                    seq += 1
                elif result in (BACK_PRESSURED, ADMIN_ACTION, NOT_CONNECTED):
                    retries += 1
                else:
                    print(f"offer failed: result={result} seq={seq}", file=sys.stderr)
                    return 1
            sent_s = time.perf_counter() - start
        received, bad, nbytes, recv_s = (
            result_rx.recv() if result_rx.poll(_DEADLINE_S) else (0, 0, 0, 0.0)
        )
        subscriber.join(10)

    rate = received / recv_s if recv_s else 0.0
    print(
        f"published: {seq:,} messages in {sent_s:.2f} s ({seq / sent_s:,.0f} msgs/s, {retries:,} back-pressure retries)"
    )
    print(
        f"received:  {received:,} messages, {nbytes / 1e6:.1f} MB, {rate:,.0f} msgs/s, {bad} corrupt or out of order"
    )
    ok = received == args.messages and bad == 0
    print("result:    OK, every message intact and in order" if ok else "result:    FAILED")
    return 0 if ok else 1
