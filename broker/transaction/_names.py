"""Transactional messages' names: the system topics, the properties, the outcomes.

RocketMQ's own spellings (``TransactionalMessageUtil``, ``MessageConst``), so that a RocketMQ
operator finds what they know. Caller: every module of ``broker.transaction``.
"""

from __future__ import annotations

import enum
from typing import Final

from aeromq.common import PROPERTY_REAL_QUEUE_ID, PROPERTY_REAL_TOPIC

__all__ = [
    "HALF_QUEUE_ID",
    "HALF_TOPIC",
    "OP_QUEUE_ID",
    "OP_TAG",
    "OP_TOPIC",
    "PROPERTY_PREPARED_QUEUE_OFFSET",
    "PROPERTY_PRODUCER_GROUP",
    "PROPERTY_REAL_QUEUE_ID",
    "PROPERTY_REAL_TOPIC",
    "PROPERTY_TRANSACTION_ID",
    "PROPERTY_TRANSACTION_OUTCOME",
    "PROPERTY_TRANSACTION_PREPARED",
    "Resolution",
]

HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
"""Where half messages wait for their end (queue :data:`HALF_QUEUE_ID`): no consumer reads it."""
HALF_QUEUE_ID: Final = 0
OP_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
"""Where each end is recorded (queue :data:`OP_QUEUE_ID`): the half's queue offset as the body."""
OP_QUEUE_ID: Final = 0
OP_TAG: Final = "d"
"""An op record's tag (RocketMQ's ``TransactionalMessageUtil.REMOVE_TAG``)."""

PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
PROPERTY_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
"""On a committed message: its half message's queue offset."""
PROPERTY_TRANSACTION_ID: Final = "__transactionId__"
PROPERTY_TRANSACTION_OUTCOME: Final = "TRAN_OUTCOME"
"""On an op record: how the transaction ended (a :class:`Resolution` name; aeromq's own)."""


class Resolution(enum.IntEnum):
    """How a half message ended: the op record's outcome (COMMIT and ROLLBACK are the proto's
    ``TransactionResolution`` numbers)."""

    COMMIT = 1
    ROLLBACK = 2
    DISCARD = 3
    """Checked ``transaction_check_max`` times without an answer: dropped (RocketMQ puts it in
    ``TRANS_CHECK_MAX_TIME_TOPIC``)."""
