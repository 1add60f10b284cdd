"""A client sending back to back says so on its doorbell's flag word (``BACK_TO_BACK_FLAG``), and
the broker's session agent reads it after each cycle of one-at-a-time sends
(``broker/session/_agent.py``: counted in ``back_to_back_sends``, and its idle strategy then
polls through its long window); without the flag its sends are not counted. An IPC client
session against an agent of this process, its flag set by the test (the client's own setting of
it: ``tests/client/test_back_to_back_sends.py``)."""

from __future__ import annotations

from aeromq.broker.session import SessionAgent
from aeromq.common import BACK_TO_BACK_FLAG
from aeromq.transport.driver import MediaDriver

from .conftest import send_request, wait_for
from .test_session_doorbells import _ipc_session, agent  # noqa: F401 (a fixture)


def test_should_count_the_sends_of_a_client_whose_flag_says_back_to_back_and_no_others(
    agent: SessionAgent,  # noqa: F811 (the fixture)
    media_driver: MediaDriver,
) -> None:
    with _ipc_session(media_driver) as session:
        bell = session._reader.doorbell
        assert bell is not None
        # the client's own count never finds a request back to back (switches not counted),
        # so it leaves the flag to the test
        session._reader._back_to_back._switches = lambda: -1
        for i in range(5):
            assert session.request(send_request(b"paced %d" % i)).status.code == 0
        assert agent.counters.back_to_back_sends == 0

        bell.set_flag(BACK_TO_BACK_FLAG)
        assert session.request(send_request(b"in a loop")).status.code == 0
        wait_for(lambda: agent.counters.back_to_back_sends == 1, what="the send counted")
        bell.set_flag(0)
        for i in range(5):
            assert session.request(send_request(b"paced again %d" % i)).status.code == 0
        assert agent.counters.back_to_back_sends == 1
