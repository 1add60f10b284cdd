"""The consumer first after a quiet while (``broker/session/_answers.py``): a send stored after
``QUIET_YIELD_NS`` without one, whose store released a held pull and woke its sleeping consumer,
has the session agent give that consumer its CPU (``sched_yield()``, counted as
``quiet_yields``), whichever way the send was read; a send soon after the last does not."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from aeromq.broker.session import SessionAgent
from aeromq.broker.session import _answers as answers_module
from aeromq.broker.session import _dispatch as dispatch_module
from aeromq.client.session import ClientSession
from aeromq.common import PullAnswer
from aeromq.transport.concurrent.doorbell import SLEEPER_FLAG
from aeromq.transport.driver import MediaDriver

from .conftest import pull_request, send_request, wait_for
from .test_session_doorbells import _ipc_session, agent  # noqa: F401 (a fixture)

_HELD_MS = 5_000
_QUIET_S = 0.05  # far longer than QUIET_YIELD_NS


def _held_pull(session: ClientSession, offset: int) -> Future[PullAnswer]:
    return session.request_async(pull_request(offset=offset, suspend_timeout_ms=_HELD_MS))


def _asleep(session: ClientSession) -> bool:
    """Whether a reader of ``session`` sleeps on its doorbell (the bit its ring looks at)."""
    bell = session._pending.doorbell
    assert bell is not None
    return bool(bell.prepare() & SLEEPER_FLAG)


class _Reader:
    """A thread reading ``session``'s answers until ``future`` is done, as a consumer's
    ``poll()`` does: asleep on the session's doorbell between polls."""

    def __init__(self, session: ClientSession, future: Future[PullAnswer]) -> None:
        self.read = False
        self._thread = threading.Thread(target=self._run, args=(session, future), daemon=True)
        self._thread.start()

    def _run(self, session: ClientSession, future: Future[PullAnswer]) -> None:
        self.read = session.read_until(future.done, time.monotonic_ns() + 10_000_000_000)

    def join(self) -> None:
        self._thread.join(10)
        assert not self._thread.is_alive()


@pytest.fixture
def sessions(media_driver: MediaDriver) -> Iterator[tuple[ClientSession, ClientSession]]:
    """A consumer's session and a producer's, each of its own Aeron client."""
    with _ipc_session(media_driver) as consumer, _ipc_session(media_driver) as producer:
        yield consumer, producer


def _caught_up_then_quiet(consumer: ClientSession, producer: ClientSession) -> None:
    """One message stored and pulled (the consumer caught up), then a quiet while."""
    assert producer.request(send_request(b"zero")).status.code == 0
    first = consumer.request(pull_request(offset=0))
    assert first.response.next_begin_offset == 1
    time.sleep(_QUIET_S)


@pytest.mark.parametrize("native", [True, False], ids=["native-send", "protobuf-send"])
def test_should_yield_to_the_consumer_a_send_woke_after_a_quiet_while(
    agent: SessionAgent,  # noqa: F811 (the fixture)
    sessions: tuple[ClientSession, ClientSession],
    monkeypatch: pytest.MonkeyPatch,
    native: bool,
) -> None:
    consumer, producer = sessions
    if not native:  # every send read by protobuf, as without the native module: the same clock
        monkeypatch.setattr(dispatch_module, "_read_send", lambda data: None)
    _caught_up_then_quiet(consumer, producer)
    held = _held_pull(consumer, 1)
    reader = _Reader(consumer, held)
    wait_for(lambda: _asleep(consumer), what="the consumer asleep on its doorbell")
    assert agent.counters.quiet_yields == 0

    assert producer.request(send_request(b"one")).status.code == 0

    reader.join()
    assert reader.read and held.result(0).response.next_begin_offset == 2
    assert agent.counters.quiet_yields == 1


def test_should_not_yield_when_the_send_came_soon_after_the_last(
    agent: SessionAgent,  # noqa: F811 (the fixture)
    sessions: tuple[ClientSession, ClientSession],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    consumer, producer = sessions
    monkeypatch.setattr(answers_module, "QUIET_YIELD_NS", 600_000_000_000)  # never quiet
    _caught_up_then_quiet(consumer, producer)
    held = _held_pull(consumer, 1)
    reader = _Reader(consumer, held)
    wait_for(lambda: _asleep(consumer), what="the consumer asleep on its doorbell")

    assert producer.request(send_request(b"one")).status.code == 0

    reader.join()
    assert held.result(0).response.next_begin_offset == 2
    assert agent.counters.quiet_yields == 0
