"""The first ``send()`` after a quiet while takes the warm path: the same calls as the sends that
follow it, and its caller's wait ends on the broker's ring, not on a timeout
(docs/latency.md, "The first request after a quiet minute").

Speed is not asserted here (``python -m bench latency``'s ``aeromq:cold:*`` rows measure it):
on a virtual machine the first send after a quiet second costs several times the CPU of a warm
one for the same calls, because the caches, TLBs and page tables went cold. What a test can hold
is that nothing extra runs then: no route fetch, no reconnect, no wait that a timer ends.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

import aeromq
from aeromq.broker.testing import ServerProcess, start_broker_process
from aeromq.client import Message
from aeromq.producer import Producer, ProducerConfig
from aeromq.transport.concurrent.doorbell import FUTEX_TIMED_OUT, Doorbell
from tests._servers import serving
from tests.system.test_idle_cpu import BROKER_ARGS  # defaults but for a small store

TOPIC = "cold"
QUIET_S = 1.2  # past the backoffs' deep idle (1 s) and the agent's parks after a connect
ROUNDS = 2
WARM_SENDS = 10
WARM_GAP_S = 0.02
_PACKAGE = str(Path(aeromq.__file__).resolve().parent.parent)

Call = tuple[str, str]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[ServerProcess]:
    with serving(
        start_broker_process(tmp_path / "broker", extra_args=BROKER_ARGS), {TOPIC: 1}
    ) as server:
        yield server


class _Recorder:
    """The package's Python functions one thread calls, and its doorbell waits' results."""

    def __init__(self) -> None:
        self.calls: set[Call] = set()
        self.waits: list[int] = []

    def _profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(_PACKAGE):
                self.calls.add((code.co_filename, code.co_name))

    def send(self, producer: Producer, monkeypatch: pytest.MonkeyPatch) -> tuple[set[Call], int]:
        """One ``send()`` traced: its calls and how many of its doorbell waits timed out."""
        self.calls, self.waits = set(), []
        original = Doorbell.await_ring
        waits = self.waits

        def await_ring(bell: Doorbell, observed: int, timeout_ns: int) -> int:
            result = original(bell, observed, timeout_ns)
            waits.append(result)
            return result

        monkeypatch.setattr(Doorbell, "await_ring", await_ring)
        sys.setprofile(self._profile)
        try:
            producer.send(Message(TOPIC, b"c" * 100))
        finally:
            sys.setprofile(None)
            monkeypatch.setattr(Doorbell, "await_ring", original)
        return self.calls, sum(1 for result in waits if result == FUTEX_TIMED_OUT)


def test_should_send_after_a_quiet_while_on_the_warm_path(
    broker: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ProducerConfig(route_refresh_interval_ms=600_000)  # no route fetch in the test
    recorder = _Recorder()
    with Producer("cold-send", [broker.grpc_address], config=config) as producer:
        for _ in range(20):
            producer.send(Message(TOPIC, b"w" * 100))
        warm_calls: set[Call] = set()
        cold: list[tuple[set[Call], int]] = []
        for _ in range(ROUNDS):
            time.sleep(QUIET_S)
            cold.append(recorder.send(producer, monkeypatch))
            for _ in range(WARM_SENDS):
                time.sleep(WARM_GAP_S)
                warm_calls |= recorder.send(producer, monkeypatch)[0]
    for calls, timed_out in cold:
        assert timed_out == 0, "the caller's wait for its answer ended on a timeout, not a ring"
        extra = sorted(f"{Path(file).name}:{name}" for file, name in calls - warm_calls)
        assert not extra, f"a send after {QUIET_S} s of quiet called what no warm send did: {extra}"
