from __future__ import annotations

from aeromq.client import MessageQueue
from aeromq.consumer import AllocateMessageQueueByConfig
from tests.consumer._helpers import cids, queues


def test_should_return_the_configured_queues_whatever_the_group() -> None:
    configured = [MessageQueue("T", "b", 3), MessageQueue("T", "a", 1)]
    strategy = AllocateMessageQueueByConfig(configured)
    assert strategy.name == "CONFIG"
    assert strategy.allocate("g", "CID_PREFIX0", queues(8), cids(2)) == configured
    assert strategy.allocate("g", "", [], []) == configured  # unchecked, as RocketMQ
    assert strategy.message_queues == tuple(configured)


def test_should_hand_out_a_fresh_list_each_time() -> None:
    strategy = AllocateMessageQueueByConfig([MessageQueue("T", "b", 0)])
    strategy.allocate("g", "c", [], []).clear()
    assert strategy.allocate("g", "c", [], []) == [MessageQueue("T", "b", 0)]
