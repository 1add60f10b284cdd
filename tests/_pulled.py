"""Reading a raw pull answer in tests as the consumer reads it (its record batches cut to the
pulled range)."""

from __future__ import annotations

from aeromq.client import MessageQueue, build_subscription_data
from aeromq.common import PullAnswer
from aeromq.consumer import MessageBatch, read_pulled_batches
from aeromq.proto import messages_pb2


def pulled(
    response: PullAnswer | messages_pb2.PullMessageResponse,
    topic: str,
    queue_id: int,
    offset: int,
    expression: str = "*",
    broker_name: str = "broker",
) -> MessageBatch:
    """The messages a consumer takes from ``response``, the answer to a pull of (``topic``,
    ``queue_id``) from ``offset`` with the tag ``expression``."""
    return read_pulled_batches(
        response.batches,
        MessageQueue(topic, broker_name, queue_id),
        broker_name,
        offset,
        response.next_begin_offset,
        build_subscription_data(topic, expression),
    )
