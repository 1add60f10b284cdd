"""What the transaction service writes and reads: the committed message made from its half, the
op record of an end, an op record read back. Pure functions, no I/O.

A half message (``_redirect``) is its producer's message plus ``REAL_TOPIC`` and ``REAL_QID``. Its
commit puts the message to that queue without those two, with ``TRAN_PREPARED_QUEUE_OFFSET`` (the
half's queue offset), as RocketMQ's ``EndTransactionProcessor`` does; ``TRAN_MSG`` and ``PGROUP``
stay, so a consumer can tell a transactional message. An op record (``RMQ_SYS_TRANS_OP_HALF_TOPIC``
queue 0, tag ``d``) holds the half's queue offset as its body, in decimal, and the outcome in
``TRAN_OUTCOME``: commit, rollback and discard alike, so a half with an op record is done.

Caller: the transaction service.
"""

from __future__ import annotations

from aeromq.broker.store import InboundMessage, StoredMessage
from aeromq.broker.transaction._names import (
    OP_QUEUE_ID,
    OP_TAG,
    OP_TOPIC,
    PROPERTY_PREPARED_QUEUE_OFFSET,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_OUTCOME,
    Resolution,
)
from aeromq.common import PROPERTY_TAGS
from aeromq.common.record_batch import TRANSACTION_PREPARED_FLAG

__all__ = ["committed_message", "op_message", "read_op", "real_queue"]


def real_queue(half: StoredMessage) -> tuple[str, int] | None:
    """The half's real topic and queue id; None when it carries none (not a half)."""
    topic = half.properties.get(PROPERTY_REAL_TOPIC)
    queue = half.properties.get(PROPERTY_REAL_QUEUE_ID)
    if not topic or queue is None or not queue.isdigit():
        return None
    return topic, int(queue)


def committed_message(half: StoredMessage, topic: str, queue_id: int) -> InboundMessage:
    """The message a commit of ``half`` puts to ``topic`` and ``queue_id`` (its real queue)."""
    properties = {
        name: value
        for name, value in half.properties.items()
        if name != PROPERTY_REAL_TOPIC and name != PROPERTY_REAL_QUEUE_ID
    }
    properties[PROPERTY_PREPARED_QUEUE_OFFSET] = str(half.queue_offset)
    return InboundMessage(
        topic,
        queue_id,
        half.body,
        properties,
        flag=half.flag,
        sys_flag=half.sys_flag & ~TRANSACTION_PREPARED_FLAG,
        born_timestamp_ms=half.born_timestamp_ms,
        born_host=half.born_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.queue_offset,
    )


def op_message(half_offset: int, resolution: Resolution) -> InboundMessage:
    """The op record of the end of the half at queue offset ``half_offset``."""
    return InboundMessage(
        OP_TOPIC,
        OP_QUEUE_ID,
        b"%d" % half_offset,
        {PROPERTY_TAGS: OP_TAG, PROPERTY_TRANSACTION_OUTCOME: resolution.name},
    )


def read_op(op: StoredMessage) -> tuple[int, Resolution] | None:
    """``(half offset, outcome)`` of an op record; None when it is not one."""
    try:
        offset = int(op.body)
        outcome = Resolution[op.properties.get(PROPERTY_TRANSACTION_OUTCOME, "")]
    except (ValueError, KeyError):
        return None
    return offset, outcome
