"""The push consumer's parts without a broker: the commit offset below the unfinished
messages, the configuration's checks and the inner consumer's settings, the listener
registration rules."""

from __future__ import annotations

import pytest

from aeromq.client import IllegalArgumentError, IllegalStateError
from aeromq.consumer.config import LitePullConsumerConfig
from aeromq.consumer.push import (
    ConsumeOrderlyStatus,
    DefaultMQPushConsumer,
    InFlightOffsets,
    PushConsumerConfig,
)


def test_should_commit_below_the_lowest_unfinished_message() -> None:
    offsets = InFlightOffsets()
    assert offsets.commit_offset == -1
    offsets.take([10, 11, 12])
    assert offsets.finish([11, 12]) == 10  # 10 still in hand
    offsets.take([13])
    assert offsets.finish([10]) == 13
    assert offsets.finish([13]) == 14
    assert len(offsets) == 0


def test_should_check_the_config_and_hand_the_pull_settings_on() -> None:
    with pytest.raises(IllegalArgumentError, match="consume_thread_count"):
        PushConsumerConfig(consumer_group="g", consume_thread_count=0)
    pull = LitePullConsumerConfig(consumer_group="other", pull_batch_size=7)
    config = PushConsumerConfig(consumer_group="g", endpoints=("h:1",), pull=pull)
    inner = config.pull_config()
    assert (inner.consumer_group, inner.endpoints, inner.pull_batch_size) == ("g", ("h:1",), 7)
    assert inner.auto_commit is False  # the push consumer commits


def test_should_refuse_start_without_a_listener_and_changes_after_start() -> None:
    consumer = DefaultMQPushConsumer("g", "127.0.0.1:1")
    consumer.subscribe("t")
    with pytest.raises(IllegalStateError, match="listener"):
        consumer.start()
    consumer.register_message_listener_orderly(
        lambda messages, context: ConsumeOrderlyStatus.SUCCESS
    )
    assert consumer.orderly
    with pytest.raises(IllegalArgumentError, match="callable"):
        consumer.register_message_listener(42)  # type: ignore[arg-type]
