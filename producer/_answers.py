"""The broker's answer to a send read into its results, and the futures of async sends settled.

:func:`results_of` and :func:`group_results` turn a broker's answer (a ``SendAnswer`` read without
protobuf, or a ``SendMessageResponse``) into each send's
:class:`~producer.SendResults` (or raise the error of its status code); :func:`settle` completes
an async send's future, and :func:`call_back` runs a :data:`SendCallback` when it does.

Caller: the sync attempts (``SendPath.attempt_sync``), the async sends (``_async_sends.py``) and
the façade (``Producer.send_async``, ``send_batch_async``, for ``call_back``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from functools import lru_cache
from typing import Any, Final, TypeAlias

from aeromq.client import ClientError, MessageQueue, ResponseCode, error_for_code
from aeromq.client.failover import error_for_status
from aeromq.common import SendAnswer, encode_offset_message_id
from aeromq.producer._attempt import Attempt
from aeromq.producer._batch import SendResults
from aeromq.producer._send_result import SendResult, SendStatus
from aeromq.proto import messages_pb2

__all__ = [
    "SendCallback",
    "SendFuture",
    "call_back",
    "group_results",
    "result_of_one",
    "results_of",
    "settle",
    "store_host",
]

_log = logging.getLogger(__name__)

SendCallback = Callable[[Any, BaseException | None], object]
"""``callback(result, None)`` on success (a ``SendResult``, or a list for a batch),
``callback(None, error)`` on failure (the result untyped, so that a callback may say which)."""

SendFuture: TypeAlias = "Future[Any]"
"""An async send's future: of a ``SendResult`` for one message, of a list of them for a batch
(untyped: the ``single`` flag beside it says which, not a type)."""

_SEND_STATUS: Final[dict[int, SendStatus]] = {
    messages_pb2.SEND_OK: SendStatus.SEND_OK,
    messages_pb2.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    messages_pb2.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    messages_pb2.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_STORED_CODES: Final = (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT)


def results_of(
    response: messages_pb2.SendMessageResponse | SendAnswer, target: MessageQueue, attempt: Attempt
) -> SendResults:
    """The send's results, or the error of its status code. A stored answer of its count on
    its queue (the common one) is read here at once, else as :func:`group_results` reads it."""
    if (
        isinstance(response, SendAnswer)
        and response.message_count == len(attempt.unique_ids)
        and response.queue_id == target.queue_id
        and (not response.broker_name or response.broker_name == target.broker_name)
    ):
        return SendResults(
            _SEND_STATUS.get(response.send_status, SendStatus.SEND_OK),
            target,
            response.base_queue_offset,
            response.base_commit_log_offset,
            store_host(response.store_host),
            attempt.unique_ids,
        )
    return group_results(response, target, [attempt])[0]


def result_of_one(
    response: messages_pb2.SendMessageResponse | SendAnswer, target: MessageQueue, attempt: Attempt
) -> SendResult:
    """The result of a one-message send (``SendPath.send_one``), or the error of its status
    code: a stored answer of one message on its queue (the common one) read straight into its
    ``SendResult``, without the ``SendResults`` of a batch (three Python calls a send), any
    other as :func:`results_of` reads it; the same result either way."""
    if (
        isinstance(response, SendAnswer)
        and response.message_count == 1
        and len(attempt.unique_ids) == 1
        and response.queue_id == target.queue_id
        and (not response.broker_name or response.broker_name == target.broker_name)
    ):
        host, port = store_host(response.store_host)
        return SendResult(
            _SEND_STATUS.get(response.send_status, SendStatus.SEND_OK),
            attempt.unique_ids[0],
            encode_offset_message_id(host, port, response.base_commit_log_offset),
            target,
            response.base_queue_offset,
        )
    return results_of(response, target, attempt)[0]


def group_results(
    response: messages_pb2.SendMessageResponse | SendAnswer,
    target: MessageQueue,
    attempts: list[Attempt],
) -> list[SendResults]:
    """The results of each send of one request (their batches one after the other in it), or
    the error of its status code. ``response``: a stored send's answer read without protobuf
    (``SendAnswer``, ``common/_send_envelope.py``: the common case), or the
    ``SendMessageResponse`` of any other."""
    count = (
        len(attempts[0].unique_ids)
        if len(attempts) == 1
        else sum(len(attempt.unique_ids) for attempt in attempts)
    )
    if isinstance(response, SendAnswer):  # stored (its code says so), no protobuf message
        if response.message_count != count:
            raise _miscounted(response.code, "", response.message_count, count, target)
        queue_id, broker_name = response.queue_id, response.broker_name
        send_status, host_port = response.send_status, response.store_host
    else:
        status = response.status
        if status.code not in _STORED_CODES or response.message_count != count:
            if status.code == ResponseCode.NOT_LEADER:  # with the leader it names
                raise error_for_status(
                    status, broker=target.broker_name, topic=target.topic, queue_id=target.queue_id
                )
            raise _miscounted(status.code, status.message, response.message_count, count, target)
        queue_id, broker_name = response.queue_id, response.broker_name
        send_status, host_port = response.send_status, response.store_host
    queue = target
    if queue_id != target.queue_id or (broker_name and broker_name != target.broker_name):
        queue = MessageQueue(target.topic, broker_name or target.broker_name, queue_id)
    status_of = _SEND_STATUS.get(send_status, SendStatus.SEND_OK)
    host = store_host(host_port)
    queue_offset = response.base_queue_offset
    commit_log_offset = response.base_commit_log_offset
    if len(attempts) == 1:
        ids = attempts[0].unique_ids
        return [SendResults(status_of, queue, queue_offset, commit_log_offset, host, ids)]
    answers = []
    for attempt in attempts:
        ids = attempt.unique_ids
        answers.append(SendResults(status_of, queue, queue_offset, commit_log_offset, host, ids))
        queue_offset += len(ids)
        commit_log_offset += len(ids)
    return answers


def _miscounted(
    code: int, message: str, answered: int, count: int, target: MessageQueue
) -> ClientError:
    """The error of an answer that refused a send (``code``), or answered it for another
    number of messages than it holds."""
    return error_for_code(
        code or ResponseCode.SYSTEM_ERROR,
        message or f"the broker answered a send of {count} messages with {answered}",
        broker=target.broker_name,
        topic=target.topic,
        queue_id=target.queue_id,
    )


@lru_cache(maxsize=64)
def store_host(text: str) -> tuple[str, int]:
    """``"host:port"`` of the broker's answer as (host, port); ``("0.0.0.0", 0)`` when the port
    is not a number."""
    host, _, port = text.rpartition(":")
    try:
        return host, int(port)
    except ValueError:
        return "0.0.0.0", 0


def settle(
    future: SendFuture,
    *,
    value: SendResult | Sequence[SendResult] | None = None,
    error: BaseException | None = None,
) -> None:
    """Complete ``future`` with ``value`` or ``error``, unless it timed out or was cancelled."""
    try:  # not contextlib.suppress: once per send, and a try costs nothing when nothing raises
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)
    except InvalidStateError:  # timed out or cancelled meanwhile
        pass


def call_back(callback: SendCallback) -> Callable[[SendFuture], None]:
    """A done-callback of an async send's future that calls ``callback(result, error)`` and
    logs what it raises."""

    def done(future: SendFuture) -> None:
        error = future.exception()
        try:
            callback(None if error is not None else future.result(), error)
        except Exception:
            _log.exception("a send callback raised")

    return done
