"""The store's half-message hook: a batch marked as a transaction's half message, rewritten into
the half topic before it is appended.

The transaction producer (and the RocketMQ 5 endpoint, for a TRANSACTION message) marks the
batch with :data:`~common.record_batch.TRANSACTION_PREPARED_FLAG` (RocketMQ's sys flag
``TRANSACTION_PREPARED_TYPE``); the put path tests that bit and hands a marked batch here
(``PutPath.half_redirect``), as it hands a timer batch to ``broker.timer``. Each record keeps its
body, tag, flag, born time and properties, and gains its real topic and queue (``REAL_TOPIC``,
``REAL_QID``) as the last two properties; the batch is encoded anew for
:data:`~broker.transaction.HALF_TOPIC` queue 0, without the flag (and without a timer's or an
idempotent producer's marks: a commit puts the message as a new send), and the put path appends
that instead. The send's answer is the half's queue offset, which the producer's end names.

Caller: the store's put path, on the putting thread. Cost: only marked batches come here.
"""

from __future__ import annotations

from typing import Final

from aeromq.broker.transaction._names import (
    HALF_QUEUE_ID,
    HALF_TOPIC,
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
)
from aeromq.common import RecordBatch
from aeromq.common.record_batch import (
    COMPRESSED_FLAG,
    PRODUCER_STATE_FLAG,
    TIMER_FLAG,
    TRANSACTION_PREPARED_FLAG,
)

__all__ = ["HalfRedirector"]

_TOPIC_BYTES: Final = HALF_TOPIC.encode()
_DROPPED_ATTRIBUTES: Final = TRANSACTION_PREPARED_FLAG | TIMER_FLAG | PRODUCER_STATE_FLAG


class HalfRedirector:
    """Rewrites half-message batches into the half topic (see module). Counts ``batches`` and
    ``messages``."""

    def __init__(self) -> None:
        self.batches = 0
        self.messages = 0

    def __call__(
        self, batch: memoryview, topic: str, queue_id: int, now_ms: int
    ) -> tuple[bytearray, str, int] | str:
        """The batch to append instead, with its topic and queue id; or why it is refused."""
        view = RecordBatch(batch)
        if view.attributes & COMPRESSED_FLAG:
            return f"a half message may not be compressed topic={topic!r}"
        bodies, tags, properties = view.record_parts()
        tail = (
            f"{PROPERTY_REAL_TOPIC}\x01{topic}\x02{PROPERTY_REAL_QUEUE_ID}\x01{queue_id}\x02"
        ).encode()
        try:
            rewritten = view.reencoded(
                _TOPIC_BYTES,
                bodies,
                tags,
                [record + tail for record in properties],
                drop_attributes=_DROPPED_ATTRIBUTES,
            )
        except (ValueError, OverflowError) as exc:  # properties too long with the tail
            return f"cannot hold the batch in the half topic: {exc} topic={topic!r}"
        self.batches += 1
        self.messages += view.count
        return rewritten, HALF_TOPIC, HALF_QUEUE_ID
