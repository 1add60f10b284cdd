"""A producer calling ``send()`` back to back polls for each answer rather than sleeping on its
session's doorbell for it (``ProducerConfig.back_to_back_spin_us``, ``client/_back_to_back.py``);
with the setting at 0 it sleeps for every answer. Against a broker process over IPC.

How fast is not asserted here (``python -m bench latency``'s send-only row measures it): the
window is made long enough for a loaded machine, any request within a second of the answer
before counts as back to back (a loaded machine preempts the loop), and what is held is whether
the caller slept. The broker is ``test_cold_send``'s: a process on its defaults but for a small
store, with one topic.
"""

from __future__ import annotations

import threading

import pytest

from aeromq.broker.testing import ServerProcess
from aeromq.client import Message, _back_to_back
from aeromq.client._back_to_back import BACK_TO_BACK_SCORE_POLLS
from aeromq.producer import Producer, ProducerConfig
from aeromq.transport.concurrent.doorbell import Doorbell
from tests.system import test_cold_send

TOPIC = test_cold_send.TOPIC
broker = test_cold_send.broker  # the fixture: a broker process with TOPIC

SENDS = 40


@pytest.fixture
def any_request_back_to_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any request within a second of the answer before counts as back to back: the loop's
    waits for the interpreter (the producer's other threads) and a loaded machine's long gaps
    are not taken for a paced caller's sleeps."""
    monkeypatch.setattr(_back_to_back, "voluntary_switches", lambda: 0)
    monkeypatch.setattr(_back_to_back, "RAN_WITHIN_NS", 1_000_000_000)


def _sleeps_of_sends(broker: ServerProcess, monkeypatch: pytest.MonkeyPatch, spin_us: int) -> int:
    """How many times the sending thread slept on a doorbell over ``SENDS`` back-to-back sends."""
    sleeps = [0]
    thread = threading.get_ident()
    original = Doorbell.await_ring

    def await_ring(bell: Doorbell, observed: int, timeout_ns: int) -> int:
        if threading.get_ident() == thread:
            sleeps[0] += 1
        return original(bell, observed, timeout_ns)

    config = ProducerConfig(back_to_back_spin_us=spin_us)
    with Producer("b2b", broker.grpc_address, config=config) as producer:
        producer.send(Message(TOPIC, b"warm"))
        monkeypatch.setattr(Doorbell, "await_ring", await_ring)
        try:
            for i in range(SENDS):
                producer.send(Message(TOPIC, b"%d" % i))
        finally:
            monkeypatch.setattr(Doorbell, "await_ring", original)
    return sleeps[0]


@pytest.mark.usefixtures("any_request_back_to_back")
def test_should_poll_for_each_answer_once_sending_back_to_back(
    broker: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps = _sleeps_of_sends(broker, monkeypatch, spin_us=200_000)
    # one a send until the score reaches its mark, then none but what a poll's spurious end adds
    assert sleeps <= BACK_TO_BACK_SCORE_POLLS + 4, sleeps


@pytest.mark.usefixtures("any_request_back_to_back")
def test_should_sleep_for_each_answer_with_the_polls_off(
    broker: ServerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    sleeps = _sleeps_of_sends(broker, monkeypatch, spin_us=0)
    assert sleeps >= SENDS, sleeps
