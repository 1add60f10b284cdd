"""``QueryMessage``: the admin lookups of stored messages, by offset message id or by key.

Caller: the control plane (gRPC threads). The store answers from its commit log (an offset
message id names a record's commit log offset) and its key index (a message's ``KEYS`` and
``UNIQ_KEY``); this turns the answer into ``admin_pb2.StoredMessage``\\ s. An id that names no
intact record is :class:`MessageNotFoundError` (QUERY_NOT_FOUND).
"""

from __future__ import annotations

from typing import Final

from aeromq.broker._errors import BrokerError, CorruptRecordError, InvalidArgumentError
from aeromq.broker.store import MessageStore, StoredMessage, unpack_host
from aeromq.common import ResponseCode
from aeromq.proto import admin_pb2

__all__ = [
    "DEFAULT_QUERY_MAX_COUNT",
    "MessageNotFoundError",
    "MessageQueryProcessor",
    "stored_message_pb",
]

DEFAULT_QUERY_MAX_COUNT: Final = 32
_END_OF_TIME_MS: Final = 2**62


class MessageNotFoundError(BrokerError):
    """No stored message has the id asked for."""

    code = ResponseCode.QUERY_NOT_FOUND


class MessageQueryProcessor:
    """Looks messages up in ``store`` (see module)."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store

    def query(self, request: admin_pb2.QueryMessageRequest) -> admin_pb2.QueryMessageResponse:
        """The messages of an id, or of a topic's key; raises a ``BrokerError`` to answer."""
        response = admin_pb2.QueryMessageResponse()
        if request.message_id:
            try:
                found = [self._store.query_message_by_id(request.message_id)]
            except CorruptRecordError as exc:
                raise MessageNotFoundError(
                    "no stored message has this id", message_id=request.message_id
                ) from exc
        elif request.topic and request.key:
            found = self._store.query_messages_by_key(
                request.topic,
                request.key,
                request.max_count or DEFAULT_QUERY_MAX_COUNT,
                request.begin_ms,
                request.end_ms or _END_OF_TIME_MS,
            )
        else:
            raise InvalidArgumentError(
                "a message query needs a message id, or a topic and a key",
                message_id=request.message_id,
                topic=request.topic,
                key=request.key,
            )
        for message in found:
            _fill(response.messages.add(), message)
        return response


def stored_message_pb(message: StoredMessage) -> admin_pb2.StoredMessage:
    """``message`` as the ``QueryMessage`` answer carries it (also the web console's view)."""
    out = admin_pb2.StoredMessage()
    _fill(out, message)
    return out


def _fill(out: admin_pb2.StoredMessage, message: StoredMessage) -> None:
    out.topic = message.topic
    out.queue_id = message.queue_id
    out.queue_offset = message.queue_offset
    out.commit_log_offset = message.physical_offset
    out.body = message.body
    out.properties.update(message.properties)
    out.born_timestamp_ms = message.born_timestamp_ms
    out.store_timestamp_ms = message.store_timestamp_ms
    out.store_host = unpack_host(message.store_host)
    out.offset_msg_id = message.message_id
