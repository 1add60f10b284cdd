"""PullMessage: RocketMQ's statuses, offsets and caps, tag filtering, long polling, refusals;
the stored record batches in the answer, read back as the consumer reads them."""

from __future__ import annotations

import threading
import time

import pytest

from aeromq.broker.processor.pull import MAX_PULL_MESSAGES, PullProcessor
from aeromq.broker.processor.pull_hold import PullHoldService
from aeromq.broker.processor.send import SendProcessor
from aeromq.broker.store import MessageStore, TopicConfig
from aeromq.client import MessageQueue, MessageSelector, ResponseCode, build_subscription_data
from aeromq.common import PERM_WRITE, PullAnswer
from aeromq.consumer import MessageBatch, read_pulled_batches
from aeromq.proto import messages_pb2

from .conftest import TOPIC, Answers, pull_request, send_request

FOUND = messages_pb2.FOUND
NO_NEW_MSG = messages_pb2.NO_NEW_MSG
NO_MATCHED_MSG = messages_pb2.NO_MATCHED_MSG
OFFSET_ILLEGAL = messages_pb2.OFFSET_ILLEGAL


def _fill(send: SendProcessor, count: int, queue_id: int = 0, **fields: object) -> None:
    for i in range(count):
        send.process(send_request(b"m%d" % i, queue_id=queue_id, **fields), Answers())


def _pull(pull: PullProcessor, **fields: object) -> PullAnswer:
    answers = Answers()
    pull.process(pull_request(**fields), answers)  # type: ignore[arg-type]
    (response,) = answers
    return response


def _read(
    response: PullAnswer,
    offset: int = 0,
    queue_id: int = 0,
    expression: str = "*",
    selector: MessageSelector | None = None,
) -> MessageBatch:
    """The messages a consumer takes from the answer to a pull from ``offset``."""
    return read_pulled_batches(
        response.batches,
        MessageQueue(TOPIC, "broker-a", queue_id),
        "broker-a",
        offset,
        response.next_begin_offset,
        build_subscription_data(TOPIC, selector if selector is not None else expression),
    )


def test_should_find_messages_from_the_offset_with_next_min_and_max(
    send: SendProcessor, pull: PullProcessor
) -> None:
    _fill(send, 5)
    response = _pull(pull, offset=2)
    assert response.status.code == ResponseCode.SUCCESS
    assert response.pull_status == FOUND
    messages = _read(response, 2)
    assert [m.body for m in messages] == [b"m2", b"m3", b"m4"]
    assert messages.queue_offsets.tolist() == [2, 3, 4]
    assert (response.next_begin_offset, response.min_offset, response.max_offset) == (5, 0, 5)


def test_should_answer_with_the_batches_beside_the_response_not_inside_it(
    send: SendProcessor, pull: PullProcessor
) -> None:
    send.process(send_request(b"a", b"b"), Answers())
    answer = _pull(pull)
    assert isinstance(answer, PullAnswer)
    assert not answer.response.batches and not answer.response.HasField("status")
    assert answer.response.next_begin_offset == 2 and len(answer.batches) > 0
    assert [m.body for m in _read(answer)] == [b"a", b"b"]
    refused = _pull(pull, queue_id=99)
    assert refused.status.code == ResponseCode.INVALID_PARAMETER and refused.batches == b""


def test_should_answer_with_whole_stored_batches_and_move_past_the_last_one(
    send: SendProcessor, pull: PullProcessor
) -> None:
    send.process(send_request(b"a", b"b", b"c", b"d", b"e"), Answers())
    send.process(send_request(b"f", b"g"), Answers())
    response = _pull(pull, offset=1, max_msg_nums=2)
    assert response.next_begin_offset == 5  # the batch is sent whole: no pull sends it again
    assert [m.body for m in _read(response, 1)] == [b"b", b"c", b"d", b"e"]
    whole = _pull(pull, offset=0, max_msg_nums=1)
    assert response.batches == whole.batches  # the one stored batch, as it is
    rest = _pull(pull, offset=5)
    assert [m.body for m in _read(rest, 5)] == [b"f", b"g"]


