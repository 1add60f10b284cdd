"""aeromq's producer: sends messages to a topic's queues on brokers over the transport.

:class:`Producer` (RocketMQ's ``DefaultMQProducer``): sync, async, oneway and batch sends, queue
selection (round robin, by key hash, random, or your own selector), retries on another queue or
broker, unique message ids, a client-side max message size; columnar sends
(``send_columns``: Arrow or numpy columns, a message per row, no Python object per row). Routes come from brokers or name
servers over gRPC, or from a :class:`StaticRoute`. :class:`TransactionProducer` (RocketMQ's
``TransactionMQProducer``) sends transactional messages with a :class:`TransactionListener`. Each send is one record batch, encoded once
(:mod:`common.record_batch`); a batch's :class:`SendResults` are made as they are read. ``aeromq produce`` is the command line.
"""

from aeromq.producer._answers import SendCallback
from aeromq.producer._batch import SendResults
from aeromq.producer._columns_input import ColumnValues, TextValues
from aeromq.producer._columns_queues import ColumnSelector
from aeromq.producer._columns_result import ColumnSendResults
from aeromq.producer._config import ProducerConfig
from aeromq.producer._hooks import SendMessageContext, SendMessageHook, SendMode
from aeromq.producer._metrics import ProducerMetrics
from aeromq.producer._producer import Producer
from aeromq.producer._route import RouteSource, StaticRoute
from aeromq.producer._selector import (
    KeyHashSelector,
    QueueSelector,
    RandomSelector,
    RoundRobinSelector,
)
from aeromq.producer._send_result import SendResult, SendStatus
from aeromq.producer._transaction import TransactionProducer
from aeromq.producer._transaction_listener import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)

__all__ = [
    "ColumnSelector",
    "ColumnSendResults",
    "ColumnValues",
    "KeyHashSelector",
    "LocalTransactionState",
    "Producer",
    "ProducerConfig",
    "ProducerMetrics",
    "QueueSelector",
    "RandomSelector",
    "RoundRobinSelector",
    "RouteSource",
    "SendCallback",
    "SendMessageContext",
    "SendMessageHook",
    "SendMode",
    "SendResult",
    "SendResults",
    "SendStatus",
    "StaticRoute",
    "TextValues",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
]
