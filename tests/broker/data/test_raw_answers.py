"""Pull answers whose batches travel as the envelope's raw section, against a hand-written
broker that can misbehave: a section cut short fails its pull at once with a typed error (no
wait for the request timeout), and the session goes on answering."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aeromq.broker.testing import start_broker_process
from aeromq.client.grpc_client import GrpcClient
from aeromq.client.session import ClientSession, SessionConfig
from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    CorruptMessageError,
    PullAnswer,
    encode_envelope,
    encode_envelope_around,
)
from aeromq.proto import messages_pb2, session_pb2
from aeromq.transport.client import Aeron, ExclusivePublication, Subscription
from tests._pulled import pulled

from ._system import _session
from .conftest import pull_request, send_request

_INGRESS_STREAM = 4711
_SESSION_ID = 99
_PULL = RESPONSE_FIELD_NUMBERS["pull"]


class _HandBroker:
    """Answers a CONNECT, then hands each request to the test (one thread, bounded waits)."""

    def __init__(self, aeron: Aeron) -> None:
        self._aeron = aeron
        self.ingress: Subscription = aeron.add_subscription("aeron:ipc", _INGRESS_STREAM)
        self.publication: ExclusivePublication | None = None

    def next_request(self, timeout_s: float = 5.0) -> session_pb2.TransportRequest:
        """The next request other than a keepalive (a new session sends one at once)."""
        got: list[session_pb2.TransportRequest] = []

        def handler(buffer: object, offset: int, length: int, _header: object) -> None:
            request = session_pb2.TransportRequest.FromString(buffer.get_bytes(offset, length))  # type: ignore[attr-defined]
            if request.WhichOneof("body") != "keepalive":
                got.append(request)

        deadline = time.monotonic() + timeout_s
        while not got:
            assert time.monotonic() < deadline, "no request came"
            if not self.ingress.poll(handler, 1):
                time.sleep(0.001)
        return got[0]

    def accept(self) -> None:
        connect = self.next_request()
        self.publication = self._aeron.add_exclusive_publication(
            connect.connect.response_channel, connect.connect.response_stream_id
        )
        answer = session_pb2.ConnectResponse(
            broker_name="hand", version=1, session_timeout_ms=30_000
        )
        self.answer(
            encode_envelope(
                connect.correlation_id,
                _SESSION_ID,
                RESPONSE_FIELD_NUMBERS["connect"],
                answer.SerializeToString(),
            )
        )

    def answer(self, data: bytes) -> None:
        assert self.publication is not None
        deadline = time.monotonic() + 5
        while self.publication.offer(data) < 0:
            assert time.monotonic() < deadline, "the client's response stream did not take it"
            time.sleep(0.001)


@pytest.fixture
def hand_session(aeron: Aeron) -> Iterator[tuple[_HandBroker, ClientSession]]:
    with _hand_session(aeron) as pair:
        yield pair


@pytest.fixture
def hand_session_4m(aeron: Aeron) -> Iterator[tuple[_HandBroker, ClientSession]]:
    """A response log of 4 MiB terms: answers up to 512 KiB, fragmented at 64 KiB."""
    with _hand_session(aeron, "aeron:ipc?term-length=4m") as pair:
        yield pair


@contextlib.contextmanager
def _hand_session(
    aeron: Aeron, response_channel: str = "aeron:ipc"
) -> Iterator[tuple[_HandBroker, ClientSession]]:
    broker = _HandBroker(aeron)
    accepting = threading.Thread(target=broker.accept, daemon=True)
    accepting.start()
    config = SessionConfig(
        ingress_stream_id=_INGRESS_STREAM,
        request_timeout_ms=20_000,
        response_channel=response_channel,
    )
    with ClientSession.connect(aeron, config) as session:
        accepting.join(5)
        yield broker, session


def _pull_answer(correlation_id: int, raw: bytes, claimed: int) -> bytes:
    body = messages_pb2.PullMessageResponse(next_begin_offset=3).SerializeToString()
    head, tail = encode_envelope_around(correlation_id, _SESSION_ID, _PULL, body, claimed)
    return head + raw + tail


def test_should_resolve_a_pull_with_the_raw_section_as_its_batches(
    hand_session: tuple[_HandBroker, ClientSession],
) -> None:
    broker, session = hand_session
    future = session.request_async(messages_pb2.PullMessageRequest(topic="t"))
    request = broker.next_request()
    broker.answer(_pull_answer(request.correlation_id, b"stored batches", len(b"stored batches")))
    answer = future.result(5)
    assert isinstance(answer, PullAnswer)
    assert answer.batches == b"stored batches" and answer.next_begin_offset == 3


def test_should_fail_a_pull_whose_raw_section_is_cut_short_at_once(
    hand_session: tuple[_HandBroker, ClientSession],
) -> None:
    broker, session = hand_session
    future = session.request_async(messages_pb2.PullMessageRequest(topic="t"))
    request = broker.next_request()
    began = time.monotonic()
    broker.answer(_pull_answer(request.correlation_id, b"x" * 10, 1000))  # claims 1,000 bytes
    with pytest.raises(CorruptMessageError, match="raw section runs past its message"):
        future.result(5)
    assert time.monotonic() - began < 5  # not the request timeout (20 s)
    # the session is still usable: the next pull is answered
    again = session.request_async(messages_pb2.PullMessageRequest(topic="t"))
    request = broker.next_request()
    broker.answer(_pull_answer(request.correlation_id, b"ok", 2))
    assert again.result(5).batches == b"ok"
    assert session.is_open


def test_should_fail_a_fragmented_pull_whose_raw_section_is_cut_short_at_once(
    hand_session_4m: tuple[_HandBroker, ClientSession],
) -> None:
    """An answer of 200 KB (fragments of 64 KiB) whose raw section claims 300 KB: its raw
    section is filled fragment by fragment and found short at the last one."""
    broker, session = hand_session_4m
    future = session.request_async(messages_pb2.PullMessageRequest(topic="t"))
    request = broker.next_request()
    broker.answer(_pull_answer(request.correlation_id, b"x" * 200_000, 300_000))
    with pytest.raises(CorruptMessageError, match="raw section runs past its message"):
        future.result(5)
    again = session.request_async(messages_pb2.PullMessageRequest(topic="t"))
    request = broker.next_request()
    raw = bytes(range(256)) * 800  # 204,800 bytes, fragmented
    broker.answer(_pull_answer(request.correlation_id, raw, len(raw)))
    answer = again.result(5)
    assert answer.batches == raw and type(answer.batches) is bytes
    assert answer.next_begin_offset == 3 and session.is_open


@pytest.mark.parametrize("transport", ["ipc", "udp"])
def test_should_carry_a_pull_answer_of_a_mebibyte_intact_over_ipc_and_udp(
    transport: str, tmp_path: Path
) -> None:
    """A broker process, 8,000 messages of 300 B (one batch of 100 per send): pulls of 8,192
    messages are cut at the broker's 1 MiB answer (fragments of 64 KiB over IPC, of the UDP
    MTU over UDP), and every message comes back intact and in order."""
    broker = start_broker_process(
        tmp_path / "data",
        extra_args=["--ingress-udp-endpoint", "127.0.0.1:0", "--index-enabled", "false",
                    "--log-level", "WARNING"],
    )  # fmt: skip
    try:
        with GrpcClient(broker.grpc_address, timeout_s=30) as admin:
            admin.create_topic("big", read_queue_nums=1, write_queue_nums=1)
        driver, client, session = _session(broker.ready, transport)
        try:
            for first in range(0, 8000, 100):
                bodies = [b"%06d" % i + b"." * 294 for i in range(first, first + 100)]
                done = session.request(send_request(*bodies, topic="big"), 10_000)
                assert done.status.code == 0
            offset, sizes, got = 0, [], []
            while offset < 8000:
                answer = session.request(
                    pull_request(offset=offset, topic="big", max_msg_nums=8192), 10_000
                )
                assert isinstance(answer, PullAnswer) and answer.pull_status == messages_pb2.FOUND
                sizes.append(len(answer.batches))
                got.extend(m.body for m in pulled(answer, "big", 0, offset))
                offset = answer.next_begin_offset
            assert got == [b"%06d" % i + b"." * 294 for i in range(8000)]
            assert max(sizes) > 1_000_000 and len(sizes) == 3  # 2.6 MB in 1 MiB answers
        finally:
            session.close()
            client.close()
            if driver is not None:
                driver.close()
    finally:
        assert broker.stop() == 0