def test_should_cap_a_pull_at_the_most_messages_and_at_what_the_request_asks(
    send: SendProcessor, pull: PullProcessor
) -> None:
    _fill(send, 40)
    assert len(_read(_pull(pull))) == 40
    assert MAX_PULL_MESSAGES >= 40
    assert len(_read(_pull(pull, max_msg_nums=5))) == 5
    one = _pull(pull, max_msg_nums=1)
    batch_length = len(one.batches)
    small = _pull(pull, max_bytes=2 * batch_length + batch_length // 2)
    assert len(_read(small)) == 2 and small.next_begin_offset == 2


def test_should_cap_a_pull_at_about_max_bytes_and_always_return_one_batch(
    store: MessageStore, pull: PullProcessor
) -> None:
    send = SendProcessor(store, "broker-a", max_message_size=200_000)
    for _ in range(12):
        send.process(send_request(b"x" * 100_000), Answers())
    assert len(_read(_pull(pull))) == 10  # an eleventh would pass 1 MiB
    assert len(_read(_pull(pull, max_bytes=10))) == 1


def test_should_answer_no_new_msg_at_the_end_and_for_an_empty_queue_at_zero(
    send: SendProcessor, pull: PullProcessor
) -> None:
    empty = _pull(pull, queue_id=3)
    assert (empty.pull_status, empty.next_begin_offset) == (NO_NEW_MSG, 0)
    _fill(send, 2)
    end = _pull(pull, offset=2)
    assert (end.pull_status, end.next_begin_offset, end.max_offset) == (NO_NEW_MSG, 2, 2)


def test_should_answer_offset_illegal_beyond_the_end_or_in_an_empty_queue(
    send: SendProcessor, pull: PullProcessor
) -> None:
    empty = _pull(pull, queue_id=3, offset=7)
    assert empty.pull_status == OFFSET_ILLEGAL
    _fill(send, 2)
    beyond = _pull(pull, offset=9)
    assert (beyond.pull_status, beyond.next_begin_offset) == (OFFSET_ILLEGAL, 2)


def test_should_filter_by_tag_and_move_past_entries_that_do_not_match(
    send: SendProcessor, pull: PullProcessor
) -> None:
    _fill(send, 3, tags="A")
    _fill(send, 2, tags="B")
    none = _pull(pull, sub_expression="C")
    assert (none.pull_status, none.next_begin_offset, none.batches) == (NO_MATCHED_MSG, 5, b"")
    only_b = _read(_pull(pull, sub_expression="B || C"), expression="B || C")
    assert [m.tags for m in only_b] == ["B", "B"]
    assert only_b.queue_offsets.tolist() == [3, 4]
    every = _pull(pull, sub_expression="*")
    assert len(_read(every)) == 5


def test_should_answer_a_sql92_pull_with_the_batches_of_the_matching_messages_only(
    send: SendProcessor, pull: PullProcessor
) -> None:
    for index in range(6):
        send.process(
            send_request(
                b"m%d" % index, tags="A" if index % 2 else "B", properties={"n": str(index)}
            ),
            Answers(),
        )
    sql = messages_pb2.SQL92
    expression = "n >= 2 AND TAGS = 'A'"
    found = _pull(pull, expression_type=sql, sub_expression=expression)
    assert found.pull_status == FOUND and found.next_begin_offset == 6
    selector = MessageSelector.by_sql(expression)
    assert [m.body for m in _read(found, selector=selector)] == [b"m3", b"m5"]
    everything = _pull(pull)
    assert len(found.batches) < len(everything.batches)  # only the batches with a match
    none = _pull(pull, expression_type=sql, sub_expression="n > 100")
    assert none.pull_status == NO_MATCHED_MSG and not none.batches
    assert none.next_begin_offset == 6


def test_should_send_only_batches_holding_a_match_and_the_consumer_keeps_only_matches(
    send: SendProcessor, pull: PullProcessor
) -> None:
    send.process(send_request(b"a1", b"a2", tags="A"), Answers())
    send.process(send_request(b"b1", tags="B"), Answers())
    send.process(send_request(b"a3", tags="A"), Answers())
    response = _pull(pull, sub_expression="A")
    assert response.next_begin_offset == 4
    assert [m.body for m in _read(response, expression="A")] == [b"a1", b"a2", b"a3"]
    only_b = _pull(pull, sub_expression="B")
    assert len(only_b.batches) < len(response.batches)  # the B batch alone


def test_should_carry_tags_keys_ids_and_properties_in_the_stored_batch(
    send: SendProcessor, pull: PullProcessor
) -> None:
    request = send_request(b"x", tags="T", keys=["k1", "k2"], msg_id="UNIQ", properties={"p": "v"})
    send.process(request, Answers())
    send.process(send_request(b"plain"), Answers())
    first, second = _read(_pull(pull))
    assert (first.tags, list(first.keys), first.msg_id) == ("T", ["k1", "k2"], "UNIQ")
    assert dict(first.properties) == {"p": "v", "TAGS": "T", "KEYS": "k1 k2", "UNIQ_KEY": "UNIQ"}
    assert first.broker_name == "broker-a"
    assert first.store_host == ("127.0.0.1", 10911) and first.store_size > 0
    assert first.offset_msg_id != first.msg_id
    assert second.msg_id == second.offset_msg_id and not second.properties


def test_should_commit_a_positive_offset_the_request_carries_and_never_the_default(
    store: MessageStore, send: SendProcessor, pull: PullProcessor
) -> None:
    _fill(send, 3, queue_id=1)
    _pull(pull, queue_id=1, commit_offset=2)
    assert store.consumer_offsets.query_offset("cg", TOPIC, 1) == 2
    _pull(pull, queue_id=1)  # commit_offset unset is proto3's 0: it must not reset the group
    _pull(pull, queue_id=1, commit_offset=-1)
    assert store.consumer_offsets.query_offset("cg", TOPIC, 1) == 2


def test_should_hold_a_pull_until_a_message_arrives_in_its_queue(
    send: SendProcessor, pull: PullProcessor, hold: PullHoldService
) -> None:
    answered = threading.Event()
    answers = Answers()

    def on_done(response: messages_pb2.PullMessageResponse) -> None:
        answers(response)
        answered.set()

    pull.process(pull_request(suspend_timeout_ms=5_000), on_done)
    assert not answered.wait(0.05) and hold.held_count == 1
    _fill(send, 1, queue_id=1)  # another queue: still held
    assert not answered.wait(0.05)
    _fill(send, 1, queue_id=0)
    assert answered.wait(2.0)  # well before the 5 s suspend timeout; the counters say why
    (response,) = answers
    assert response.pull_status == FOUND and [m.body for m in _read(response)] == [b"m0"]
    assert pull.held == 1 and hold.woken_by_arrival == 1 and hold.woken_by_timeout == 0


def test_should_answer_a_held_pull_with_no_new_msg_at_its_suspend_timeout(
    pull: PullProcessor,
) -> None:
    answered = threading.Event()
    answers = Answers()

    def on_done(response: messages_pb2.PullMessageResponse) -> None:
        answers(response)
        answered.set()

    began = time.monotonic()
    pull.process(pull_request(suspend_timeout_ms=80), on_done)
    assert answered.wait(2.0)
    assert time.monotonic() - began >= 0.07
    assert answers[0].pull_status == NO_NEW_MSG


def test_should_answer_at_once_when_long_polling_is_off(
    store: MessageStore, hold: PullHoldService
) -> None:
    pull = PullProcessor(store, hold, "broker-a", long_polling=False)
    assert _pull(pull, suspend_timeout_ms=5_000).pull_status == NO_NEW_MSG


@pytest.mark.parametrize(
    ("fields", "code", "text"),
    [
        ({"topic": "missing"}, ResponseCode.TOPIC_NOT_EXIST, "no such topic"),
        ({"queue_id": 4}, ResponseCode.INVALID_PARAMETER, "bad queue id"),
        ({"queue_id": -1}, ResponseCode.INVALID_PARAMETER, "bad queue id"),
        ({"offset": -1}, ResponseCode.INVALID_PARAMETER, "queue offset"),
        ({"max_msg_nums": -1}, ResponseCode.INVALID_PARAMETER, "max_msg_nums"),
        ({"sub_expression": "A ||"}, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "bad tag expression"),
        ({"sub_expression": "A | B"}, ResponseCode.SUBSCRIPTION_PARSE_FAILED, "bad tag expression"),
        (
            {"expression_type": messages_pb2.SQL92, "sub_expression": "a > 1 AND"},
            ResponseCode.SUBSCRIPTION_PARSE_FAILED,
            "bad SQL92 expression",
        ),
    ],
    ids=["unknown-topic", "queue-too-big", "queue-negative", "negative-offset", "negative-count",
         "empty-alternative", "single-bar", "sql92"],
)  # fmt: skip
def test_should_refuse_bad_input_with_a_code_a_text_and_a_count(
    pull: PullProcessor, fields: dict[str, object], code: int, text: str
) -> None:
    response = _pull(pull, **fields)
    assert response.status.code == code and text in response.status.message
    assert pull.errors[code] == 1


def test_should_refuse_a_bad_group_and_a_topic_without_read_permission(
    store: MessageStore, pull: PullProcessor
) -> None:
    answers = Answers()
    pull.process(messages_pb2.PullMessageRequest(consumer_group="bad group", topic=TOPIC), answers)
    assert answers[0].status.code == ResponseCode.INVALID_PARAMETER
    store.topic_config.create_or_update(TopicConfig("writeonly", 1, 1, perm=PERM_WRITE))
    response = _pull(pull, topic="writeonly")
    assert response.status.code == ResponseCode.NO_PERMISSION
