"""Session ids: in sequence from a random start, skipping the reserved range and ids in use."""

from __future__ import annotations

from aeromq.transport.driver.session_ids import SessionIdAllocator, wrap_int32


def test_should_allocate_in_sequence() -> None:
    allocator = SessionIdAllocator(-1, 1000, next_session_id=5000)
    assert [allocator.allocate(set()) for _ in range(3)] == [5000, 5001, 5002]


def test_should_skip_the_reserved_range() -> None:
    allocator = SessionIdAllocator(-1, 1000, next_session_id=-1)
    assert allocator.allocate(set()) == 1001
    assert allocator.allocate(set()) == 1002


def test_should_skip_ids_in_use_including_just_past_the_reserved_range() -> None:
    allocator = SessionIdAllocator(-1, 1000, next_session_id=999)
    assert allocator.allocate({1001, 1002, 1004}) == 1003
    assert allocator.allocate({1004}) == 1005


def test_should_wrap_at_int32() -> None:
    allocator = SessionIdAllocator(-1, 1000, next_session_id=2**31 - 1)
    assert allocator.allocate(set()) == 2**31 - 1
    assert allocator.allocate(set()) == -(2**31)
    assert wrap_int32(2**31) == -(2**31)


def test_should_start_somewhere_random() -> None:
    starts = {SessionIdAllocator(-1, 1000).allocate(set()) for _ in range(8)}
    assert len(starts) > 1
    assert all(not -1 <= start <= 1000 for start in starts)
