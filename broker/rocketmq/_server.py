"""``RocketMQEndpoint``: the broker's RocketMQ 5 endpoint, a gRPC server of its own serving
``apache.rocketmq.v2.MessagingService`` (with health checking and reflection) on
``grpc_host:rocketmq_port``.

Usage (by the broker)::

    endpoint = RocketMQEndpoint(store, config)
    endpoint.start()          # binds; endpoint.address is the real HOST:PORT
    ...
    endpoint.stop()

Each open client holds one of its threads for its telemetry stream and a receive holds one while
it long-polls, so the pool is larger than the control plane's.
"""

from __future__ import annotations

from typing import Final

import grpc

from aeromq.broker._errors import InvalidArgumentError
from aeromq.broker.config import BrokerConfig
from aeromq.broker.grpc._server_base import GrpcServerBase
from aeromq.broker.rocketmq._leader import EndpointLeadership
from aeromq.broker.rocketmq._pop import PopService
from aeromq.broker.rocketmq._service import EndpointSettings, MessagingServicer
from aeromq.broker.rocketmq._telemetry import SettingsPolicy
from aeromq.broker.store import MessageStore
from aeromq.broker.transaction import TransactionService
from aeromq.proto.apache.rocketmq.v2 import service_pb2, service_pb2_grpc

__all__ = ["MESSAGING_SERVICE", "RocketMQEndpoint"]

MESSAGING_SERVICE: Final = service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
_MAX_WORKERS: Final = 128


class RocketMQEndpoint(GrpcServerBase):
    """See the module. ``pop`` is the receive/ack state (``PopService``). ``leadership``: a
    broker group member's (``EndpointLeadership``): a member that does not lead forwards
    RocketMQ 5 calls to the leader's endpoint; None: a single broker. ``transactions``: the
    broker's transaction service (None: transactional messages refused)."""

    def __init__(
        self,
        store: MessageStore,
        config: BrokerConfig,
        leadership: EndpointLeadership | None = None,
        transactions: TransactionService | None = None,
    ) -> None:
        if config.rocketmq_port == 0:  # routes name the port: the broker picks a free one first
            raise InvalidArgumentError("the endpoint needs a known port", rocketmq_port=0)
        self.pop = PopService(store, config.rocketmq_max_delivery_attempts)
        super().__init__(
            config.grpc_host,
            config.rocketmq_port,
            {MESSAGING_SERVICE: self._register},
            max_workers=_MAX_WORKERS,
            name="aeromq-rocketmq",
        )
        self.servicer = MessagingServicer(
            store,
            self.pop,
            EndpointSettings(
                broker_name=config.broker_name,
                host=config.grpc_host,
                port=config.rocketmq_port,
                auto_create_topic=config.auto_create_topic,
                default_queue_count=config.default_queue_count,
                settings=SettingsPolicy(
                    max_body_bytes=config.max_message_size,
                    max_delivery_attempts=config.rocketmq_max_delivery_attempts,
                    long_polling_max_ms=config.long_polling_max_suspend_ms,
                ),
            ),
            leadership,
            transactions,
        )

    def _register(self, server: grpc.aio.Server) -> None:
        service_pb2_grpc.add_MessagingServiceServicer_to_server(self.servicer, server)

    def before_stop(self) -> None:
        """Wake long-polling receives and end telemetry streams."""
        self.pop.close()
        self.servicer.close()
