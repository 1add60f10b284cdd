"""``SendResult`` and ``SendStatus``: what a send returns (RocketMQ's, one per message)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from aeromq.client import MessageQueue

__all__ = ["SendResult", "SendStatus"]


class SendStatus(enum.Enum):
    """RocketMQ's ``SendStatus``. Anything but ``SEND_OK`` means stored, but not as safely as
    asked: ``FLUSH_DISK_TIMEOUT`` is stored in the page cache and not yet durable under SYNC
    flush."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(frozen=True, slots=True)
class SendResult:
    """One stored message: its ids, queue and queue offset.

    ``msg_id`` is the producer's unique id (``UNIQ_KEY``); ``offset_msg_id`` is the broker's
    id of where it stored the message (store host and commit log offset).
    """

    send_status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str = ""

    @property
    def ok(self) -> bool:
        """True when ``send_status`` is ``SEND_OK``."""
        return self.send_status is SendStatus.SEND_OK
