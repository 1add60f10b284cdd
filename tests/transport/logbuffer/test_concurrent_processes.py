"""Two processes append to one mapped log with the concurrent appender while this one reads.

The writers share the tail (and race for every frame and every rotation); flow control holds
them within half a term of the reader, which cleans each term it finishes, so the 64 KiB log
rotates hundreds of times. Every message, some fragmented, must arrive intact, and each
writer's messages in the order it wrote them.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time
from pathlib import Path

from aeromq.transport.concurrent import AtomicBuffer, MappedFile
from aeromq.transport.logbuffer import FragmentAssembler, Header, LogBuffers
from tests.transport.logbuffer._harness import MTU_LENGTH, Publisher, Subscriber, create_log

TERM_LENGTH = 64 * 1024
MESSAGES_PER_WRITER = 4000
WRITERS = 2
DEADLINE_S = 60.0


def _payload(writer: int, sequence: int) -> bytes:
    rng = random.Random(writer * 1_000_003 + sequence)
    size = rng.randint(8, 64) if rng.random() < 0.5 else rng.randint(8, 2 * MTU_LENGTH)
    stamp = writer.to_bytes(2, "little") + sequence.to_bytes(4, "little")
    body = bytes([(writer * 31 + sequence) % 256]) * (size - 8)
    return stamp + body + bytes(2)


def _write(log_path: str, position_path: str, writer: int, start: mp.synchronize.Barrier) -> None:
    log = LogBuffers.map(log_path)
    positions = MappedFile.open(position_path)
    subscriber_position = positions.buffer
    publisher = Publisher(
        log, limit=lambda: subscriber_position.get_int64_volatile(0) + TERM_LENGTH // 2
    )
    start.wait(30)  # all writers mapped and ready: go together
    deadline = time.monotonic() + DEADLINE_S
    for sequence in range(MESSAGES_PER_WRITER):
        payload = _payload(writer, sequence)
        while publisher.offer(payload) < 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"writer {writer} stuck at message {sequence}")
            os.sched_yield()
    positions.close()
    log.close()


def test_should_deliver_every_message_from_two_writer_processes_intact_and_in_order(
    shm_dir: Path,
) -> None:
    log_path = shm_dir / "shared.logbuffer"
    position_path = shm_dir / "sub-pos"
    log = create_log(log_path, TERM_LENGTH)
    positions = MappedFile.create(position_path, 64)
    subscriber = Subscriber(log, positions.buffer)
    next_sequence = [0] * WRITERS
    received = 0
    last_writer = -1
    switches = 0

    def on_message(buffer: AtomicBuffer, offset: int, length: int, header: Header) -> None:
        nonlocal received, last_writer, switches
        payload = buffer.get_bytes(offset, length)
        writer = int.from_bytes(payload[:2], "little")
        switches += writer != last_writer
        last_writer = writer
        sequence = int.from_bytes(payload[2:6], "little")
        assert sequence == next_sequence[writer], (writer, sequence)
        assert payload == _payload(writer, sequence)
        next_sequence[writer] += 1
        received += 1

    assembler = FragmentAssembler(on_message)
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(WRITERS + 1)
    writers = [
        ctx.Process(target=_write, args=(str(log_path), str(position_path), w, start))
        for w in range(WRITERS)
    ]
    for process in writers:
        process.start()
    try:
        start.wait(30)
        deadline = time.monotonic() + DEADLINE_S
        while received < WRITERS * MESSAGES_PER_WRITER:
            assert time.monotonic() < deadline, (
                f"received {received} of {WRITERS * MESSAGES_PER_WRITER}"
            )
            if subscriber.poll(assembler, 64) == 0:
                if not any(p.is_alive() for p in writers) and subscriber.poll(assembler, 64) == 0:
                    break
                os.sched_yield()
        for process in writers:
            process.join(30)
            assert process.exitcode == 0
    finally:
        for process in writers:
            if process.is_alive():
                process.kill()
                process.join(5)
    assert next_sequence == [MESSAGES_PER_WRITER] * WRITERS
    assert subscriber.position > 50 * TERM_LENGTH  # many rotations
    assert switches > 20  # the writers really were interleaved
    positions.close()
    log.close()
