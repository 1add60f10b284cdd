"""Transport sessions end to end over a real driver: the client session, the session agent, and
every way a session ends or a request goes wrong."""

from __future__ import annotations

import socket
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from aeromq.broker.processor.pull import PullProcessor
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.session import SessionAgent, SessionServerConfig
from aeromq.broker.store import MessageStore
from aeromq.client import (
    BrokerBusyError,
    BrokerInternalError,
    BrokerUnavailableError,
    IllegalArgumentError,
    IllegalStateError,
    RequestTimeoutError,
    ResponseCode,
)
from aeromq.client.session import BackPressuredError, ClientSession, SessionConfig
from aeromq.common import SESSION_CLOSED_CODE, PullAnswer
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, AeronContext
from aeromq.transport.concurrent.agent import AgentRunner
from aeromq.transport.concurrent.idle_strategy import BackoffIdleStrategy
from aeromq.transport.driver import MediaDriver
from tests._pulled import pulled

from ._raw import RawClient
from .conftest import MS, TOPIC, pull_request, send_request, wait_for

INGRESS = ("aeron:ipc", 1001)


@dataclass
class Server:
    agent: SessionAgent
    runner: AgentRunner
    send: SendProcessor
    errors: list[BaseException]

    def stop(self) -> None:
        self.runner.close()


@pytest.fixture
def start_server(
    aeron: Aeron, store: MessageStore, send: SendProcessor, pull: PullProcessor
) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def factory(**config: Any) -> Server:
        values: dict[str, Any] = {
            "session_timeout_ms": 400,
            "connect_timeout_ms": 500,
        }
        values.update(config)
        subscription = aeron.add_subscription(*INGRESS)
        agent = SessionAgent(
            aeron, [subscription], send, pull, "broker-a", config=SessionServerConfig(**values)
        )
        errors: list[BaseException] = []
        runner = AgentRunner(BackoffIdleStrategy(), errors.append, None, agent)
        runner.start()
        server = Server(agent, runner, send, errors)
        servers.append(server)
        return server

    yield factory
    for server in servers:
        server.stop()
        assert server.errors == []


@pytest.fixture
def server(start_server: Callable[..., Server]) -> Server:
    return start_server()


@pytest.fixture
def client_aeron(media_driver: MediaDriver) -> Iterator[Aeron]:
    with Aeron.connect(
        AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    ) as client:
        yield client


@pytest.fixture
def session(server: Server, client_aeron: Aeron) -> Iterator[ClientSession]:
    with ClientSession.connect(client_aeron, SessionConfig(request_timeout_ms=2_000)) as opened:
        yield opened


def test_should_connect_and_learn_the_session_id_and_the_broker_limits(
    server: Server, session: ClientSession
) -> None:
    assert session.session_id != 0 and session.is_open
    assert session.broker_name == "broker-a"
    assert session.session_timeout_ms == 400 and session.keepalive_interval_ms == 133
    assert session.max_message_size == 4 * 1024 * 1024
    assert server.agent.counters.sessions_opened == 1
    assert server.agent.table.live_count == 1


def test_should_send_and_pull_through_the_session(session: ClientSession) -> None:
    sent = session.request(send_request(b"one", b"two"))
    assert sent.status.code == ResponseCode.SUCCESS and sent.message_count == 2
    answer = session.request(pull_request())
    assert [m.body for m in pulled(answer, TOPIC, 0, 0)] == [b"one", b"two"]


def test_should_complete_pipelined_requests_out_of_order(session: ClientSession) -> None:
    held = session.request_async(pull_request(queue_id=3, suspend_timeout_ms=3_000), 5_000)
    sends = [session.request_async(send_request(b"m%d" % i, queue_id=1)) for i in range(50)]
    assert [f.result(5).base_queue_offset for f in sends] == list(range(50))
    assert not held.done()  # a held long poll does not delay the sends behind it
    session.request(send_request(b"wake", queue_id=3))
    assert [m.body for m in pulled(held.result(5), TOPIC, 3, 0)] == [b"wake"]


def test_should_let_go_of_an_answered_request_before_its_timeout(session: ClientSession) -> None:
    # a session keeps what it needs to time a request out, never the request's future: an
    # answered future (and its callbacks, and what they hold: a send's messages, a pull's
    # answer) is freed as soon as its caller lets go, not a request timeout later
    futures = [session.request_async(send_request(b"m%d" % i), 60_000) for i in range(3)]
    alive = [weakref.ref(future) for future in futures]
    assert all(future.result(5).status.code == ResponseCode.SUCCESS for future in futures)
    del futures  # the poller may still be returning from the last answer: a moment
    wait_for(lambda: [ref() for ref in alive] == [None, None, None], 2, "the futures freed")


