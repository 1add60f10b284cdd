"""A client session without a doorbell (no futex in ``_session_setup``, as over UDP: nothing
rings) against a broker's session agent served in this process by ``tests/broker/data``'s
fixtures (``server``, ``client_aeron`` and the store, processors and driver under them):
imported by this directory's ``conftest.py``, not copied. Its caller reads the answers by polling."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from aeromq.client import _session_setup
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import BrokerUnavailableError
from aeromq.transport.client import Aeron
from tests.broker.data.conftest import send_request
from tests.broker.data.test_sessions import Server


def test_should_read_the_answers_by_polling_without_a_doorbell_with_caller_reads(
    server: Server, client_aeron: Aeron, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_session_setup, "HAS_FUTEX", False)  # as over UDP: nothing rings
    with ClientSession.connect(client_aeron, SessionConfig(caller_reads=True)) as session:
        assert not session.rung_by_broker
        futures = [session.request_async(send_request(b"u%d" % i, queue_id=2)) for i in range(5)]
        assert [session.wait(f).base_queue_offset for f in futures] == list(range(5))


def test_should_fail_pending_requests_with_the_sessions_failure_when_closed_after_it(
    server: Server, client_aeron: Aeron
) -> None:
    """A session that failed (its broker gone: retriable) and is closed while a request is
    still pending fails that request with the failure, not with a non-retriable "closed"."""
    session = ClientSession.connect(client_aeron, SessionConfig())
    try:
        failure = BrokerUnavailableError("the broker stopped answering")
        session._state.failure = failure  # failed, its pending requests not failed yet
        pending: Future[object] = Future()
        session._pending.futures[10**9] = pending  # type: ignore[assignment]
    finally:
        session.close()
    assert pending.exception() is failure
