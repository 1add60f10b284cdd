"""Who sleeps for an answer: ``python tail3.py N`` from a tree's root with it on ``PYTHONPATH``.
This process sends N messages back to back (after 3,000 unfollowed) to a broker process and
sorts each send by what its request did: ``P`` polled and had its answer within the window,
``PS`` polled, the window ran out and it slept, ``NS`` did not poll and slept (``v`` added when
the thread made a voluntary context switch since the answer before); per kind, how many sends,
their share of the run's time, their mean, and those over 100 us."""

from __future__ import annotations

import collections
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from aeromq.client import Message
from aeromq.client.grpc_client import GrpcClient
from aeromq.producer import Producer
from bench.suites.latency import _start_broker

_flags: list[str] = []
_switches = [0]


def _instrument() -> None:
    """Wrap the reader's decisions (private classes, named at run time as the hop tracer does)."""
    import importlib

    spin = importlib.import_module("aeromq.client._back_to_back").BackToBackSpin
    reader = importlib.import_module("aeromq.client._answer_readers").AnswerReader
    answered, should_poll, read = spin.answered, spin.should_poll, reader._read

    def counted_answered(self: object, now_ns: int) -> None:
        answered(self, now_ns)
        _switches[0] = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw

    def counted_should_poll(self: object, submitted_ns: int) -> bool:
        switched = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - _switches[0]
        polled: bool = should_poll(self, submitted_ns)
        _flags.append(("P" if polled else "N") + ("v" if switched else ""))
        return polled

    def counted_read(self: object, *args: object, **kwargs: object) -> None:
        _flags.append("S")
        read(self, *args, **kwargs)

    spin.answered = counted_answered
    spin.should_poll = counted_should_poll
    reader._read = counted_read


def main() -> None:
    _instrument()
    count = int(sys.argv[1])
    root = Path(tempfile.mkdtemp(prefix="tail-"))
    broker = _start_broker(root)
    try:
        GrpcClient(broker.grpc_address).create_topic("T")
        producer = Producer("g", endpoints=[broker.grpc_address])
        producer.start()
        body = b"x" * 100
        for _ in range(3_000):
            producer.send(Message("T", body))
        ends = [0] * (count + 1)
        kinds = [""] * count
        clock = time.perf_counter_ns
        ends[0] = clock()
        for i in range(count):
            _flags.clear()
            producer.send(Message("T", body))
            ends[i + 1] = clock()
            kinds[i] = "".join(_flags)
        total = ends[-1] - ends[0]
        print(f"rate {count / total * 1e9:.0f}/s")
        by: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
        for i in range(count):
            took = ends[i + 1] - ends[i]
            row = by[kinds[i]]
            row[0] += 1
            row[1] += took
            if took > 100_000:
                row[2] += 1
                row[3] += took
        for kind, (sends, spent, slow, slow_spent) in sorted(by.items(), key=lambda x: -x[1][1]):
            print(
                f"  {kind:4s} {sends:6d} sends {spent / total * 100:5.1f}% of time, "
                f"mean {spent / sends / 1e3:6.1f} us; >100us: {slow} sends "
                f"{slow_spent / total * 100:4.1f}% of time"
            )
        producer.shutdown()
    finally:
        broker.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