def test_should_keep_its_deadlines_to_the_requests_in_flight(
    start_server: Callable[..., Server], client_aeron: Aeron
) -> None:
    # room for a stall: the broker and the client share this process, and 500 sends at once
    # kept one from hearing the other within the fixture's 400 ms session timeout (a flake)
    start_server(session_timeout_ms=2_000)
    config = SessionConfig(request_timeout_ms=2_000)
    with ClientSession.connect(client_aeron, config) as session:
        for _ in range(6):
            window = [session.request_async(send_request(b"x"), 60_000) for _ in range(500)]
            assert all(future.result(5).status.code == ResponseCode.SUCCESS for future in window)
        wait_for(
            lambda: len(session._pending.deadlines) <= 1_024, 2, "the answered requests' deadlines"
        )


def test_should_read_the_answers_on_the_waiting_thread_with_caller_reads(
    server: Server, client_aeron: Aeron
) -> None:
    config = SessionConfig(request_timeout_ms=2_000, caller_reads=True)
    with ClientSession.connect(client_aeron, config) as session:
        readers: list[int] = []
        offsets = []
        for i in range(20):
            future = session.request_async(send_request(b"m%d" % i, queue_id=1))
            future.add_done_callback(lambda _f: readers.append(threading.get_ident()))
            offsets.append(session.wait(future).base_queue_offset)
        assert offsets == list(range(20))
        # the waiting thread read answers itself. One wait at a time: twenty sends submitted
        # before the first wait could all be answered, and read by the poller (nobody waited
        # yet), before this thread got to its wait, as it did once on a loaded CI machine. The
        # poller may still read an answer, when its housekeeping (the driver check every
        # 100 ms) falls between this thread's waits
        assert threading.get_ident() in readers
        late = session.request_async(send_request(b"late", queue_id=1))  # nobody waits for it
        wait_for(late.done, 5, "the poller to read an answer nobody waited for")
        assert late.result().base_queue_offset == 20
        with pytest.raises(RequestTimeoutError):
            session.wait(
                session.request_async(pull_request(queue_id=3, suspend_timeout_ms=3_000)), 100
            )


def test_should_keep_a_quiet_session_alive_with_keepalives(
    start_server: Callable[..., Server], client_aeron: Aeron
) -> None:
    server = start_server(session_timeout_ms=1_000)  # room for a stall of a loaded machine
    with ClientSession.connect(client_aeron) as session:
        time.sleep(2.5)  # 2.5 session timeouts without a request
        assert session.is_open
        assert session.request(send_request(b"still here")).status.code == ResponseCode.SUCCESS
    assert server.agent.counters.sessions_timed_out == 0


def test_should_fail_to_connect_when_no_broker_listens(client_aeron: Aeron) -> None:
    began = time.monotonic()
    with pytest.raises(BrokerUnavailableError, match="no broker on the ingress"):
        ClientSession.connect(client_aeron, SessionConfig(connect_timeout_ms=200))
    assert time.monotonic() - began < 2


def test_should_time_out_a_request_the_broker_does_not_answer(
    start_server: Callable[..., Server], client_aeron: Aeron
) -> None:
    server = start_server(session_timeout_ms=2_000)
    session = ClientSession.connect(client_aeron, SessionConfig())
    server.agent.stop_ingress()  # alive, but reads nothing any more
    with pytest.raises(RequestTimeoutError):
        session.request(send_request(b"lost"), timeout_ms=100)
    wait_for(lambda: not session.is_open, 10, "the session to notice the silent broker")
    # the client gives up on the silent broker, or the broker's sweep closes the session
    # that sends it nothing it reads: both within one session timeout
    with pytest.raises(BrokerUnavailableError, match=r"stopped answering|idle"):
        session.request(send_request(b"x"))
    session.close()


def test_should_raise_back_pressure_as_a_retriable_error_when_the_ingress_is_full(
    server: Server, client_aeron: Aeron
) -> None:
    with ClientSession.connect(client_aeron, SessionConfig(offer_timeout_ms=100)) as session:
        server.agent.stop_ingress()
        big = send_request(b"x" * 4000)
        with pytest.raises(BackPressuredError) as raised:
            for _ in range(100):  # the 64 KiB term's window is 32 KiB
                session.send_oneway(big)
        assert raised.value.retriable and raised.value.code == ResponseCode.SYSTEM_BUSY


def test_should_abort_sends_while_the_store_cannot_take_more_then_serve_them(
    server: Server, session: ClientSession
) -> None:
    server.send.max_inflight_sends = 0  # the store "cannot take more"
    pending = session.request_async(send_request(b"later"), 5_000)
    wait_for(lambda: server.agent.counters.aborted > 3, what="ABORTs")
    assert not pending.done()
    server.send.max_inflight_sends = 10
    assert pending.result(5).base_queue_offset == 0


