"""RocketMQ 5 clients against aeromq: the broker's ``apache.rocketmq.v2.MessagingService``
endpoint (``RocketMQEndpoint``), on by default on its own port (``rocketmq_port``).

Split by role: ``_route`` (routes, assignments), ``_send`` (SendMessage), ``_pop`` (the
SimpleConsumer's receive, ack, invisibility and dead letters on the store), ``_telemetry``
(the settings answered on a client's stream), ``_receipt`` (receipt handles), ``_convert``
(messages between the protocol and the store), ``_status`` (errors and their ``Code``),
``_service`` (the servicer), ``_server`` (the gRPC server) and ``_leader`` (a broker group's
member that does not lead forwards RocketMQ 5 calls to the leader's endpoint:
``EndpointLeadership``).
"""

from __future__ import annotations

from aeromq.broker.rocketmq._leader import EndpointLeadership, LeaderForwarder
from aeromq.broker.rocketmq._pop import DLQ_PREFIX, PopService, dlq_topic
from aeromq.broker.rocketmq._receipt import ReceiptHandle
from aeromq.broker.rocketmq._server import MESSAGING_SERVICE, RocketMQEndpoint
from aeromq.broker.rocketmq._status import ProtocolStatusError

__all__ = [
    "DLQ_PREFIX",
    "MESSAGING_SERVICE",
    "EndpointLeadership",
    "LeaderForwarder",
    "PopService",
    "ProtocolStatusError",
    "ReceiptHandle",
    "RocketMQEndpoint",
    "dlq_topic",
]
