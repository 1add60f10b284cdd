"""The pyzmq baseline of ``bench ipc`` and ``bench ringbuffer``: its producer stays until the
consumer has every record (libzmq may drop a closing sender's queued tail), and a consumer that
waits in vain fails the case, naming how many records arrived, instead of hanging it."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

zmq = pytest.importorskip("zmq")

from bench.suites import ringbuffer  # noqa: E402 - after the skip: the module imports zmq


def test_should_keep_the_producer_until_the_consumer_has_every_record(tmp_path: Path) -> None:
    address = f"ipc://{tmp_path}/stay"
    context = zmq.Context()
    pull = context.socket(zmq.PULL)
    pull.setsockopt(zmq.RCVTIMEO, 30_000)
    pull.bind(address)
    received = threading.Event()
    barrier = threading.Barrier(1)
    producer = threading.Thread(
        target=ringbuffer._zmq_producer, args=(address, 64, 64, 6_400, received, barrier)
    )
    producer.start()
    try:
        frames = 0
        while frames < 6_400:
            frames += len(pull.recv_multipart())
        producer.join(0.5)
        assert producer.is_alive()  # every record sent and read, the socket still open
    finally:
        received.set()
        producer.join(30)
        pull.close(linger=0)
        context.term()
    assert not producer.is_alive()


def test_should_fail_a_consumer_whose_records_stop_coming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ringbuffer, "_ZMQ_STALL_MS", 300)
    address = f"ipc://{tmp_path}/short"
    context = zmq.Context()
    push = context.socket(zmq.PUSH)
    push.connect(address)
    for seq in range(10):  # 10 of the 11 the consumer waits for
        push.send(seq.to_bytes(8, "little") + bytes(56))
    with pytest.raises(RuntimeError, match="pyzmq consumer: 10 of 11 records, then none for 300"):
        ringbuffer._zmq_consumer(address, 11, 1, threading.Event(), threading.Barrier(1), None)
    push.close(linger=0)
    context.term()


def test_should_measure_the_pyzmq_pair_across_processes(tmp_path: Path) -> None:
    rate = ringbuffer._throughput("zmq", str(tmp_path), 64, 64, 6_400)
    assert rate > 0
