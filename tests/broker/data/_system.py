"""Workers of the broker system tests (``tests/system/test_broker_*.py``), run in spawned
processes, and the checks of what they send and pull.

Every message body names its producer and sequence and is padded with bytes derived from them,
so a puller can check each body it reads, spot duplicates and gaps, and check the order per
queue. Workers report on a multiprocessing queue as tuples whose first item is their kind.
"""

from __future__ import annotations

import struct
import time
from typing import Any

from tests._pulled import pulled

__all__ = [
    "body_of",
    "long_poll_worker",
    "parse_body",
    "produce_worker",
    "pull_all",
    "pull_worker",
    "sender_worker",
]

BATCH = 32
WINDOW = 8
_HEAD = struct.Struct(">II")  # producer id, sequence


def body_of(producer_id: int, sequence: int, length: int = 100) -> bytes:
    head = _HEAD.pack(producer_id, sequence)
    pad = bytes((producer_id * 31 + sequence + i) & 0xFF for i in range(length - len(head)))
    return head + pad


def parse_body(body: bytes) -> tuple[int, int] | None:
    """(producer id, sequence) of an intact body, else None."""
    if len(body) < _HEAD.size:
        return None
    producer_id, sequence = _HEAD.unpack_from(body)
    return (producer_id, sequence) if body == body_of(producer_id, sequence, len(body)) else None


def _session(endpoints: dict[str, str], transport: str, **config: Any) -> tuple[Any, Any, Any]:
    """(driver or None, aeron, session) for a puller over IPC or UDP; ``config``: more
    ``SessionConfig`` fields."""
    from aeromq.client.session import ClientSession, SessionConfig
    from aeromq.transport.client import Aeron, AeronContext
    from aeromq.transport.driver import MediaDriver, MediaDriverContext

    driver = None
    if transport == "ipc":
        aeron = Aeron.connect(AeronContext(aeron_dir=endpoints["aeron_dir"]))
        config = SessionConfig(
            ingress_channel=endpoints["ipc_channel"],
            ingress_stream_id=int(endpoints["ipc_stream_id"]),
            request_timeout_ms=30_000,
            **config,
        )
    else:
        driver = MediaDriver.launch_embedded(MediaDriverContext(term_buffer_sparse_file=True))
        aeron = Aeron.connect(AeronContext(aeron_dir=driver.aeron_dir))
        config = SessionConfig(
            ingress_channel=endpoints["udp_channel"],
            ingress_stream_id=int(endpoints["udp_stream_id"]),
            response_channel="aeron:udp?endpoint=127.0.0.1:0",
            request_timeout_ms=30_000,
            **config,
        )
    return driver, aeron, ClientSession.connect(aeron, config)


def produce_worker(
    grpc: str, topic: str, producer_id: int, count: int, transport: str, results: Any
) -> None:
    """Send ``count`` messages in pipelined batches; report ("produced", id, count, seconds)."""
    from aeromq.client import Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(transport=transport, send_timeout_ms=30_000)
    with Producer("system-producers", grpc, config=config) as producer:
        window: list[Any] = []
        began = time.monotonic()
        for start in range(0, count, BATCH):
            stop = min(count, start + BATCH)
            batch = [Message(topic, body_of(producer_id, seq)) for seq in range(start, stop)]
            window.append(producer.send_batch_async(batch))
            if len(window) >= WINDOW:
                window.pop(0).result(60)
        for future in window:
            future.result(60)
        results.put(("produced", producer_id, count, time.monotonic() - began))


def pull_worker(
    endpoints: dict[str, str],
    topic: str,
    queues: int,
    expected: int,
    transport: str,
    results: Any,
) -> None:
    """Pull every queue (one long poll in flight each) until ``expected`` messages came, or
    60 s passed; report ("pulled", received, duplicates, corrupt, out_of_order, seconds)."""
    from aeromq.proto import messages_pb2

    driver, aeron, session = _session(endpoints, transport)
    try:
        results.put(("puller-ready",))
        offsets = [0] * queues
        seen: set[tuple[int, int]] = set()
        last: dict[tuple[int, int], int] = {}
        received = duplicates = corrupt = out_of_order = 0

        def issue(queue_id: int) -> Any:
            return session.request_async(
                messages_pb2.PullMessageRequest(
                    consumer_group="system-pullers",
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=offsets[queue_id],
                    max_msg_nums=32,
                    suspend_timeout_ms=1_000,
                    commit_offset=-1,
                ),
                30_000,
            )

        pending = [issue(q) for q in range(queues)]
        began = time.monotonic()
        deadline = began + 60
        while received < expected and time.monotonic() < deadline:
            idle = True
            for queue_id in range(queues):
                future = pending[queue_id]
                if not future.done():
                    continue
                idle = False
                response = future.result()
                for message in pulled(response, topic, queue_id, offsets[queue_id]):
                    received += 1
                    ids = parse_body(message.body)
                    if ids is None:
                        corrupt += 1
                        continue
                    if ids in seen:
                        duplicates += 1
                    seen.add(ids)
                    key = (queue_id, ids[0])
                    if last.get(key, -1) >= ids[1]:
                        out_of_order += 1
                    last[key] = ids[1]
                if response.pull_status != messages_pb2.NO_NEW_MSG:
                    offsets[queue_id] = response.next_begin_offset
                pending[queue_id] = issue(queue_id)
            if idle:
                time.sleep(0.0005)
        results.put(
            ("pulled", received, duplicates, corrupt, out_of_order, time.monotonic() - began)
        )
    finally:
        session.close()
        aeron.close()
        if driver is not None:
            driver.close()


