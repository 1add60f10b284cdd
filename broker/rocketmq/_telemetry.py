"""The settings a RocketMQ 5 client gets back on its ``Telemetry`` stream. No I/O here.

Every client opens the bidirectional ``Telemetry`` stream at start and writes its
``Settings`` (its type, access point, request timeout, and what it publishes or subscribes
to); the server answers each with the settings the client is to use. Clients read the
``settings`` field of the answer (the metric switch, and for push consumers the retry policy
and batch size), so the answer is the client's own settings completed by the broker's:

- a producer's ``publishing``: ``max_body_size`` is the broker's ``max_message_size``, and the
  message type is not validated (a topic takes NORMAL and FIFO messages);
- a consumer's ``subscription``: the receive batch size and a long-polling timeout no longer
  than the broker's ``long_polling_max_suspend_ms``;
- ``backoff_policy``: a producer retries a send 3 times (RocketMQ's default); a consumer's
  message is delivered ``max_delivery_attempts`` times, a push consumer backing off
  exponentially (1 s, doubling, at most 60 s) with ``ChangeInvisibleDuration``;
- metrics off (the broker collects none of the clients').
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from aeromq.broker.rocketmq._status import status
from aeromq.proto.apache.rocketmq.v2 import definition_pb2, service_pb2

__all__ = ["SettingsPolicy", "answer_settings"]

_PRODUCER_MAX_ATTEMPTS: Final = 3
_RECEIVE_BATCH_SIZE: Final = 32
_BACKOFF_INITIAL_MS: Final = 1_000
_BACKOFF_MAX_MS: Final = 60_000
_BACKOFF_MULTIPLIER: Final = 2.0


@dataclass(frozen=True, slots=True)
class SettingsPolicy:
    """The broker's side of the settings (from ``BrokerConfig``)."""

    max_body_bytes: int
    max_delivery_attempts: int
    long_polling_max_ms: int


def _backoff(max_attempts: int) -> definition_pb2.RetryPolicy:
    policy = definition_pb2.RetryPolicy(max_attempts=max_attempts)
    exponential = policy.exponential_backoff
    exponential.initial.FromMilliseconds(_BACKOFF_INITIAL_MS)
    exponential.max.FromMilliseconds(_BACKOFF_MAX_MS)
    exponential.multiplier = _BACKOFF_MULTIPLIER
    return policy


def answer_settings(
    command: service_pb2.TelemetryCommand, policy: SettingsPolicy
) -> service_pb2.TelemetryCommand | None:
    """The answer to one command of a client's stream (None for commands that want none:
    results of server commands, which this broker never sends)."""
    if not command.HasField("settings"):
        return None
    settings = definition_pb2.Settings()
    settings.CopyFrom(command.settings)
    if settings.HasField("publishing"):
        settings.publishing.max_body_size = policy.max_body_bytes
        settings.publishing.validate_message_type = False
        settings.backoff_policy.CopyFrom(_backoff(_PRODUCER_MAX_ATTEMPTS))
    elif settings.HasField("subscription"):
        subscription = settings.subscription
        if not subscription.HasField("receive_batch_size"):
            subscription.receive_batch_size = _RECEIVE_BATCH_SIZE
        asked_ms = subscription.long_polling_timeout.ToMilliseconds()
        subscription.long_polling_timeout.FromMilliseconds(
            min(asked_ms, policy.long_polling_max_ms)
            if asked_ms > 0
            else policy.long_polling_max_ms
        )
        settings.backoff_policy.CopyFrom(_backoff(policy.max_delivery_attempts))
    settings.metric.on = False
    settings.metric.ClearField("endpoints")
    return service_pb2.TelemetryCommand(status=status(), settings=settings)
