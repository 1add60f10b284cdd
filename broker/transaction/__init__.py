"""Transactional messages (RocketMQ's): a half message held until its producer commits or rolls
it back, checked back when the producer does not say.

The store's put path hands a batch marked ``TRANSACTION_PREPARED_FLAG`` to
:class:`HalfRedirector`, which rewrites it into :data:`HALF_TOPIC` (real topic and queue in
``REAL_TOPIC``, ``REAL_QID``). :class:`TransactionService` ends transactions (a commit puts the
message to its real queue; commit and rollback alike leave an op record in :data:`OP_TOPIC`),
checks back the halves left without an end past its timeout through a :class:`CheckMailbox`
that producers poll (:class:`TransactionServicer`, aeromq's ``TransactionService`` gRPC calls),
and discards those checked ``check_max`` times. ``docs/transactions.md`` tells the whole story.

Modules: ``_names`` (topics, properties, outcomes), ``_redirect`` (the store hook), ``_records``
(the committed message, op records), ``_table`` (the pending halves, state only), ``_mailbox``
(checks by producer group), ``_checkpoint`` (its file), ``_service`` (ends and the thread),
``_grpc`` (the servicer).
"""

from aeromq.broker.transaction._grpc import TRANSACTION_SERVICE, TransactionServicer
from aeromq.broker.transaction._mailbox import Check, CheckMailbox
from aeromq.broker.transaction._names import (
    HALF_QUEUE_ID,
    HALF_TOPIC,
    OP_QUEUE_ID,
    OP_TOPIC,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_ID,
    PROPERTY_TRANSACTION_PREPARED,
    Resolution,
)
from aeromq.broker.transaction._redirect import HalfRedirector
from aeromq.broker.transaction._service import TransactionService
from aeromq.broker.transaction._table import HalfTable, PendingHalf

__all__ = [
    "HALF_QUEUE_ID",
    "HALF_TOPIC",
    "OP_QUEUE_ID",
    "OP_TOPIC",
    "PROPERTY_PRODUCER_GROUP",
    "PROPERTY_TRANSACTION_ID",
    "PROPERTY_TRANSACTION_PREPARED",
    "TRANSACTION_SERVICE",
    "Check",
    "CheckMailbox",
    "HalfRedirector",
    "HalfTable",
    "PendingHalf",
    "Resolution",
    "TransactionService",
    "TransactionServicer",
]
