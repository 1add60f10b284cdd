"""One member of the quickstart's consumer group, in a process of its own (private to
``aeromq quickstart``).

A ``DefaultLitePullConsumer`` (cluster mode, from the first offset) polls the topic, checks each
message's CRC, and every :data:`REPORT_INTERVAL_S` puts a :class:`Report` on the events queue:
the sequence numbers received since the last one, its owned queues and its position in each.
At ``stop`` it commits, shuts down (persisting the offsets) and sends a last report with every
latency sample. The bodies (:func:`body`) carry a sequence number, the send time and a CRC:

    0                   1                   2                   3
    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
   +---------------------------------------------------------------+  0 SEQ_OFFSET
   |                  Sequence number (int64, LE)                  |
   +---------------------------------------------------------------+  8 SENT_NS_OFFSET
   |            Send time, epoch ns (int64, LE)                    |
   +---------------------------------------------------------------+ 16 CRC_OFFSET
   |            CRC-32 of the filler (uint32, LE)                  |
   +---------------------------------------------------------------+ 20 HEADER_LENGTH
   |                          Filler                              ...
"""

from __future__ import annotations

import time
import zlib
from array import array
from dataclasses import dataclass, field
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Event
from struct import Struct
from typing import Final

__all__ = ["GROUP", "HEADER", "TOPIC", "Report", "body", "run_member"]

TOPIC: Final = "QuickStart"
GROUP: Final = "quickstart-consumers"
SEQ_OFFSET: Final = 0
SENT_NS_OFFSET: Final = SEQ_OFFSET + 8
CRC_OFFSET: Final = SENT_NS_OFFSET + 8
HEADER_LENGTH: Final = CRC_OFFSET + 4
HEADER: Final = Struct("<qqI")
assert HEADER.size == HEADER_LENGTH
REPORT_INTERVAL_S: Final = 0.25
_MEMBER_DEADLINE_S: Final = 600.0  # a member left behind by a dead parent stops by itself


def body(seq: int, size: int, sent_ns: int) -> bytes:
    """A message body of ``size`` bytes (at least :data:`HEADER_LENGTH`)."""
    filler = (seq.to_bytes(8, "little") * (size // 8 + 1))[: max(0, size - HEADER_LENGTH)]
    return HEADER.pack(seq, sent_ns, zlib.crc32(filler)) + filler


@dataclass
class Report:
    """What a member tells the quickstart (picklable; sent over a multiprocessing queue)."""

    member: str
    seqs: bytes = b""  # array('q') of the sequence numbers received since the last report
    received: int = 0  # messages received so far, duplicates included
    corrupt: int = 0
    queues: tuple[int, ...] = ()  # the queue ids owned now
    positions: dict[int, int] = field(default_factory=dict)  # queue id -> next offset
    latencies_us: bytes = b""  # array('q'), in the last report only
    final: bool = False
    cpu_s: float = 0.0  # the member's CPU time since its consumer started (user + system)


def run_member(name: str, grpc_address: str, events: Queue[Report], stop: Event) -> None:
    """Consume until ``stop`` is set; report to ``events``. Runs in its own process."""
    from aeromq.consumer import ConsumeFromWhere, DefaultLitePullConsumer, LitePullConsumerConfig

    config = LitePullConsumerConfig(
        consumer_group=GROUP,
        endpoints=tuple(grpc_address.split(",")),  # one address, or a broker group's "a,b,c"
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        poll_timeout_ms=100,
        instance_name=name,
        rebalance_interval_ms=1_000,  # a member that joins is given queues within a second
        auto_commit_interval_ms=1_000,
    )
    seqs = array("q")
    latencies_us = array("q")
    positions: dict[int, int] = {}
    received = corrupt = 0
    deadline = time.monotonic() + _MEMBER_DEADLINE_S
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    consumer.start()
    cpu_start_s = time.process_time()  # from here: consuming, not the process's start-up

    def report(queues: tuple[int, ...], final: bool = False) -> Report:
        """What was received since the last report (the latencies go in the final one)."""
        return Report(
            name,
            seqs.tobytes(),
            received,
            corrupt,
            queues,
            dict(positions),
            latencies_us.tobytes() if final else b"",
            final,
            time.process_time() - cpu_start_s,
        )

    try:
        next_report = time.monotonic()
        while not stop.is_set() and time.monotonic() < deadline:
            messages = consumer.poll()
            now_ns = time.time_ns()
            for message in messages:
                data = message.body
                seq, sent_ns, crc = HEADER.unpack_from(data)
                received += 1
                if zlib.crc32(data[HEADER_LENGTH:]) != crc:
                    corrupt += 1
                    continue
                seqs.append(seq)
                latencies_us.append((now_ns - sent_ns) // 1000)
                positions[message.queue_id] = message.queue_offset + 1
            if time.monotonic() >= next_report:
                next_report = time.monotonic() + REPORT_INTERVAL_S
                queues = tuple(sorted(q.queue_id for q in consumer.assignment()))
                events.put(report(queues))
                seqs = array("q")
        queues = tuple(sorted(q.queue_id for q in consumer.assignment()))
        consumer.commit()
    finally:
        consumer.shutdown()  # persists the committed offsets
    events.put(report(queues, final=True))
