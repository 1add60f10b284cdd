"""``HalfTable``, state only: what is due for a check, for a discard, and how ``low`` moves."""

from __future__ import annotations

from aeromq.broker.store import StoredMessage
from aeromq.broker.transaction import HalfTable


def _half(offset: int, stored_ms: int) -> StoredMessage:
    return StoredMessage(
        topic="RMQ_SYS_TRANS_HALF_TOPIC", queue_id=0, body=b"", properties={}, flag=0,
        sys_flag=0, queue_offset=offset, physical_offset=0, store_size=0, body_crc=0,
        born_timestamp_ms=stored_ms, born_host=bytes(8), store_timestamp_ms=stored_ms,
        store_host=bytes(8), reconsume_times=0, prepared_transaction_offset=0,
    )  # fmt: skip


def test_should_check_a_half_after_its_timeout_then_each_interval_then_discard_it() -> None:
    table = HalfTable()
    table.add(_half(0, stored_ms=1_000), "g")
    assert table.due(1_999, timeout_ms=1_000, interval_ms=500, check_max=2) == ([], [])
    [checked], [] = table.due(2_000, 1_000, 500, 2)
    assert checked.checks == 1 and table.next_due_ms(1_000) == 2_500
    assert table.due(2_499, 1_000, 500, 2) == ([], [])
    [checked], [] = table.due(2_500, 1_000, 500, 2)
    assert checked.checks == 2
    [], [discarded] = table.due(3_000, 1_000, 500, 2)
    assert discarded.half.queue_offset == 0


def test_should_move_low_past_ended_halves_and_forget_their_ends() -> None:
    table = HalfTable(low=10, resolved=[9, 12], checks={11: 3})
    assert table.ended(5) and table.ended(12) and not table.ended(11)
    for offset in (10, 11, 12):
        table.add(_half(offset, 0), "g")
    assert sorted(table.pending) == [10, 11]
    assert table.pending[11].checks == 3
    assert table.resolve(10) and not table.resolve(10)
    table.advance()
    assert (table.low, table.resolved, table.read_offset) == (11, {12}, 13)
    assert table.resolve(11)
    table.advance()
    assert (table.low, table.resolved) == (13, set())
