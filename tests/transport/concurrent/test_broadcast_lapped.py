"""A receiver too slow for a transmitter in another process: it notices each lap and recovers."""

from __future__ import annotations

import multiprocessing as mp
import struct
import time
from multiprocessing.synchronize import Event
from pathlib import Path

from aeromq.transport.concurrent import MappedFile
from aeromq.transport.concurrent.broadcast_descriptor import TRAILER_LENGTH
from aeromq.transport.concurrent.broadcast_receiver import BroadcastReceiver
from aeromq.transport.concurrent.broadcast_transmitter import BroadcastTransmitter

CAPACITY = 4096
MESSAGES = 50_000
DATA, LAST = 1, 2
_SEQ = struct.Struct("<q")
_ctx = mp.get_context("spawn")


def _message(seq: int) -> bytes:
    return _SEQ.pack(seq) + bytes([seq & 0xFF]) * (seq % 57)


def _transmitter(path: str, started: Event) -> None:
    mapped = MappedFile.open(path)
    tx = BroadcastTransmitter(mapped.buffer)
    started.set()
    for seq in range(MESSAGES):
        tx.transmit(DATA, _message(seq))
    tx.transmit(LAST, _SEQ.pack(MESSAGES))
    mapped.close()


def test_should_notice_being_lapped_by_another_process_and_recover(shm_dir: Path) -> None:
    mapped = MappedFile.create(shm_dir / "to-clients.broadcast", CAPACITY + TRAILER_LENGTH)
    rx = BroadcastReceiver(mapped.buffer)
    buffer = rx.buffer()
    started = _ctx.Event()
    proc = _ctx.Process(target=_transmitter, args=(str(mapped.path), started))
    proc.start()
    received: list[int] = []
    torn = 0
    try:
        assert started.wait(60)
        deadline = time.monotonic() + 60
        done = False
        while not done:
            assert time.monotonic() < deadline, f"stuck after {len(received)} messages"
            if not rx.receive_next():
                continue
            msg_type_id = rx.type_id()  # from a header checked whole by receive_next
            data = buffer.get_bytes(rx.offset(), rx.length())
            if not rx.validate():
                torn += 1  # overwritten while we copied it: drop it, as a receiver must
                continue
            seq = _SEQ.unpack_from(data)[0]
            assert msg_type_id in (DATA, LAST)
            if msg_type_id == LAST:
                done = True
            else:
                assert data == _message(seq), f"message {seq} corrupted yet valid"
            received.append(seq)
            if len(received) % 50 == 0:
                time.sleep(0.001)  # a slow receiver: the transmitter laps it
    finally:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
            proc.join()
    assert proc.exitcode == 0
    assert rx.lapped_count() >= 1
    assert received == sorted(set(received))  # strictly increasing: no repeats, no going back
    assert received[-1] == MESSAGES
    assert len(received) < MESSAGES  # some were lost to the laps, as designed
    assert not rx.receive_next()
    mapped.close()
