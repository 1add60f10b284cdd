from __future__ import annotations

import logging

import pytest

from aeromq.client import IllegalArgumentError
from aeromq.consumer import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from tests.consumer._helpers import cids, queues

CHECKED = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMessageQueueByMachineRoom({"room1"}),
    AllocateMachineRoomNearby(AllocateMessageQueueAveragely()),
]


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda strategy: strategy.name)
def test_should_reject_empty_arguments_as_rocketmq(strategy: AllocateMessageQueueStrategy) -> None:
    with pytest.raises(IllegalArgumentError) as raised:
        strategy.allocate("group", "", queues(4), cids(2))
    assert str(raised.value) == "current_cid is empty: consumer_group='group'"
    with pytest.raises(IllegalArgumentError) as raised:
        strategy.allocate("group", "CID_PREFIX0", [], cids(2))
    assert str(raised.value) == "mq_all is empty: consumer_group='group'"
    with pytest.raises(IllegalArgumentError) as raised:
        strategy.allocate("group", "CID_PREFIX0", queues(4), [])
    assert str(raised.value) == "cid_all is empty: consumer_group='group'"


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda strategy: strategy.name)
def test_should_log_and_allocate_nothing_to_a_consumer_not_in_the_group(
    strategy: AllocateMessageQueueStrategy, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="aeromq.consumer.allocate"):
        assert strategy.allocate("group", "CID_PREFIX", queues(10), cids(4)) == []
    assert "current_cid=CID_PREFIX not in cid_all" in caplog.text


def test_should_use_rocketmq_strategy_names() -> None:
    assert [strategy.name for strategy in CHECKED] == [
        "AVG",
        "AVG_BY_CIRCLE",
        "CONSISTENT_HASH",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY-AVG",
    ]
