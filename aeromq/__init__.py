"""aeromq: a RocketMQ-style broker and lite pull consumer on an Aeron-style transport.

The user API is here::

    from aeromq import DefaultLitePullConsumer, LitePullConsumerConfig, Message, Producer

Subpackages, one role each: ``aeromq.transport`` (the Aeron-style transport: media driver and
client), ``aeromq.common`` (what broker and clients share: codes, names, rules), ``aeromq.client``
(the message model and broker sessions), ``aeromq.producer``, ``aeromq.consumer``,
``aeromq.broker`` and ``aeromq.proto`` (the wire schema). The command line (``aeromq
SUBCOMMAND``, ``python -m aeromq``) is ``aeromq._cli``, above them all.

Names are imported on first use, so ``import aeromq`` (and ``aeromq stat``) loads no gRPC,
protobuf or broker code until a name that needs it is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from aeromq.client import (
        BrokerBusyError,
        BrokerInternalError,
        BrokerUnavailableError,
        ClientError,
        DiskFullError,
        IllegalArgumentError,
        IllegalStateError,
        InvalidExpressionError,
        Message,
        MessageExt,
        MessageIllegalError,
        MessageQueue,
        MessageSelector,
        MessageTooLargeError,
        NoPermissionError,
        NotSupportedError,
        OffsetIllegalError,
        RequestTimeoutError,
        TopicNotFoundError,
    )
    from aeromq.consumer import (
        AllocateMessageQueueAveragely,
        AllocateMessageQueueStrategy,
        ConsumeFromWhere,
        DefaultLitePullConsumer,
        LitePullConsumerConfig,
        MessageBatch,
        MessageModel,
        TopicMessageQueueChangeListener,
    )
    from aeromq.producer import (
        KeyHashSelector,
        Producer,
        ProducerConfig,
        QueueSelector,
        RandomSelector,
        RoundRobinSelector,
        SendCallback,
        SendResult,
        SendResults,
        SendStatus,
        StaticRoute,
    )

# name -> the subpackage that defines it
_EXPORTS: dict[str, str] = {
    # messages
    "Message": "aeromq.client",
    "MessageExt": "aeromq.client",
    "MessageQueue": "aeromq.client",
    "MessageSelector": "aeromq.client",
    # producing
    "KeyHashSelector": "aeromq.producer",
    "Producer": "aeromq.producer",
    "ProducerConfig": "aeromq.producer",
    "QueueSelector": "aeromq.producer",
    "RandomSelector": "aeromq.producer",
    "RoundRobinSelector": "aeromq.producer",
    "SendCallback": "aeromq.producer",
    "SendResult": "aeromq.producer",
    "SendResults": "aeromq.producer",
    "SendStatus": "aeromq.producer",
    "StaticRoute": "aeromq.producer",
    # consuming
    "AllocateMessageQueueAveragely": "aeromq.consumer",
    "AllocateMessageQueueStrategy": "aeromq.consumer",
    "ConsumeFromWhere": "aeromq.consumer",
    "DefaultLitePullConsumer": "aeromq.consumer",
    "LitePullConsumerConfig": "aeromq.consumer",
    "MessageBatch": "aeromq.consumer",
    "MessageModel": "aeromq.consumer",
    "TopicMessageQueueChangeListener": "aeromq.consumer",
    # errors (the client's tree; its root is ClientError)
    "BrokerBusyError": "aeromq.client",
    "BrokerInternalError": "aeromq.client",
    "BrokerUnavailableError": "aeromq.client",
    "ClientError": "aeromq.client",
    "DiskFullError": "aeromq.client",
    "IllegalArgumentError": "aeromq.client",
    "IllegalStateError": "aeromq.client",
    "InvalidExpressionError": "aeromq.client",
    "MessageIllegalError": "aeromq.client",
    "MessageTooLargeError": "aeromq.client",
    "NoPermissionError": "aeromq.client",
    "NotSupportedError": "aeromq.client",
    "OffsetIllegalError": "aeromq.client",
    "RequestTimeoutError": "aeromq.client",
    "TopicNotFoundError": "aeromq.client",
}

# Grouped by role, as the documentation presents them (so not in isort order).
__all__ = [  # noqa: RUF022
    "__version__",
    # messages
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageSelector",
    # producing
    "KeyHashSelector",
    "Producer",
    "ProducerConfig",
    "QueueSelector",
    "RandomSelector",
    "RoundRobinSelector",
    "SendCallback",
    "SendResult",
    "SendResults",
    "SendStatus",
    "StaticRoute",
    # consuming
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueStrategy",
    "ConsumeFromWhere",
    "DefaultLitePullConsumer",
    "LitePullConsumerConfig",
    "MessageBatch",
    "MessageModel",
    "TopicMessageQueueChangeListener",
    # errors
    "BrokerBusyError",
    "BrokerInternalError",
    "BrokerUnavailableError",
    "ClientError",
    "DiskFullError",
    "IllegalArgumentError",
    "IllegalStateError",
    "InvalidExpressionError",
    "MessageIllegalError",
    "MessageTooLargeError",
    "NoPermissionError",
    "NotSupportedError",
    "OffsetIllegalError",
    "RequestTimeoutError",
    "TopicNotFoundError",
]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'aeromq' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
