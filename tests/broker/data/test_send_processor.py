"""SendMessage: the answer of a record batch (base offsets and count), SYNC answers after
durability, back pressure, and every refusal with its code, text and count."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.store import FlushMode, MessageStore, TopicConfig, decode_message_id
from aeromq.client import ResponseCode
from aeromq.common import PERM_READ
from aeromq.proto import messages_pb2

from .conftest import TOPIC, Answers, record_batch, send_request, wait_for


def test_should_store_one_message_and_answer_its_ids_and_offset(
    store: MessageStore, send: SendProcessor
) -> None:
    answers = Answers()
    send.process(send_request(b"hello", queue_id=2, tags="A", msg_id="UNIQ-1"), answers)
    (response,) = answers
    assert response.status.code == ResponseCode.SUCCESS
    assert response.send_status == messages_pb2.SEND_OK
    assert (response.queue_id, response.base_queue_offset, response.message_count) == (2, 0, 1)
    assert response.broker_name == "broker-a"
    assert response.store_host == store.config.store_host
    stored = store.look_message_by_offset(response.base_commit_log_offset)
    assert stored.body == b"hello" and stored.tags == "A" and stored.unique_key == "UNIQ-1"


def test_should_store_a_batch_with_consecutive_offsets_and_one_result_each(
    store: MessageStore, send: SendProcessor
) -> None:
    answers = Answers()
    send.process(send_request(b"a", queue_id=1), answers)
    send.process(send_request(b"b", b"c", b"d", queue_id=1, keys=["k1", "k2"]), answers)
    response = answers[1]
    assert (response.base_queue_offset, response.message_count) == (1, 3)
    for i, body in enumerate((b"b", b"c", b"d")):  # record i is at the base offsets + i
        stored = store.look_message_by_offset(response.base_commit_log_offset + i)
        assert (stored.body, stored.queue_offset) == (body, 1 + i)
        host, offset = decode_message_id(stored.message_id)
        assert (host, offset) == (store.config.store_host, response.base_commit_log_offset + i)
    got = store.get_messages(TOPIC, 1, 0)
    assert [m.body for m in got.messages] == [b"a", b"b", b"c", b"d"]
    assert got.messages[1].keys == ["k1", "k2"]
    assert send.messages_stored == 4 and send.requests == 2


def test_should_keep_user_properties_and_lift_tags_keys_and_id_into_the_stored_ones(
    store: MessageStore, send: SendProcessor
) -> None:
    request = send_request(b"x", tags="T1", keys=["a"], msg_id="U", properties={"color": "red"})
    send.process(request, Answers())
    (stored,) = store.get_messages(TOPIC, 0, 0).messages
    assert stored.properties == {"color": "red", "TAGS": "T1", "KEYS": "a", "UNIQ_KEY": "U"}


def test_should_choose_queues_round_robin_when_the_queue_id_is_minus_one(
    send: SendProcessor,
) -> None:
    answers = Answers()
    for _ in range(8):
        send.process(send_request(b"x", queue_id=-1), answers)
    queues = [a.queue_id for a in answers]
    assert sorted(queues) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_should_answer_under_sync_flush_only_once_the_bytes_are_durable(
    sync_store: MessageStore,
) -> None:
    send = SendProcessor(sync_store, "broker-a")
    seen: list[tuple[int, int, str]] = []
    done = threading.Event()

    def on_done(response: messages_pb2.SendMessageResponse) -> None:
        seen.append(
            (
                response.status.code,
                sync_store.flushed_physical_offset,
                threading.current_thread().name,
            )
        )
        done.set()

    send.process(send_request(b"durable"), on_done)
    end = sync_store.max_physical_offset
    assert done.wait(5.0)
    code, flushed, thread = seen[0]
    assert code == ResponseCode.SUCCESS and flushed >= end
    assert thread != threading.current_thread().name  # the flusher answered
    wait_for(lambda: send.inflight_sends == 0, what="the in-flight count to drop")


def test_should_refuse_more_while_too_much_is_not_yet_flushed(
    open_store: Callable[..., MessageStore],
) -> None:
    store = open_store(flush_interval_ms=60_000)
    send = SendProcessor(store, "broker-a", max_unflushed_bytes=1_000)
    assert send.can_accept()
    for _ in range(10):
        send.process(send_request(b"x" * 200), Answers())
    assert not send.can_accept()
    store.flush()
    assert send.can_accept()


def test_should_refuse_more_while_too_many_sends_wait_for_their_flush(
    sync_store: MessageStore,
) -> None:
    send = SendProcessor(sync_store, "broker-a", max_inflight_sends=1)
    send._submitted = 1  # one send appended, its flush not done yet
    assert not send.can_accept()
    send._completed = 1
    assert send.can_accept()


def _with_batch(batch: bytes) -> messages_pb2.SendMessageRequest:
    return messages_pb2.SendMessageRequest(producer_group="pg", topic=TOPIC, batch=batch)


def _flipped(batch: bytes) -> bytes:
    data = bytearray(batch)
    data[-1] ^= 0x01
    return bytes(data)


def _refusal(send: SendProcessor, request: messages_pb2.SendMessageRequest) -> tuple[int, str]:
    answers = Answers()
    send.process(request, answers)
    (response,) = answers
    assert not response.message_count
    return response.status.code, response.status.message


@pytest.mark.parametrize(
    ("request_", "code", "text"),
    [
        (send_request(b"x", topic="missing"), ResponseCode.TOPIC_NOT_EXIST, "auto-create is off"),
        (send_request(b"x", topic="SCHEDULE_TOPIC_XXXX"), ResponseCode.NO_PERMISSION, "system"),
        (send_request(b"x", queue_id=4), ResponseCode.INVALID_PARAMETER, "bad queue id"),
        (send_request(b"x", queue_id=-2), ResponseCode.INVALID_PARAMETER, "bad queue id"),
        (send_request(), ResponseCode.MESSAGE_ILLEGAL, "without a batch"),
        (send_request(b""), ResponseCode.MESSAGE_ILLEGAL, "body is empty"),
        (send_request(b"x" * 1025), ResponseCode.MESSAGE_ILLEGAL, "over the max message size"),
        (send_request(b"x" * 600, b"y" * 600), ResponseCode.MESSAGE_ILLEGAL, "batch_length=1200"),
        (send_request(b"x", tags="a b"), ResponseCode.MESSAGE_ILLEGAL, "BAD_TAG"),
        (send_request(b"x", properties={"a": "b\x01"}), ResponseCode.MESSAGE_ILLEGAL, "BAD_PROP"),
        (send_request(b"x", properties={"": "b"}), ResponseCode.MESSAGE_ILLEGAL, "BAD_PROP"),
        (_with_batch(b"garbage"), ResponseCode.MESSAGE_ILLEGAL, "TRUNCATED"),
        (_with_batch(_flipped(record_batch(b"x"))), ResponseCode.MESSAGE_ILLEGAL, "BAD_CRC"),
        (_with_batch(record_batch(b"x", topic="other")), ResponseCode.MESSAGE_ILLEGAL, "BAD_TOPIC"),
    ],
    ids=[
        "unknown-topic", "system-topic", "queue-too-big", "queue-negative", "no-batch",
        "empty-body", "over-max-size", "batch-over-max-size", "bad-tag", "separator-in-property",
        "empty-property-name", "not-a-batch", "bad-crc", "batch-of-another-topic",
    ],
)  # fmt: skip
def test_should_refuse_bad_input_with_a_code_a_text_and_a_count(
    store: MessageStore, request_: messages_pb2.SendMessageRequest, code: int, text: str
) -> None:
    send = SendProcessor(store, "broker-a", max_message_size=1024)
    got_code, got_text = _refusal(send, request_)
    assert got_code == code and text in got_text, got_text
    assert send.errors[code] == 1
    assert store.max_physical_offset == 0


def test_should_refuse_a_topic_without_write_permission(
    store: MessageStore, send: SendProcessor
) -> None:
    store.topic_config.create_or_update(TopicConfig("readonly", 1, 1, perm=PERM_READ))
    code, text = _refusal(send, send_request(b"x", topic="readonly"))
    assert code == ResponseCode.NO_PERMISSION and "not writable" in text


def test_should_create_an_unknown_topic_when_auto_create_is_on(store: MessageStore) -> None:
    send = SendProcessor(store, "broker-a", auto_create_topic=True, default_queue_nums=3)
    answers = Answers()
    send.process(send_request(b"x", topic="fresh", queue_id=2), answers)
    assert answers[0].status.code == ResponseCode.SUCCESS
    config = store.topic_config.get("fresh")
    assert config is not None and config.write_queue_nums == 3
    code, text = _refusal(send, send_request(b"x", topic="bad topic"))
    assert code == ResponseCode.MESSAGE_ILLEGAL and "bad topic name" in text


def test_should_map_a_store_refusal_to_its_code(store: MessageStore) -> None:
    send = SendProcessor(store, "broker-a")
    store.shutdown()  # not writable any more
    code, text = _refusal(send, send_request(b"x"))
    assert code == ResponseCode.SERVICE_NOT_AVAILABLE and "SERVICE_NOT_AVAILABLE" in text
    assert send.errors[ResponseCode.SERVICE_NOT_AVAILABLE] == 1


def test_should_answer_flush_disk_timeout_with_results_when_not_durable_in_time(
    open_store: Callable[..., MessageStore],
) -> None:
    store = open_store(flush_mode=FlushMode.SYNC, sync_flush_timeout_ms=1)
    assert store._group_commit is not None
    store._group_commit._flush = lambda: store.flushed_physical_offset  # a disk that never ends
    send = SendProcessor(store, "broker-a")
    done = threading.Event()
    answers = Answers()

    def on_done(response: messages_pb2.SendMessageResponse) -> None:
        answers(response)
        done.set()

    send.process(send_request(b"slow"), on_done)
    assert done.wait(5.0)
    (response,) = answers
    assert response.status.code == ResponseCode.FLUSH_DISK_TIMEOUT
    assert response.send_status == messages_pb2.FLUSH_DISK_TIMEOUT
    assert response.message_count == 1  # stored, with its offsets, only not durable yet