def test_should_close_an_idle_session_with_a_notice_then_answer_its_late_requests(
    server: Server, aeron: Aeron
) -> None:
    raw = RawClient(aeron)
    raw.connect()
    notice = raw.answer(timeout_s=3)  # no keepalives: closed after 400 ms
    assert notice.WhichOneof("body") == "error" and notice.error.code == SESSION_CLOSED_CODE
    assert "idle for the session timeout" in notice.error.message
    assert server.agent.counters.sessions_timed_out == 1
    raw.request("send", send_request(b"late").SerializeToString(), correlation_id=5)
    late = raw.answer()
    assert (late.correlation_id, late.error.code) == (5, SESSION_CLOSED_CODE)
    assert "session closed" in late.error.message and "idle" in late.error.message
    assert server.agent.counters.closed_session == 1


def test_should_answer_a_request_after_the_client_closed_its_session(
    server: Server, aeron: Aeron
) -> None:
    raw = RawClient(aeron)
    raw.connect()
    raw.request("close", correlation_id=2)
    wait_for(lambda: server.agent.counters.sessions_closed == 1, what="the close")
    raw.request("pull", pull_request().SerializeToString(), correlation_id=3)
    answer = raw.answer()
    assert answer.correlation_id == 3 and "closed by the client" in answer.error.message


def test_should_answer_an_unknown_session_on_the_route_of_its_ingress_image(
    server: Server, aeron: Aeron
) -> None:
    raw = RawClient(aeron)
    raw.connect()
    raw.request("keepalive", correlation_id=4, session_id=12345)
    answer = raw.answer()
    assert (answer.session_id, answer.correlation_id) == (12345, 4)
    assert answer.error.code == SESSION_CLOSED_CODE and "unknown session" in answer.error.message
    assert server.agent.counters.unknown_session == 1


def test_should_count_requests_it_cannot_answer_and_keep_serving(
    server: Server, aeron: Aeron, session: ClientSession
) -> None:
    stranger = RawClient(aeron)  # never connected: no route back
    stranger.offer(b"\xff\x00garbage")
    stranger.request("send", send_request(b"x").SerializeToString(), session_id=777)
    wait_for(lambda: server.agent.counters.unanswerable == 2, what="both counted")
    assert server.agent.counters.malformed == 1 and server.agent.counters.unknown_session == 1
    assert session.request(send_request(b"fine")).status.code == ResponseCode.SUCCESS


def test_should_answer_malformed_bytes_from_a_connected_client(
    server: Server, aeron: Aeron
) -> None:
    raw = RawClient(aeron)
    raw.connect()
    raw.offer(b"\x08\x2a\x10" + b"\xff" * 12)  # correlation id 42, then a broken session id
    answer = raw.answer()
    assert answer.correlation_id == 42 and answer.error.code == ResponseCode.INVALID_PARAMETER
    assert "malformed request" in answer.error.message
    raw.offer(b"\x08\x07\x10\x01")  # ids only: no body
    assert "without a body" in raw.answer().error.message
    assert server.agent.counters.malformed == 2
    assert server.agent.counters.errors_by_code[ResponseCode.INVALID_PARAMETER] == 2


def test_should_refuse_a_connect_of_another_protocol_version(server: Server, aeron: Aeron) -> None:
    raw = RawClient(aeron)
    answer = raw.connect(version=99)
    assert answer.error.code == ResponseCode.VERSION_NOT_SUPPORTED
    assert server.agent.counters.connects_refused == 1 and server.agent.table.live_count == 0


def test_should_refuse_connects_past_the_session_limit(
    start_server: Callable[..., Server], client_aeron: Aeron
) -> None:
    server = start_server(max_sessions=1)
    with (
        ClientSession.connect(client_aeron),
        pytest.raises(BrokerBusyError, match="too many sessions"),
    ):
        ClientSession.connect(client_aeron)
    assert server.agent.counters.connects_refused == 1


def test_should_close_the_session_of_a_client_that_is_gone(
    server: Server, media_driver: MediaDriver
) -> None:
    doomed = Aeron.connect(AeronContext(aeron_dir=media_driver.aeron_dir))
    ClientSession.connect(doomed)
    doomed.close()  # its response subscription goes with it
    wait_for(lambda: server.agent.counters.sessions_closed == 1, what="the close")
    assert server.agent.table.live_count == 0


def test_should_tell_clients_when_the_broker_shuts_down(
    server: Server, session: ClientSession
) -> None:
    server.stop()
    wait_for(lambda: not session.is_open, what="the notice")
    with pytest.raises(BrokerUnavailableError, match="shutting down"):
        session.request(send_request(b"x"))