def long_poll_worker(
    endpoints: dict[str, str], topic: str, queue_id: int, rounds: int, results: Any
) -> None:
    """Per round: hold a long poll at the queue's end, report ("holding", round), then
    ("answered", round, monotonic ns at the answer, pull status, messages)."""
    from aeromq.proto import messages_pb2

    _driver, aeron, session = _session(endpoints, "ipc")
    try:
        offset = 0
        for round_ in range(rounds):
            future = session.request_async(
                messages_pb2.PullMessageRequest(
                    consumer_group="system-long-poll",
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=offset,
                    suspend_timeout_ms=10_000,
                    commit_offset=-1,
                ),
                20_000,
            )
            results.put(("holding", round_))
            while not future.done():  # the test's clock: note the answer as soon as it comes
                time.sleep(0.0002)
            answered_ns = time.monotonic_ns()
            response = future.result()
            count = len(pulled(response, topic, queue_id, offset))
            offset = response.next_begin_offset
            results.put(("answered", round_, answered_ns, response.pull_status, count))
    finally:
        session.close()
        aeron.close()


_SENDER_GIVE_UP_S = 30.0
"""How long a sender goes on without an ack before it takes the broker for dead (the tests kill
it within seconds of killing the broker; this only ends a sender left behind)."""


def sender_worker(grpc: str, topic: str, results: Any) -> None:
    """Send one message after another, 16 in flight, until none is acknowledged for
    ``_SENDER_GIVE_UP_S`` (the broker died) or the test kills it; report ("acked", sequence,
    queue id, queue offset, monotonic ns) for each stored one, and ("stopped", acked, failed,
    last error) if it ends by itself.

    Not a count of failures: a loaded machine's SYNC flush can time out a whole window of 16
    sends at once (it once stopped the sender after 16 acks, the broker alive)."""
    from aeromq.client import ClientError, Message
    from aeromq.producer import Producer, ProducerConfig

    config = ProducerConfig(
        send_timeout_ms=1_500, retry_times_when_send_async_failed=0, transport="ipc"
    )
    acked = failed = 0
    last_error = ""
    last_ack = time.monotonic()
    with Producer("system-senders", grpc, config=config) as producer:
        window: list[tuple[int, Any]] = []
        sequence = 0
        while time.monotonic() - last_ack < _SENDER_GIVE_UP_S:
            try:
                window.append((sequence, producer.send_async(Message(topic, body_of(9, sequence)))))
            except ClientError as exc:
                failed += 1
                last_error = repr(exc)
                time.sleep(0.01)
                continue
            sequence += 1
            while len(window) >= 16 or (window and window[0][1].done()):
                seq, future = window.pop(0)
                try:
                    result = future.result(10)
                except ClientError as exc:
                    failed += 1
                    last_error = repr(exc)
                    continue
                acked += 1
                last_ack = time.monotonic()
                queue = result.message_queue
                results.put(
                    ("acked", seq, queue.queue_id, result.queue_offset, time.monotonic_ns())
                )
    results.put(("stopped", acked, failed, last_error))


def pull_all(session: Any, topic: str, queues: int) -> dict[tuple[int, int], bytes]:
    """Every message of the topic's queues: (queue id, queue offset) -> body."""
    from aeromq.proto import messages_pb2

    found: dict[tuple[int, int], bytes] = {}
    for queue_id in range(queues):
        offset = 0
        while True:
            response = session.request(
                messages_pb2.PullMessageRequest(
                    consumer_group="system-check",
                    topic=topic,
                    queue_id=queue_id,
                    queue_offset=offset,
                    max_msg_nums=32,
                    commit_offset=-1,
                ),
                10_000,
            )
            messages = pulled(response, topic, queue_id, offset)
            if not messages:
                break
            for message in messages:
                found[(queue_id, message.queue_offset)] = message.body
            offset = response.next_begin_offset
    return found
