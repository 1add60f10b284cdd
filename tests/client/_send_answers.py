"""A broker's answers to sends as bytes, for the tests of their reading: the session's
dispatch (``tests/client/test_send_answers.py``) and the producer's results
(``tests/producer/test_send_results.py``)."""

from __future__ import annotations

from typing import Any, Final

from aeromq.proto import common_pb2, messages_pb2, session_pb2

SESSION_ID: Final = 77
STORED: Final[dict[str, Any]] = {
    "send_status": messages_pb2.FLUSH_DISK_TIMEOUT,
    "queue_id": 3,  # another queue than the target's
    "base_queue_offset": 40,
    "message_count": 2,
    "base_commit_log_offset": 9_000,
    "store_host": "127.0.0.1:10911",
    "broker_name": "broker-b",
}
"""The fields of a stored send's answer (two messages, on another queue than asked)."""


def send_answer_bytes(correlation_id: int, code: int = 0, message: str = "", **send: Any) -> bytes:
    """A serialised ``TransportResponse`` of session :data:`SESSION_ID` answering a send."""
    body = messages_pb2.SendMessageResponse(
        status=common_pb2.Status(code=code, message=message), **send
    )
    response = session_pb2.TransportResponse(
        correlation_id=correlation_id, session_id=SESSION_ID, send=body
    )
    return response.SerializeToString()
