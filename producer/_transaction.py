"""``TransactionProducer``: sends transactional messages (RocketMQ's
``TransactionMQProducer``).

::

    class Orders(TransactionListener):
        def execute_local_transaction(self, message, arg):
            db.insert(arg)                       # the local transaction
            return LocalTransactionState.COMMIT_MESSAGE
        def check_local_transaction(self, message_ext):
            return state_of(message_ext.keys)    # asked when the end did not arrive

    with TransactionProducer("order-producers", "127.0.0.1:8081", Orders()) as producer:
        producer.send_message_in_transaction(Message("orders", b"..."), arg=order)

A send stores a half message (the message with ``TRAN_MSG`` and ``PGROUP``, its batch marked
``TRANSACTION_PREPARED_FLAG``): the broker holds it where no consumer reads. Then the listener's
``execute_local_transaction`` runs, and its outcome ends the transaction on the broker that holds
the half (``EndTransaction`` on its gRPC control plane): a commit makes the message visible in its
queue, a rollback drops it; ``UNKNOW`` (or an exception) leaves it to the broker's check-back,
which any producer of the group answers through ``check_local_transaction``
(``_transaction_checks``: one poller a broker). An end that fails is logged, not raised: the
check-back resolves it, as RocketMQ's one-way end does.

The half messages go through a :class:`~producer.Producer` of their own (sync sends, no merging
with other sends, no compression), so a batch holds half messages only.

Caller: the application.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Final

from aeromq.client import (
    ClientError,
    GrpcClient,
    IllegalArgumentError,
    Message,
    RouteResolver,
    parse_endpoints,
)
from aeromq.producer._config import ProducerConfig
from aeromq.producer._producer import Producer
from aeromq.producer._transaction_checks import CheckPoller, end_request
from aeromq.producer._transaction_listener import (
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)

__all__ = ["TransactionProducer"]

_log = logging.getLogger(__name__)

PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
PROPERTY_PRODUCER_GROUP: Final = "PGROUP"


class TransactionProducer:
    """A transactional producer of group ``group`` (see module). ``endpoints``: brokers' gRPC
    addresses (or name servers', with ``namesrv``: then checks are polled from the brokers this
    producer has sent to). ``check_poll_ms``: how long one check poll waits."""

    def __init__(
        self,
        group: str,
        endpoints: str | Sequence[str],
        listener: TransactionListener,
        *,
        namesrv: bool = False,
        config: ProducerConfig | None = None,
        check_poll_ms: int = 10_000,
    ) -> None:
        if check_poll_ms <= 0:
            raise IllegalArgumentError("check_poll_ms must be > 0", check_poll_ms=check_poll_ms)
        config = dataclasses.replace(
            config or ProducerConfig(), compression=None, async_requests_in_flight=0
        )
        self.group = group
        self.listener = listener
        self.check_poll_ms = check_poll_ms
        self._producer = Producer(group, endpoints, namesrv=namesrv, config=config)
        self._routes = RouteResolver(
            endpoints,
            kind="namesrv" if namesrv else "auto",
            credentials=config.credentials,
            tls=config.tls,
        )
        self._brokers: tuple[str, ...] = () if namesrv else parse_endpoints(endpoints)
        self._pollers: dict[str, CheckPoller] = {}

    def start(self) -> TransactionProducer:
        """Start the producer and the check pollers of the brokers known; idempotent."""
        self._producer.start()
        for address in self._brokers:
            self._poll(address)
        return self

    def shutdown(self) -> None:
        """Stop the pollers and the producer; idempotent."""
        pollers, self._pollers = list(self._pollers.values()), {}
        for poller in pollers:
            poller.request_stop()  # all first: closing the channels then ends every poll
        self._routes.close()
        for poller in pollers:
            poller.stop()
        self._producer.shutdown()

    def __enter__(self) -> TransactionProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    @property
    def checks_answered(self) -> int:
        """Check-backs this producer answered with a commit or rollback."""
        return sum(poller.answered for poller in self._pollers.values())

    def send_message_in_transaction(
        self, message: Message, arg: object = None
    ) -> TransactionSendResult:
        """Store ``message`` as a half message, run the listener's local transaction with
        ``arg``, and end the transaction as it says (see module). Raises the send's error when
        the half message is not stored (then the local transaction does not run)."""
        message.put_system_property(PROPERTY_TRANSACTION_PREPARED, "true")
        message.put_system_property(PROPERTY_PRODUCER_GROUP, self.group)
        sent = self._producer.send(message)
        try:
            state = self.listener.execute_local_transaction(message, arg)
        except Exception:
            _log.exception("execute_local_transaction raised: message_id=%s", sent.msg_id)
            state = LocalTransactionState.UNKNOW
        queue = sent.message_queue
        request = end_request(self.group, queue.topic, sent.queue_offset, sent.msg_id, state)
        if request is not None:
            try:
                self._broker(queue.topic, queue.broker_name).end_transaction(request)
            except ClientError as exc:  # the check-back resolves it
                _log.warning("cannot end the transaction, left to the check-back: %s", exc)
        return TransactionSendResult(
            sent.send_status,
            sent.msg_id,
            sent.offset_msg_id,
            queue,
            sent.queue_offset,
            sent.msg_id,
            state,
        )

    def _broker(self, topic: str, broker_name: str) -> GrpcClient:
        address = self._routes.route(topic).broker(broker_name).grpc_address
        self._poll(address)
        return self._routes.client(address)

    def _poll(self, address: str) -> None:
        if address in self._pollers:
            return
        poller = self._pollers[address] = CheckPoller(
            self.group,
            self.listener,
            lambda: self._routes.client(address),
            poll_ms=self.check_poll_ms,
        )
        poller.start(f"aeromq-txn-checks-{address}")
