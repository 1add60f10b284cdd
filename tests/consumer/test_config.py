from __future__ import annotations

import time

import pytest

from aeromq.client import IllegalArgumentError, IllegalStateError
from aeromq.consumer.config import (
    ConsumeFromWhere,
    LitePullConsumerConfig,
    MessageModel,
    SubscriptionType,
)


def test_should_have_rocketmq_defaults() -> None:
    config = LitePullConsumerConfig(consumer_group="g")
    assert config.message_model is MessageModel.CLUSTERING
    assert config.consume_from_where is ConsumeFromWhere.LAST_OFFSET
    assert config.auto_commit is True
    assert config.auto_commit_interval_ms == 5000
    assert config.pull_batch_size == 10
    assert config.pull_threshold_for_all == 10000
    assert config.pull_threshold_for_queue == 1000
    assert config.pull_threshold_size_for_queue_mib == 100
    assert config.pull_threshold_size_for_queue_bytes == 100 * 1024 * 1024
    assert config.consume_max_span == 2000
    assert config.poll_timeout_ms == 5000
    assert config.topic_metadata_check_interval_ms == 30000
    assert config.broker_suspend_max_time_ms == 20000
    assert config.consumer_timeout_ms_when_suspend == 30000
    assert config.consumer_pull_timeout_ms == 10000
    assert config.persist_consumer_offset_interval_ms == 5000
    assert config.heartbeat_broker_interval_ms == 30000
    assert config.rebalance_interval_ms == 20000
    assert config.rebalance_retry_interval_ms == 1000
    assert config.pull_time_delay_ms_when_exception == 3000
    assert config.pull_time_delay_ms_when_flow_control == 50
    assert config.pull_time_delay_ms_when_pause == 1000
    assert config.pull_time_delay_ms_when_broker_busy == 20
    assert config.pull_thread_nums == 20


def test_should_have_aeromq_defaults_for_what_rocketmq_lacks() -> None:
    config = LitePullConsumerConfig(consumer_group="g")
    assert config.max_poll_records == 500
    assert config.release_timeout_ms == 1000
    assert config.transport == "auto"
    assert config.control_timeout_ms == 3000
    assert config.offer_timeout_ms == 1000
    assert config.instance_name is None


def test_should_default_consume_timestamp_to_half_an_hour_ago() -> None:
    now_ms = int(time.time() * 1000)
    config = LitePullConsumerConfig(consumer_group="g")
    assert abs(config.consume_timestamp_ms - (now_ms - 30 * 60 * 1000)) < 5000


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"consumer_group": "DEFAULT_CONSUMER"}, "consumer_group"),
        ({"consumer_group": ""}, "group"),
        ({"consumer_group": "bad group"}, "group"),
        ({"consumer_timeout_ms_when_suspend": 1}, "consumer_timeout_ms_when_suspend"),
        ({"auto_commit_interval_ms": 999}, "auto_commit_interval_ms"),
        ({"pull_batch_size": 0}, "pull_batch_size"),
        ({"pull_batch_size": 1025}, "pull_batch_size"),
        ({"pull_threshold_for_all": 0}, "pull_threshold_for_all"),
        ({"pull_threshold_for_queue": 65536}, "pull_threshold_for_queue"),
        ({"pull_threshold_size_for_queue_mib": 0}, "pull_threshold_size_for_queue_mib"),
        ({"consume_max_span": 0}, "consume_max_span"),
        ({"poll_timeout_ms": -1}, "poll_timeout_ms"),
        ({"max_poll_records": 0}, "max_poll_records"),
        ({"rebalance_interval_ms": 0}, "rebalance_interval_ms"),
        ({"pull_batch_size": True}, "pull_batch_size"),
        ({"message_model": "CLUSTERING"}, "message_model"),
        ({"consume_from_where": None}, "consume_from_where"),
        ({"instance_name": "a@b"}, "instance_name"),
        ({"offer_timeout_ms": 0}, "offer_timeout_ms"),
    ],
)
def test_should_reject_an_invalid_value_naming_the_field(
    changes: dict[str, object], named: str
) -> None:
    fields: dict[str, object] = {"consumer_group": "g", **changes}
    with pytest.raises(IllegalArgumentError, match=named):
        LitePullConsumerConfig(**fields)  # type: ignore[arg-type]


def test_should_validate_a_replaced_copy() -> None:
    config = LitePullConsumerConfig(consumer_group="g")
    assert config.replace(pull_batch_size=32).pull_batch_size == 32
    with pytest.raises(IllegalArgumentError, match="pull_batch_size"):
        config.replace(pull_batch_size=0)


def test_should_split_endpoints_given_as_one_string() -> None:
    config = LitePullConsumerConfig(consumer_group="g", endpoints="a:1; b:2,c:3")  # type: ignore[arg-type]
    assert config.endpoints == ("a:1", "b:2", "c:3")


def test_should_allow_one_subscription_type_only() -> None:
    none = SubscriptionType.NONE
    assert none.switch_to(SubscriptionType.SUBSCRIBE) is SubscriptionType.SUBSCRIBE
    assert SubscriptionType.ASSIGN.switch_to(SubscriptionType.ASSIGN) is SubscriptionType.ASSIGN
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        SubscriptionType.SUBSCRIBE.switch_to(SubscriptionType.ASSIGN)
    with pytest.raises(IllegalStateError, match="mutually exclusive"):
        SubscriptionType.ASSIGN.switch_to(SubscriptionType.SUBSCRIBE)


def test_should_warn_of_per_queue_bounds_under_two_pulls() -> None:
    assert LitePullConsumerConfig(consumer_group="g").flow_control_warnings() == []  # pulls of 10
    big_pulls = LitePullConsumerConfig(consumer_group="g", pull_batch_size=1024)
    warnings = big_pulls.flow_control_warnings()
    assert [w.split("=")[0] for w in warnings] == ["pull_threshold_for_queue", "consume_max_span"]
    assert "consume_max_span=2000 is under two pulls (pull_batch_size=1024)" in warnings[1]
    assert "raise it to 2048 or more" in warnings[1]
    raised = big_pulls.replace(pull_threshold_for_queue=8192, consume_max_span=8192)
    assert raised.flow_control_warnings() == []
