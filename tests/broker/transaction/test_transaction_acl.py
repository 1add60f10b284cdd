"""What the ACL asks of the transaction calls: ``pub`` on the ended message's topic, ``pub`` on
the producer group whose check-backs a poll reads (they carry its half messages)."""

from __future__ import annotations

from aeromq.broker.security import RPC_PERMISSIONS, Permission, ResourceKind
from aeromq.proto import transaction_pb2


def test_should_need_pub_on_the_topic_to_end_and_on_the_group_to_poll_checks() -> None:
    end = RPC_PERMISSIONS["/aeromq.v1.TransactionService/EndTransaction"]
    poll = RPC_PERMISSIONS["/aeromq.v1.TransactionService/PollTransactionChecks"]
    assert end(transaction_pb2.EndTransactionRequest(topic="orders", producer_group="g")) == [
        (ResourceKind.TOPIC, "orders", Permission.PUB)
    ]
    assert poll(transaction_pb2.PollTransactionChecksRequest(producer_group="g")) == [
        (ResourceKind.GROUP, "g", Permission.PUB)
    ]
