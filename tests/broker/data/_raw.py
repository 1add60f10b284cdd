"""A raw session client for tests: it writes envelopes by hand, so it can misbehave."""

from __future__ import annotations

import itertools
import time

from aeromq.common import REQUEST_FIELD_NUMBERS, SESSION_PROTOCOL_VERSION, encode_envelope
from aeromq.proto import session_pb2
from aeromq.transport.client import Aeron, ExclusivePublication, Subscription

_streams = itertools.count(0x2000_0000)


class RawClient:
    """An ingress publication and a response subscription of its own."""

    def __init__(self, aeron: Aeron, ingress: tuple[str, int] = ("aeron:ipc", 1001)) -> None:
        self.response_stream_id = next(_streams)
        self.subscription: Subscription = aeron.add_subscription(
            "aeron:ipc", self.response_stream_id
        )
        self.publication: ExclusivePublication = aeron.add_exclusive_publication(*ingress)
        self.session_id = 0
        self._answers: list[session_pb2.TransportResponse] = []
        deadline = time.monotonic() + 5
        while not self.publication.is_connected:
            assert time.monotonic() < deadline, "no broker on the ingress"
            time.sleep(0.001)

    def offer(self, data: bytes) -> None:
        deadline = time.monotonic() + 5
        while self.publication.offer(data) < 0:
            assert time.monotonic() < deadline, "ingress back-pressured"
            time.sleep(0.001)

    def request(self, body_name: str, body: bytes = b"", correlation_id: int = 1,
                session_id: int | None = None) -> None:  # fmt: skip
        sid = self.session_id if session_id is None else session_id
        self.offer(encode_envelope(correlation_id, sid, REQUEST_FIELD_NUMBERS[body_name], body))

    def request_connect(
        self,
        version: int = SESSION_PROTOCOL_VERSION,
        correlation_id: int = 99,
        doorbell_counter_id: int = 0,
    ) -> None:
        """Offer a CONNECT (naming a doorbell counter of the client's, when not 0); no wait."""
        connect = session_pb2.ConnectRequest(
            response_channel="aeron:ipc",
            response_stream_id=self.response_stream_id,
            client_id="raw",
            version=version,
            doorbell_counter_id=doorbell_counter_id,
        )
        self.request("connect", connect.SerializeToString(), correlation_id, session_id=0)

    def connect(self, version: int = SESSION_PROTOCOL_VERSION) -> session_pb2.TransportResponse:
        self.request_connect(version)
        answer = self.answer()
        self.session_id = answer.session_id
        return answer

    def answer(self, timeout_s: float = 5.0) -> session_pb2.TransportResponse:
        deadline = time.monotonic() + timeout_s
        while not self._answers:
            assert time.monotonic() < deadline, "no answer"
            self.subscription.poll(self._on_fragment, 10)
            time.sleep(0.0005)
        return self._answers.pop(0)

    def poll_answers(self) -> int:
        """Read the answers that came, without waiting; how many wait to be taken."""
        self.subscription.poll(self._on_fragment, 10)
        return len(self._answers)

    def no_answer_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.subscription.poll(self._on_fragment, 10)
            if self._answers:
                return False
            time.sleep(0.001)
        return True

    def _on_fragment(self, buffer, offset, length, header) -> None:  # type: ignore[no-untyped-def]
        self._answers.append(
            session_pb2.TransportResponse.FromString(buffer.get_bytes(offset, length))
        )

    def close(self) -> None:
        self.publication.close()
        self.subscription.close()
