"""``CheckPoller``: a transactional producer's answers to the broker's check-backs.

One thread a broker holds ``PollTransactionChecks`` open for the producer's group (RocketMQ's
broker calls ``checkTransactionState`` on a producer's channel; aeromq's producer asks). Each
check is a half message the broker holds without an end past its ``transaction_timeout_ms``:
the listener's ``check_local_transaction`` says how its transaction ended, and a commit or
rollback is sent back with ``EndTransaction`` (``from_check``); ``UNKNOW`` (or an exception)
sends nothing, and the broker checks again later. Every producer process of the group answers,
so a half message whose producer died is resolved by the next one started.

Caller: :class:`~producer.TransactionProducer` (``start``, ``stop``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Final

from aeromq.client import ClientError, GrpcClient, MessageExt
from aeromq.producer._transaction_listener import LocalTransactionState, TransactionListener
from aeromq.proto import transaction_pb2

__all__ = ["CheckPoller", "end_request"]

_log = logging.getLogger(__name__)

_RETRY_S: Final = 1.0
"""How long a poller waits after a failed poll (the broker down, restarting)."""
_RESOLUTIONS: Final = {
    LocalTransactionState.COMMIT_MESSAGE: transaction_pb2.COMMIT,
    LocalTransactionState.ROLLBACK_MESSAGE: transaction_pb2.ROLLBACK,
}


def end_request(
    group: str,
    topic: str,
    half_offset: int,
    message_id: str,
    state: LocalTransactionState,
    *,
    from_check: bool = False,
) -> transaction_pb2.EndTransactionRequest | None:
    """The ``EndTransaction`` of ``state``; None for ``UNKNOW`` (nothing is sent)."""
    resolution = _RESOLUTIONS.get(state)
    if resolution is None:
        return None
    return transaction_pb2.EndTransactionRequest(
        producer_group=group,
        topic=topic,
        half_offset=half_offset,
        message_id=message_id,
        transaction_id=message_id,
        resolution=resolution,
        from_check=from_check,
    )


class CheckPoller:
    """Polls one broker for ``group``'s check-backs and answers them (see module)."""

    def __init__(
        self,
        group: str,
        listener: TransactionListener,
        client: Callable[[], GrpcClient],
        *,
        poll_ms: int = 10_000,
    ) -> None:
        self.group = group
        self._listener = listener
        self._client = client
        self.poll_ms = poll_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.answered = 0
        """Checks answered with a commit or rollback."""

    def start(self, name: str) -> None:
        """Start polling on a thread named ``name``."""
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the thread to stop (it ends once its poll in flight does)."""
        self._stop.set()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop polling (a poll in flight ends when its channel closes, or by its timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                client = self._client()
                checks = client.poll_transaction_checks(self.group, self.poll_ms)
            except ClientError as exc:
                if not self._stop.is_set():
                    _log.debug("transaction checks: poll failed: %s", exc)
                self._stop.wait(_RETRY_S)
                continue
            for check in checks:
                self._answer(client, check)

    def _answer(self, client: GrpcClient, check: transaction_pb2.TransactionCheck) -> None:
        message = MessageExt(
            check.topic,
            check.body,
            dict(check.properties),
            queue_id=check.queue_id,
            queue_offset=check.half_offset,
            born_timestamp_ms=check.born_timestamp_ms,
            store_timestamp_ms=check.store_timestamp_ms,
        )
        try:
            state = self._listener.check_local_transaction(message)
        except Exception:
            _log.exception("check_local_transaction raised: message_id=%s", check.message_id)
            return
        request = end_request(
            self.group, check.topic, check.half_offset, check.message_id, state, from_check=True
        )
        if request is None:
            return
        try:
            client.end_transaction(request)
        except ClientError as exc:
            _log.warning("transaction checks: cannot end: %s", exc)
            return
        self.answered += 1