def test_should_refuse_requests_on_a_closed_client_session(session: ClientSession) -> None:
    session.close()
    with pytest.raises(IllegalStateError):
        session.request(send_request(b"x"))
    session.close()  # idempotent


def test_should_answer_keepalives(session: ClientSession) -> None:
    answer = session.request(session_pb2.KeepAliveRequest())
    assert isinstance(answer, session_pb2.KeepAliveResponse)


def test_should_carry_requests_longer_than_one_frame(session: ClientSession) -> None:
    body = bytes(range(256)) * 24  # 6 KB: over UDP it is fragmented; over IPC one frame each way
    session.request(send_request(body, queue_id=2))
    answer = session.request(pull_request(queue_id=2))
    assert isinstance(answer, PullAnswer)  # the batches came as the envelope's raw section
    (message,) = pulled(answer, TOPIC, 2, 0)
    assert message.body == body and message.topic == TOPIC


def test_should_refuse_a_request_longer_than_the_ingress_takes(session: ClientSession) -> None:
    assert session.max_request_length == 8192  # a 64 KiB term: an eighth
    with pytest.raises(IllegalArgumentError, match="longer than the ingress takes"):
        session.request(send_request(b"x" * 9000))
    assert session.is_open


def test_should_answer_with_an_error_an_answer_too_long_for_the_response_channel(
    server: Server, session: ClientSession
) -> None:
    for _ in range(2):
        session.request(send_request(b"x" * 5_000, queue_id=1))
    with pytest.raises(BrokerInternalError, match="answer longer than the response channel takes"):
        session.request(pull_request(queue_id=1))  # both at once: over 8 KiB
    one = session.request(pull_request(queue_id=1, max_msg_nums=1))
    assert len(pulled(one, TOPIC, 1, 0)) == 1
    assert server.agent.counters.errors_by_code[ResponseCode.SYSTEM_ERROR] == 1


def test_should_fail_the_session_when_the_broker_closes_its_response_stream(
    server: Server, session: ClientSession
) -> None:
    (broker_side,) = [s for s in server.agent.table if s.session_id == session.session_id]
    assert broker_side.publication is not None
    broker_side.publication.close()  # as a broker restarted on the same driver would leave it
    wait_for(lambda: not session.is_open, what="the session to notice")
    with pytest.raises(BrokerUnavailableError, match="response stream ended"):
        session.request(send_request(b"x"))


def test_should_keep_one_session_per_broker_and_replace_a_failed_one(
    server: Server, media_driver: MediaDriver
) -> None:
    from aeromq.client.broker_sessions import BrokerSessions, is_local
    from aeromq.client.route import BrokerRoute

    here = BrokerRoute("c", "broker-a", "", "aeron:ipc", 1001, "", 0, media_driver.aeron_dir,
                       socket.gethostname())  # fmt: skip
    elsewhere = BrokerRoute("c", "broker-z", "", "aeron:ipc", 1001, "", 0, "/nowhere", "far-away")
    assert is_local(here) and not is_local(elsewhere)
    with pytest.raises(IllegalArgumentError, match="transport"):
        BrokerSessions(
            client_id="t", transport="tcp", request_timeout_ms=3_000, offer_timeout_ms=1_000
        )
    sessions = BrokerSessions(client_id="t", request_timeout_ms=3_000, offer_timeout_ms=1_000)
    try:
        first = sessions.session(here)
        assert sessions.session(here) is first and first.is_open
        with pytest.raises(BrokerUnavailableError, match="no UDP ingress"):
            sessions.session(elsewhere)
        sessions.drop("broker-a")
        assert not first.is_open
        second = sessions.session(here)
        assert second is not first and second.is_open
    finally:
        sessions.close()
    with pytest.raises(IllegalStateError, match="sessions closed"):
        sessions.session(here)


def test_should_close_quietly_after_its_aeron_client_was_closed_under_it(
    server: Server, media_driver: MediaDriver
) -> None:
    """A session outliving its Aeron client (closed by another owner first): closing it fails
    what is pending and raises nothing, though its channels and doorbell were in the client's
    mapped files."""
    client = Aeron.connect(
        AeronContext(aeron_dir=media_driver.aeron_dir, idle_sleep_duration_ns=1 * MS)
    )
    session = ClientSession.connect(client, SessionConfig(request_timeout_ms=2_000))
    assert session.request(send_request(b"one")).status.code == ResponseCode.SUCCESS
    client.close()
    session.close()
    assert not session.is_open
    with pytest.raises(IllegalStateError):
        session.request(send_request(b"two"))
