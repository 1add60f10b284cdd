"""The idempotent producer: its batches' producer state (stamped once, resent as it is), the
sequences of each queue across retries and coalescing, and a retry after an unknown outcome
stored once. Against the scripted group (``tests/client/_group.py``, which keeps the store's
rules for duplicates) and a real broker (its store's)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

import pytest

from aeromq.broker.broker import Broker
from aeromq.client import (
    Message,
    MessageQueue,
    NotEnoughReplicasError,
    OutOfOrderSequenceError,
    ReplicationTimeoutError,
    ResponseCode,
    UniqueMessageIdGenerator,
)
from aeromq.common import BatchCheck, RecordBatch, check_batch
from aeromq.common.record_batch import (
    ProducerState,
    encode_batch,
    read_producer_state,
    stamp_batch,
)
from aeromq.producer import Producer, ProducerConfig, SendResult
from aeromq.producer._attempt import Attempt
from aeromq.producer._batch import encode_messages
from aeromq.producer._sequences import MAX_EPOCH, ProducerSequences, new_producer_id
from tests.client._group import BROKER, FakeGroup
from tests.producer.conftest import GROUP_MEMBERS, Puller, group_producer

A, B, C = GROUP_MEMBERS
TOPIC = "orders"


def _producer(group: FakeGroup, **config: int | bool) -> Producer:
    return group_producer(group, **config)


def _states(group: FakeGroup) -> list[tuple[int, ProducerState | None]]:
    return [(queue_id, read_producer_state(batch)) for _, queue_id, batch in group.sends]


def test_should_stamp_exactly_the_bytes_the_encoder_writes_with_a_producer_state() -> None:
    bodies = [b"a", b"bb", b"ccc"]
    plain = bytes(encode_batch(b"orders", bodies, ["t", None, "u"], [b"k\x01v\x02"] * 3))
    stated = bytes(
        encode_batch(
            b"orders", bodies, ["t", None, "u"], [b"k\x01v\x02"] * 3,
            producer_id=7 << 40, base_sequence=12345, producer_epoch=3,
        )
    )  # fmt: skip

    stamped = stamp_batch(plain, 7 << 40, 12345, 3)

    assert stamped == stated
    assert check_batch(stamped)[0] is BatchCheck.OK and RecordBatch(stamped).count == 3
    assert read_producer_state(stamped) == ProducerState(7 << 40, 12345, 3)


def test_should_give_each_producer_a_random_63_bit_id() -> None:
    ids = {new_producer_id() for _ in range(100)}
    assert len(ids) == 100 and all(0 <= i < 1 << 63 for i in ids)
    assert ProducerConfig().enable_idempotence  # on by default, as Kafka's since 3.0


def test_should_count_records_per_queue_and_resend_the_same_bytes_on_a_retry(
    group: FakeGroup,
) -> None:
    producer = _producer(group)
    q0, q1 = MessageQueue(TOPIC, BROKER, 0), MessageQueue(TOPIC, BROKER, 1)
    producer.send(Message(TOPIC, b"a"), queue=q0)
    producer.send_batch(
        [Message(TOPIC, b"b"), Message(TOPIC, b"c"), Message(TOPIC, b"d")], queue=q0
    )
    producer.send(Message(TOPIC, b"x"), queue=q1)
    group.leader = B  # A answers NOT_LEADER, naming B
    producer.send_batch([Message(TOPIC, b"e"), Message(TOPIC, b"f")], queue=q0)

    pid = producer._send_path.sequences.producer_id  # type: ignore[union-attr]
    assert _states(group) == [
        (0, ProducerState(pid, 0, 0)),
        (0, ProducerState(pid, 1, 0)),
        (1, ProducerState(pid, 0, 0)),
        (0, ProducerState(pid, 4, 0)),  # refused by A
        (0, ProducerState(pid, 4, 0)),  # the same bytes to B
    ]
    assert group.sends[3][2] == group.sends[4][2]
    producer.shutdown()


def test_should_store_once_a_send_whose_answer_was_lost(group: FakeGroup) -> None:
    producer = _producer(group, retry_times_when_send_failed=2)
    group.lose_answers = 1

    result = producer.send(Message(TOPIC, b"once"))

    assert group.stored_bodies() == [b"once"]
    assert len(group.sends) == 2 and group.sends[0][1:] == group.sends[1][1:]  # same queue, bytes
    assert result.queue_offset == 0
    producer.shutdown()


def test_should_store_once_a_send_retried_after_a_replication_timeout(group: FakeGroup) -> None:
    producer = _producer(group)
    group.replication_timeouts = 1

    result = producer.send(Message(TOPIC, b"once"))

    assert group.stored_bodies() == [b"once"] and result.queue_offset == 0
    assert [m for m, _, _ in group.sends] == [A, A]
    producer.shutdown()


def test_should_store_once_what_the_dying_leader_stored_before_the_new_one_took_over(
    group: FakeGroup,
) -> None:
    producer = _producer(group, send_timeout_ms=3_000)
    group.lose_answers = 1  # stored, then the leader died before it answered

    def die_and_elect() -> None:
        time.sleep(0.05)
        group.kill_leader()
        group.elect_later(C, 0.2)

    threading.Thread(target=die_and_elect).start()
    group.refuse = lambda member, request: None
    result = producer.send(Message(TOPIC, b"kept"))

    assert group.stored_bodies() == [b"kept"] and result.queue_offset == 0
    producer.shutdown()


def test_should_keep_sequences_consecutive_across_coalesced_async_sends(group: FakeGroup) -> None:
    producer = _producer(group, async_requests_in_flight=1)
    slow = threading.Event()
    group.answers.submit(slow.wait, 1)  # answers wait: the sends after the first group up

    futures: list[Future[SendResult]] = [
        producer.send_async(Message(TOPIC, f"m{i}".encode())) for i in range(60)
    ]
    slow.set()

    results = [future.result(5) for future in futures]
    by_queue: dict[int, list[tuple[int, int]]] = {}
    for _, queue_id, batch in group.sends:
        state = read_producer_state(batch)
        assert state is not None
        by_queue.setdefault(queue_id, []).append((state.base_sequence, _count(batch)))
    assert len(group.sends) < 60  # coalesced
    for sequences in by_queue.values():
        expected = 0
        for base, count in sequences:
            assert base == expected
            expected += count
    assert sorted(group.stored_bodies()) == sorted(f"m{i}".encode() for i in range(60))
    assert len({(r.message_queue, r.queue_offset) for r in results}) == 60
    producer.shutdown()


def _count(batch: bytes) -> int:
    return RecordBatch(batch).count


def test_should_retry_a_coalesced_group_whole_after_its_answer_was_lost(group: FakeGroup) -> None:
    producer = _producer(group, async_requests_in_flight=1)
    slow = threading.Event()
    group.answers.submit(slow.wait, 1)
    futures = [producer.send_async(Message(TOPIC, f"g{i}".encode())) for i in range(20)]
    group.lose_answers = 2  # the first request's and the group's after it
    slow.set()

    for future in futures:
        future.result(5)

    assert sorted(group.stored_bodies()) == sorted(f"g{i}".encode() for i in range(20))
    producer.shutdown()


def test_should_wait_for_an_earlier_batch_that_a_retry_overtook(group: FakeGroup) -> None:
    producer = _producer(group, async_requests_in_flight=0)
    queue = MessageQueue(TOPIC, BROKER, 0)
    producer.send(Message(TOPIC, b"0"), queue=queue)  # the broker knows the producer
    refused = [False]

    def refuse_first(member: str, request: object) -> int | None:
        if not refused[0]:
            refused[0] = True
            return ResponseCode.NOT_ENOUGH_REPLICAS  # certain: nothing stored
        return None

    group.refuse = refuse_first
    first = producer.send_async(Message(TOPIC, b"1"), queue=queue)
    second = producer.send_async(Message(TOPIC, b"2"), queue=queue)  # refused: out of order

    first.result(5)
    second.result(5)
    assert group.stored_bodies(0) == [b"0", b"1", b"2"]
    producer.shutdown()


def test_should_take_again_a_batch_whose_later_one_went_first(group: FakeGroup) -> None:
    producer = _producer(group, async_requests_in_flight=0)
    queue = MessageQueue(TOPIC, BROKER, 0)
    refused = [False]

    def refuse_first(member: str, request: object) -> int | None:
        if not refused[0]:
            refused[0] = True
            return ResponseCode.NOT_ENOUGH_REPLICAS
        return None

    group.refuse = refuse_first
    first = producer.send_async(Message(TOPIC, b"1"), queue=queue)
    second = producer.send_async(Message(TOPIC, b"2"), queue=queue)  # a new producer: taken

    first.result(5)  # out of order after "2": stamped anew, in a new epoch
    second.result(5)
    assert group.stored_bodies(0) == [b"2", b"1"]
    producer.shutdown()


def test_should_start_a_queue_over_after_a_send_failed_for_good(group: FakeGroup) -> None:
    producer = _producer(group, send_timeout_ms=300)
    queue = MessageQueue(TOPIC, BROKER, 0)
    producer.send(Message(TOPIC, b"1"), queue=queue)
    group.refuse = lambda member, request: ResponseCode.NOT_ENOUGH_REPLICAS
    with pytest.raises(NotEnoughReplicasError):  # certainly not stored: its sequence back
        producer.send(Message(TOPIC, b"lost"), queue=queue)
    group.refuse = lambda member, request: None
    group.replication_timeouts = 1_000
    with pytest.raises(ReplicationTimeoutError):  # stored once, never acknowledged
        producer.send(Message(TOPIC, b"2"), queue=queue)
    group.replication_timeouts = 0

    producer.send(Message(TOPIC, b"3"), queue=queue)

    states = [s for _, q, batch in group.sends if q == 0 and (s := read_producer_state(batch))]
    assert group.stored_bodies(0) == [b"1", b"2", b"3"]
    assert [(s.producer_epoch, s.base_sequence) for s in states][1:2] == [(0, 1)]  # "lost"
    assert (states[2].producer_epoch, states[2].base_sequence) == (0, 1)  # "2": 1 again
    assert (states[-1].producer_epoch, states[-1].base_sequence) == (1, 0)  # a new epoch
    producer.shutdown()


def test_should_raise_an_out_of_order_refusal_it_cannot_explain(group: FakeGroup) -> None:
    producer = _producer(group)
    queue = MessageQueue(TOPIC, BROKER, 1)
    group.refuse = lambda member, request: ResponseCode.OUT_OF_ORDER_SEQUENCE

    with pytest.raises(OutOfOrderSequenceError) as raised:
        producer.send(Message(TOPIC, b"x"), queue=queue)

    assert raised.value.values["queue_id"] == 1 and raised.value.values["broker"] == BROKER
    producer.shutdown()


def test_should_take_a_new_producer_id_when_a_queues_epochs_run_out() -> None:
    sequences = ProducerSequences(producer_id=5)
    queue = MessageQueue(TOPIC, BROKER, 0)
    ids = UniqueMessageIdGenerator()
    for _ in range(MAX_EPOCH + 1):
        batch, unique_ids = encode_messages([Message(TOPIC, b"x")], ids, 0, bytes(8))
        attempt = _attempt(batch, unique_ids)
        sequences.stamp(attempt, queue)
        attempt.maybe_stored = True
        sequences.settle(attempt, ok=False)
    batch, unique_ids = encode_messages([Message(TOPIC, b"x")], ids, 0, bytes(8))
    attempt = _attempt(batch, unique_ids)

    stamp = sequences.stamp(attempt, queue)

    assert stamp is not None and stamp.producer_id != 5 and stamp.epoch == 0


def _attempt(batch: bytes, unique_ids: list[str]) -> Attempt:
    return Attempt([Message(TOPIC, b"x")], batch, unique_ids, time.monotonic_ns(), 1, None, None)


def test_should_send_oneway_without_a_producer_state(
    broker: Broker, producer: Producer, puller: Puller
) -> None:
    queue = MessageQueue("events", broker.config.broker_name, 3)
    producer.send_oneway(Message("events", b"oneway"), queue=queue)
    deadline = time.monotonic() + 5
    while not (answer := puller.pull("events", 3)).batches:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert read_producer_state(answer.batches) is None


def test_should_have_a_real_broker_answer_a_resent_batch_with_its_first_result(
    broker: Broker, producer: Producer, puller: Puller
) -> None:
    path = producer._send_path
    queue = MessageQueue("keyed", broker.config.broker_name, 2)
    attempt = path.prepare([Message("keyed", b"twice?")], None, queue, None, None, False)
    request = path.request(queue, attempt)
    session = path.require_sessions().session(
        producer._router.route("keyed").broker(queue.broker_name)
    )

    first = session.request(request, 5_000)
    again = session.request(request, 5_000)  # a retry after a lost answer: the same bytes

    assert (again.base_queue_offset, again.message_count) == (first.base_queue_offset, 1)
    assert [bytes(m.body) for m in puller.messages("keyed", 2, first.base_queue_offset)] == [
        b"twice?"
    ]
    assert read_producer_state(request.sent_batch()) is not None
