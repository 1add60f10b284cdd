"""Transactional messages on the RocketMQ 5 endpoint: ``EndTransaction`` and the check-backs a
producer's ``Telemetry`` stream carries (``RecoverOrphanedTransactionCommand``).

A v2 producer sends a TRANSACTION message (``_send``): it is stored as a half message
(``broker.transaction``) whose producer group is its topic, as RocketMQ's proxy registers a v2
producer by the topics of its settings; the send's ``transaction_id`` is the half's queue offset
in decimal, which the client gives back in ``EndTransaction`` (with the message id, checked
against the half). A check-back is posted to the topic's mailbox; every telemetry stream whose
settings publish that topic is woken and writes the command (each stream each check once: the
mailbox keeps it until an end or the next check of the half replaces it), with the half message as the
client reads a message (its real topic and queue, type TRANSACTION) and the same
``transaction_id``. The client asks its checker and answers with ``EndTransaction`` (source
``SOURCE_SERVER_CHECK``).

:func:`pump_telemetry` reads the client's commands on a thread of its own (a sync stream's
request iterator blocks) and writes the settings answers and the check-backs from one queue.

Caller: the servicer's threads (``_service``).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Final

import grpc

from aeromq.broker.rocketmq._convert import to_v2_message
from aeromq.broker.rocketmq._status import status
from aeromq.broker.transaction import (
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_PREPARED,
    Check,
    Resolution,
    TransactionService,
)
from aeromq.common import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC, ResponseCode
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2

__all__ = ["end_transaction", "pump_telemetry"]

Code = definition_pb2.Code
_RESOLUTIONS: Final = {
    definition_pb2.COMMIT: Resolution.COMMIT,
    definition_pb2.ROLLBACK: Resolution.ROLLBACK,
}
_CODES: Final = {
    ResponseCode.SUCCESS: Code.OK,
    ResponseCode.INVALID_PARAMETER: Code.INVALID_TRANSACTION_ID,
    ResponseCode.NOT_LEADER: Code.HA_NOT_AVAILABLE,
    ResponseCode.SYSTEM_BUSY: Code.TOO_MANY_REQUESTS,
}
_HIDDEN: Final = (
    PROPERTY_REAL_TOPIC,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_PRODUCER_GROUP,
)
"""The half's properties a v2 client does not see as user properties."""
_CHECKS_PER_WAKE: Final = 32
_READ_WAIT_S: Final = 0.5
"""How often the writing loop looks whether the endpoint closes while nothing comes."""
_WAKE: Final = object()
_SENT_LIMIT: Final = 100_000


def end_transaction(
    service: TransactionService | None, request: service_pb2.EndTransactionRequest
) -> service_pb2.EndTransactionResponse:
    """Commit or roll back the half that ``request.transaction_id`` names."""
    if service is None:
        return service_pb2.EndTransactionResponse(
            status=status(Code.UNSUPPORTED, "transactional messages are off on this broker")
        )
    resolution = _RESOLUTIONS.get(request.resolution)
    if resolution is None:
        return service_pb2.EndTransactionResponse(
            status=status(Code.BAD_REQUEST, "resolution must be COMMIT or ROLLBACK")
        )
    if not request.transaction_id.isdigit():
        return service_pb2.EndTransactionResponse(
            status=status(
                Code.INVALID_TRANSACTION_ID,
                f"not a transaction id of this broker: {request.transaction_id!r}",
            )
        )
    code, text = service.end(int(request.transaction_id), request.message_id, resolution)
    return service_pb2.EndTransactionResponse(
        status=status(_CODES.get(code, Code.INTERNAL_SERVER_ERROR), text or "OK")
    )


def recover_command(check: Check, store_host: str) -> service_pb2.TelemetryCommand:
    """The ``RecoverOrphanedTransactionCommand`` of one check-back."""
    half = check.half
    message = to_v2_message(
        half,
        namespace="",
        receipt_handle="",
        attempt=check.check_times,
        invisible_ms=0,
        store_host=store_host,
    )
    message.topic.name = check.topic
    for name in _HIDDEN:
        message.user_properties.pop(name, None)
    system = message.system_properties
    system.message_type = definition_pb2.TRANSACTION
    system.queue_id = check.queue_id
    command = service_pb2.TelemetryCommand()
    recover = command.recover_orphaned_transaction_command
    recover.message.CopyFrom(message)
    recover.transaction_id = str(half.queue_offset)
    return command


def pump_telemetry(
    requests: Iterator[service_pb2.TelemetryCommand],
    answer: Callable[[service_pb2.TelemetryCommand], service_pb2.TelemetryCommand | None],
    service: TransactionService,
    closing: threading.Event,
    store_host: str,
) -> Iterator[service_pb2.TelemetryCommand]:
    """The server's side of one ``Telemetry`` stream (see module): ``answer`` gives the reply
    to each client command; check-backs of the topics the client publishes come in between."""
    mailbox = service.mailbox
    outbox: queue.Queue[object] = queue.Queue()
    topics: set[str] = set()
    sent: set[tuple[int, int]] = set()  # (half offset, check number): each once a stream

    def wake() -> None:
        outbox.put(_WAKE)

    def read() -> None:
        try:
            for command in _until_cancelled(requests):
                if command.HasField("settings") and command.settings.HasField("publishing"):
                    for topic in command.settings.publishing.topics:
                        if topic.name not in topics:
                            topics.add(topic.name)
                            mailbox.add_waiter(topic.name, wake)
                            wake()  # the checks already waiting
                reply = answer(command)
                if reply is not None:
                    outbox.put(reply)
        finally:
            outbox.put(None)

    reader = threading.Thread(target=read, name="aeromq-rmq5-telemetry", daemon=True)
    reader.start()
    try:
        while not closing.is_set():
            try:
                item = outbox.get(timeout=_READ_WAIT_S)
            except queue.Empty:
                continue
            if item is None:
                return
            if item is not _WAKE:
                assert isinstance(item, service_pb2.TelemetryCommand)
                yield item
                continue
            for topic in tuple(topics):
                for check in mailbox.peek(topic, _CHECKS_PER_WAKE):
                    key = (check.half.queue_offset, check.check_times)
                    if key not in sent:
                        if len(sent) >= _SENT_LIMIT:
                            sent.clear()
                        sent.add(key)
                        yield recover_command(check, store_host)
    finally:
        for topic in tuple(topics):
            mailbox.remove_waiter(topic, wake)


def _until_cancelled(
    requests: Iterator[service_pb2.TelemetryCommand],
) -> Iterator[service_pb2.TelemetryCommand]:
    """The client's commands until its stream ends, cancelled (an ``RpcError``) or not."""
    with contextlib.suppress(grpc.RpcError):
        yield from requests
