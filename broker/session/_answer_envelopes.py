"""The envelopes the session agent answers with: pure functions, bytes in and bytes out.

A processor's response is serialised into one envelope (by protobuf's C code: the envelope
message with the response copied into its field, one serialisation, about half the cost of
``common._envelope``'s Python varints for a send's answer, 0.9 against 1.6 us, ``timeit``; the
same bytes but for ids of 0, which protobuf leaves out and readers take as 0); a pull's batches
go as the envelope's raw section, in pieces for one vectored offer (the store's views are not
copied), a FOUND pull's envelope made in one native call (``common._pull_envelope``), and a
stored send's (``common._stored_send``); an
envelope-level error carries a ``Status``. The layout is ``common._envelope``'s, shared with the
clients. Caller: the agent's answer writing (``broker.session._answers``), its request dispatch
(``_dispatch``: requests refused) and its session lifecycle (``_lifecycle``: farewells, closes).
"""

from __future__ import annotations

from typing import Final

from google.protobuf.message import Message as ProtoMessage

from aeromq.common import (
    RESPONSE_FIELD_NUMBERS,
    PullAnswer,
    StoredPullAnswer,
    StoredSendAnswer,
    encode_envelope,
    encode_envelope_around,
    stored_pull_envelope,
    stored_send_envelope,
)
from aeromq.proto import common_pb2, session_pb2

__all__ = ["answer_envelope", "error_envelope"]

_ERROR: Final = RESPONSE_FIELD_NUMBERS["error"]
_Response: Final = session_pb2.TransportResponse
_FIELD_NAMES: Final = {number: name for name, number in RESPONSE_FIELD_NUMBERS.items()}


def answer_envelope(
    correlation_id: int,
    session_id: int,
    field: int,
    response: ProtoMessage | PullAnswer | StoredSendAnswer,
) -> tuple[bytes | list[bytes | memoryview], int]:
    """The envelope of an answer and its length: a pull's batches as its raw section, in
    pieces for one vectored offer (:mod:`common._envelope`), else one serialised envelope."""
    if type(response) is StoredSendAnswer:  # a stored send: one native call
        data = stored_send_envelope(correlation_id, session_id, response)
        return data, len(data)
    if type(response) is StoredPullAnswer:  # a FOUND pull: one native call
        return stored_pull_envelope(correlation_id, session_id, response)
    if isinstance(response, PullAnswer):
        body = response.response.SerializeToString()
        pieces = response.pieces
        if pieces:  # the store's views (one per batch, ~170 in a bulk pull): nbytes at hand
            size = sum(
                piece.nbytes if type(piece) is memoryview else memoryview(piece).nbytes
                for piece in pieces
            )
            head, tail = encode_envelope_around(correlation_id, session_id, field, body, size)
            return [head, *pieces, tail], len(head) + size + len(tail)
        data = encode_envelope(correlation_id, session_id, field, body)
    else:
        envelope = _Response(correlation_id=correlation_id, session_id=session_id)
        getattr(envelope, _FIELD_NAMES[field]).CopyFrom(response)
        data = envelope.SerializeToString()
    return data, len(data)


def error_envelope(correlation_id: int, session_id: int, code: int, text: str) -> bytes:
    """An envelope-level error: ``code`` and ``text`` as a ``Status`` in the ``error`` field."""
    body = common_pb2.Status(code=code, message=text).SerializeToString()
    return encode_envelope(correlation_id, session_id, _ERROR, body)
