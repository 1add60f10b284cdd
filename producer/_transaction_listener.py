"""What a transactional producer's application provides and gets: :class:`TransactionListener`
(RocketMQ's, two methods), :class:`LocalTransactionState` (RocketMQ's spellings, ``UNKNOW``
included) and :class:`TransactionSendResult`.

Caller: the application; :class:`~producer.TransactionProducer`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from aeromq.client import Message, MessageExt
from aeromq.producer._send_result import SendResult

__all__ = ["LocalTransactionState", "TransactionListener", "TransactionSendResult"]


class LocalTransactionState(enum.Enum):
    """How the local transaction ended (RocketMQ's ``LocalTransactionState``)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    """Committed: the half message becomes visible to consumers."""
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    """Rolled back: the half message is dropped, never delivered."""
    UNKNOW = "UNKNOW"
    """Not known yet (RocketMQ's spelling): the broker checks back later."""


class TransactionListener(Protocol):
    """The application's side of a transaction (RocketMQ's ``TransactionListener``)."""

    def execute_local_transaction(self, message: Message, arg: object) -> LocalTransactionState:
        """Run the local transaction of ``message`` (its half message is stored); ``arg`` is
        what ``send_message_in_transaction`` was given. An exception counts as ``UNKNOW``.
        Caller: ``send_message_in_transaction``, on its thread."""
        ...

    def check_local_transaction(self, message_ext: MessageExt) -> LocalTransactionState:
        """The outcome of the transaction of ``message_ext``, whose half message the broker
        holds without an end (this producer's group sent it, maybe another process). An
        exception counts as ``UNKNOW``. Caller: the producer's check thread (one a broker)."""
        ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult(SendResult):
    """A half message's :class:`SendResult` (its ``queue_offset`` is in the broker's half topic)
    and how its local transaction ended (RocketMQ's ``TransactionSendResult``)."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
