"""A one-at-a-time ``Producer.send`` on a straight path: :func:`send_one`.

The common send (one message, to no queue in particular, by a running producer with no send
hooks, no queue selector and no compression: the defaults) took fifteen Python layers of the
general path (``SendPath.send_sync``, ``prepare``, ``attempt_sync``, ``request``, the batch's
``SendResults``...). Here it is one function: ``prepare``'s checks of one message, its record
batch (``encode_one``), its first try (the queue from ``QueueRouter.target``, the session it
sent on last for the same route object, the idempotent producer's stamp, the request in one
native call) and the answer read straight into its ``SendResult`` (``result_of_one``). Only the
first try is here: a try that fails goes on in ``SendPath.attempt_sync`` with the same
``Attempt``, as if it had been that loop's first (the same retries, errors, metrics and
sequences); every other send takes ``send_sync``. ``docs/history/latency-log.md``, "A
one-at-a-time send in fewer Python calls", lists the calls before and after.

Caller: ``Producer.send``.
"""

from __future__ import annotations

import time

from aeromq.client import ClientError, Message
from aeromq.common import MAX_FRAMING_BYTES, SendRequest, check_body
from aeromq.producer._answers import result_of_one
from aeromq.producer._attempt import Attempt
from aeromq.producer._batch import encode_one
from aeromq.producer._send_path import (
    SendPath,
    encoded_over_maximum,
    over_maximum,
    raise_sent_error,
)
from aeromq.producer._send_result import SendResult

__all__ = ["send_one"]

_tuple_new = tuple.__new__


def send_one(path: SendPath, message: Message, timeout_ms: int | None) -> SendResult:
    """``path.send_sync`` of one message to no queue in particular (``Producer.send``): on a
    straight path when the producer has no hooks, selector or compression and is running
    (see module), else on ``send_sync``'s. The straight path is ``prepare``'s checks of one message and its first
    try, read into its ``SendResult`` without the layers of the general path (half its
    Python calls); a failed try goes on as ``attempt_sync`` goes on: the same results,
    errors, retries, metrics and sequences."""
    sessions = path.sessions
    if path.hooks or not path.plain or sessions is None or not path.running:
        return path.send_sync([message], timeout_ms, None, None, None)[0]
    started_ns = time.perf_counter_ns()
    config = path.config
    sequences = path.sequences
    attempt: Attempt | None = None
    try:
        max_size = config.max_message_size
        body = message.body
        total = len(body)
        if total == 0 or total > max_size:
            check_body(body, max_size)
            if total > max_size:
                raise over_maximum(total, max_size)
        timeout = config.send_timeout_ms if timeout_ms is None else timeout_ms
        deadline_ns = time.monotonic_ns() + timeout * 1_000_000
        messages = [message]
        batch, unique_ids = encode_one(
            messages, path._ids, time.time_ns() // 1_000_000, path._born_host
        )
        if len(batch) > max_size + MAX_FRAMING_BYTES:
            raise encoded_over_maximum(len(batch), max_size)
        attempt = Attempt(
            messages,
            batch,
            unique_ids,
            deadline_ns,
            1 + config.retry_times_when_send_failed,
            None,
            None,
        )
        remaining_ms = (deadline_ns - time.monotonic_ns()) // 1_000_000
        if remaining_ms <= 0:  # attempt_sync says it timed out before an attempt
            result = path.attempt_sync(attempt, timeout_ms)[0]
        else:
            attempt.attempts_left -= 1
            route, target = path.router.target(attempt)
            try:
                key = (target.topic, target.broker_name)
                known = path.sessions_of.get(key)
                if known is not None and known[0] is route and known[1].is_open:
                    session = known[1]
                else:
                    session = sessions.session(route.broker(target.broker_name))
                    path.sessions_of[key] = (route, session)
                stamp = None if sequences is None else sequences.stamp(attempt, target)
                # as request() makes it, without compression; every field given, through
                # tuple's __new__ (a NamedTuple's own is a Python function)
                if stamp is None:
                    fields = (path.group, target.topic, target.queue_id, batch, None, 0, 0)
                    request = _tuple_new(SendRequest, fields)
                    limit_ms = remaining_ms
                else:
                    request = _tuple_new(
                        SendRequest,
                        (
                            path.group,
                            target.topic,
                            target.queue_id,
                            batch,
                            stamp.producer_id,
                            stamp.base_sequence,
                            stamp.epoch,
                        ),
                    )
                    # attempt_limit_ms of an idempotent try
                    limit_ms = min(config.request_timeout_ms, remaining_ms)
                try:
                    response = session.request(request, limit_ms)
                except ClientError as sent_error:
                    raise_sent_error(sent_error, attempt, limit_ms, remaining_ms)
                result = result_of_one(response, target, attempt)
            except ClientError as exc:
                if not path.tried_again(exc, route, target, attempt):
                    raise
                result = path.attempt_sync(attempt, timeout_ms, exc)[0]
    except BaseException:
        if attempt is not None:
            path.settle(attempt, ok=False)
        path.meter.on_failed()
        raise
    if sequences is not None:
        sequences.settle(attempt, ok=True)
    path.meter.on_sent(1, time.perf_counter_ns() - started_ns)
    return result
