"""``QueueHolders``: who holds each queue of a group, for rebalance hand-overs."""

from __future__ import annotations

from aeromq.common import QueueHolders

LIVE = {"a", "b"}.__contains__


def test_should_grant_a_free_queue_and_refuse_it_to_others_while_its_holder_lives() -> None:
    holders = QueueHolders()
    assert holders.acquire("g", ("t", 0), "a", LIVE) == ""
    assert holders.acquire("g", ("t", 0), "b", LIVE) == "a"
    assert holders.acquire("g", ("t", 0), "a", LIVE) == ""
    assert holders.acquire("h", ("t", 0), "b", LIVE) == ""  # another group
    assert holders.holder("g", ("t", 0)) == "a"


def test_should_grant_a_queue_once_released_or_its_holder_is_gone_or_when_forced() -> None:
    holders = QueueHolders()
    holders.acquire("g", 0, "a", LIVE)
    assert not holders.release("g", 0, "b")
    assert holders.release("g", 0, "a")
    assert not holders.release("g", 0, "a")
    assert holders.holder("g", 0) == ""
    holders.acquire("g", 0, "gone", LIVE)
    assert holders.acquire("g", 0, "a", LIVE) == ""  # "gone" is no member any more
    assert holders.acquire("g", 0, "b", LIVE, force=True) == ""
    assert holders.holder("g", 0) == "b"


def test_should_forget_every_queue_of_a_client_that_left_the_group() -> None:
    holders = QueueHolders()
    for queue in range(3):
        holders.acquire("g", queue, "a", LIVE)
    holders.acquire("g", 3, "b", LIVE)
    holders.acquire("h", 0, "a", LIVE)
    assert holders.forget("g", "a") == 3
    assert [holders.holder("g", q) for q in range(4)] == ["", "", "", "b"]
    assert holders.holder("h", 0) == "a"
    assert holders.forget("nobody", "a") == 0
