from __future__ import annotations

from aeromq.consumer import AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle
from tests.consumer._helpers import cids, queue_ids, queues


def test_should_give_the_first_consumers_one_more_as_rocketmq_averagely_test() -> None:
    consumers, mq_all = cids(4), queues(10)
    sizes = [
        len(AllocateMessageQueueAveragely().allocate("", c, mq_all, consumers)) for c in consumers
    ]
    assert sizes == [3, 3, 2, 2]


def test_should_allocate_contiguous_blocks() -> None:
    consumers, mq_all = cids(4), queues(10)
    strategy = AllocateMessageQueueAveragely()
    blocks = [queue_ids(strategy.allocate("g", cid, mq_all, consumers)) for cid in consumers]
    assert blocks == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]


def test_should_leave_the_last_consumers_idle_when_queues_are_fewer() -> None:
    consumers, mq_all = cids(5), queues(3)
    strategy = AllocateMessageQueueAveragely()
    blocks = [queue_ids(strategy.allocate("g", cid, mq_all, consumers)) for cid in consumers]
    assert blocks == [[0], [1], [2], [], []]


def test_should_deal_queues_round_as_rocketmq_by_circle_test() -> None:
    consumers, mq_all = cids(4), queues(10)
    strategy = AllocateMessageQueueAveragelyByCircle()
    assert strategy.allocate("", "CID_PREFIX", mq_all, consumers) == []
    allocated = {cid: queue_ids(strategy.allocate("", cid, mq_all, consumers)) for cid in consumers}
    assert allocated == {
        "CID_PREFIX0": [0, 4, 8],
        "CID_PREFIX1": [1, 5, 9],
        "CID_PREFIX2": [2, 6],
        "CID_PREFIX3": [3, 7],
    }


def test_should_sort_consumer_ids_as_java_strings_before_indexing() -> None:
    consumers = ["CID_PREFIX10", "CID_PREFIX2", "CID_PREFIX1"]  # Java order: 1, 10, 2
    strategy = AllocateMessageQueueAveragely()
    assert queue_ids(strategy.allocate("g", "CID_PREFIX10", queues(3), consumers)) == [1]
    assert queue_ids(strategy.allocate("g", "CID_PREFIX2", queues(3), consumers)) == [2]
