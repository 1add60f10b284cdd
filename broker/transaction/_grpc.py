# ruff: noqa: N802  (method names are the RPC names that gRPC dispatches on)
"""``TransactionServicer``: aeromq's ``TransactionService`` calls over the transaction service.

``EndTransaction`` runs on a worker thread of the gRPC server (an end puts to the store, which
may wait for the disk). ``PollTransactionChecks`` is a coroutine on the server's event loop: it
waits, without a thread, until the mailbox wakes it with checks of its group or its time is up.
A long poll rather than a stream: a producer's checks are rare and one call at a time carries
them, with no per-producer registration (a producer that stops polling is simply not woken), and
it reuses the control plane's unary plumbing (errors, ACL, TLS, retries).

Caller: the broker's gRPC server.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

import grpc

from aeromq.broker.transaction._mailbox import Check
from aeromq.broker.transaction._names import PROPERTY_TRANSACTION_ID, Resolution
from aeromq.broker.transaction._service import TransactionService
from aeromq.common import (
    PROPERTY_REAL_QUEUE_ID,
    PROPERTY_REAL_TOPIC,
    PROPERTY_UNIQ_KEY,
    ResponseCode,
)
from aeromq.proto import common_pb2, transaction_pb2, transaction_pb2_grpc

__all__ = ["TRANSACTION_SERVICE", "TransactionServicer"]

TRANSACTION_SERVICE: Final = transaction_pb2.DESCRIPTOR.services_by_name[
    "TransactionService"
].full_name
_DEFAULT_MAX_CHECKS: Final = 32
_MAX_POLL_MS: Final = 30_000


class TransactionServicer(transaction_pb2_grpc.TransactionServiceServicer):
    """The calls of ``TransactionService`` (see module) over ``service``."""

    def __init__(self, service: TransactionService) -> None:
        self._service = service

    def register(self, server: grpc.aio.Server) -> None:
        """Serve these calls on ``server`` (a ``Registrar`` of the broker's gRPC server)."""
        transaction_pb2_grpc.add_TransactionServiceServicer_to_server(self, server)

    def EndTransaction(
        self, request: transaction_pb2.EndTransactionRequest, context: grpc.ServicerContext
    ) -> transaction_pb2.EndTransactionResponse:
        if request.resolution not in (transaction_pb2.COMMIT, transaction_pb2.ROLLBACK):
            code, text = ResponseCode.INVALID_PARAMETER, "resolution must be COMMIT or ROLLBACK"
        else:
            code, text = self._service.end(
                request.half_offset, request.message_id, Resolution(request.resolution)
            )
        return transaction_pb2.EndTransactionResponse(
            status=common_pb2.Status(code=int(code), message=text)
        )

    async def PollTransactionChecks(
        self,
        request: transaction_pb2.PollTransactionChecksRequest,
        context: grpc.aio.ServicerContext[
            transaction_pb2.PollTransactionChecksRequest,
            transaction_pb2.PollTransactionChecksResponse,
        ],
    ) -> transaction_pb2.PollTransactionChecksResponse:
        mailbox = self._service.mailbox
        group = request.producer_group
        max_checks = request.max_checks or _DEFAULT_MAX_CHECKS
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(max(request.timeout_ms, 0), _MAX_POLL_MS) / 1000
        posted = asyncio.Event()

        def wake() -> None:
            loop.call_soon_threadsafe(posted.set)

        mailbox.add_waiter(group, wake)
        try:
            while True:
                posted.clear()
                checks = mailbox.take(group, max_checks)
                remaining = deadline - loop.time()
                if checks or remaining <= 0:
                    break
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(posted.wait(), remaining)
        finally:
            mailbox.remove_waiter(group, wake)
        return transaction_pb2.PollTransactionChecksResponse(
            status=common_pb2.Status(), checks=[_check(check) for check in checks]
        )


def _check(check: Check) -> transaction_pb2.TransactionCheck:
    half = check.half
    properties = half.properties
    return transaction_pb2.TransactionCheck(
        topic=check.topic,
        queue_id=check.queue_id,
        half_offset=half.queue_offset,
        message_id=properties.get(PROPERTY_UNIQ_KEY, ""),
        transaction_id=properties.get(PROPERTY_TRANSACTION_ID, ""),
        body=half.body,
        properties={
            k: v
            for k, v in properties.items()
            if k not in (PROPERTY_REAL_TOPIC, PROPERTY_REAL_QUEUE_ID)
        },
        born_timestamp_ms=half.born_timestamp_ms,
        store_timestamp_ms=half.store_timestamp_ms,
        check_times=check.check_times,
    )
