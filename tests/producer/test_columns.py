"""Columnar sends against a broker in this process: every supported column type round-trips
exactly (bodies, keys, tags, properties, nulls), queues and selectors are honoured, a row that
cannot be a message fails the call with a typed error naming it and nothing sent, sync and
async."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from aeromq.broker.broker import Broker
from aeromq.client import (
    IllegalArgumentError,
    IllegalStateError,
    Message,
    MessageExt,
    MessageIllegalError,
    MessageQueue,
    MessageTooLargeError,
)
from aeromq.client.grpc_client import GrpcClient
from aeromq.common import hash_code
from aeromq.common.record_batch import ColumnSet, column_value
from aeromq.producer import (
    ColumnSendResults,
    KeyHashSelector,
    Producer,
    ProducerConfig,
    RandomSelector,
    SendMessageContext,
)

from .conftest import Puller

_topics = itertools.count()


@pytest.fixture
def topic(broker: Broker) -> str:
    """A fresh topic of 4 queues."""
    name = f"Columns{next(_topics)}"
    with GrpcClient(broker.grpc_address) as admin:
        admin.create_topic(name, read_queue_nums=4, write_queue_nums=4)
    return name


def read_all(puller: Puller, topic: str) -> dict[int, list[MessageExt]]:
    """Every message of each of the topic's 4 queues, in queue order."""
    out: dict[int, list[MessageExt]] = {}
    for queue_id in range(4):
        got: list[MessageExt] = []
        while True:
            batch = puller.messages(topic, queue_id, len(got))
            if not len(batch):
                break
            got += list(batch)
        out[queue_id] = got
    return out


def by_row(
    puller: Puller, topic: str, results: ColumnSendResults
) -> list[MessageExt]:  # the stored message of each row, through its result
    stored = read_all(puller, topic)
    assert sum(map(len, stored.values())) == len(results)
    rows = []
    for result in results:
        message = stored[result.message_queue.queue_id][result.queue_offset]
        assert message.msg_id == result.msg_id
        rows.append(message)
    return rows


_BODY_ARRAYS: dict[str, Callable[[list[bytes]], Any]] = {
    "binary": lambda b: pa.array(b, pa.binary()),
    "large_binary": lambda b: pa.array(b, pa.large_binary()),
    "string": lambda b: pa.array([v.decode() for v in b], pa.string()),
    "large_string": lambda b: pa.array([v.decode() for v in b], pa.large_string()),
    "binary_view": lambda b: pa.array(b, pa.binary_view()),
    "dictionary": lambda b: pa.array(b, pa.binary()).dictionary_encode(),
    "sliced": lambda b: pa.array([b"skipped", *b], pa.binary())[1:],
    "chunked": lambda b: pa.chunked_array([b[:2], b[2:]], pa.binary()),
    "numpy_S": lambda b: np.array(b, "S"),
}


@pytest.mark.parametrize("kind", sorted(_BODY_ARRAYS))
def test_should_store_each_body_of_every_body_column_type_exactly(
    producer: Producer, puller: Puller, topic: str, kind: str
) -> None:
    bodies = [b"alpha", b"\xce\xb2eta", b"g", b"delta-delta"]
    results = producer.send_columns(topic, _BODY_ARRAYS[kind](bodies))
    assert results.ok and len(results) == 4
    assert [m.body for m in by_row(puller, topic, results)] == bodies


def test_should_store_fixed_width_rows_of_numpy_and_arrow(
    producer: Producer, puller: Puller, topic: str
) -> None:
    matrix = np.arange(1, 13, dtype=np.uint8).reshape(4, 3)
    numbers = np.array([1, 2, 3, 2**40], np.int64)
    fixed = pa.array([b"abcd", b"efgh"], pa.binary(4))
    for column, expected in (
        (matrix, [bytes(row) for row in matrix]),
        (numbers, [n.tobytes() for n in numbers]),
        (fixed, [b"abcd", b"efgh"]),
    ):
        results = producer.send_columns(topic, column)
        stored = by_row(puller, topic, results)
        assert [m.body for m in stored] == expected
        topic = _fresh(producer, topic)


def _fresh(producer: Producer, topic: str) -> str:
    """Another fresh topic (a test reading back several sends one by one)."""
    name = f"{topic}x"
    endpoints = producer._send_path._endpoints
    with GrpcClient(endpoints[0]) as admin:
        admin.create_topic(name, read_queue_nums=4, write_queue_nums=4)
    return name


def test_should_store_tags_keys_and_properties_with_their_nulls(
    producer: Producer, puller: Puller, topic: str
) -> None:
    results = producer.send_columns(
        topic,
        pa.array([b"0", b"1", b"2", b"3"]),
        tags=pa.array(["TagA", None, "", "TagB"], pa.large_string()),
        keys=pa.array([" k1  k2 ", None, "", "k3"]),
        properties={
            "color": pa.array(["red", None, "blue", "gr\u00fcn"]),
            "n": np.array(["0", "1", "2", "3"]),
            "const": "c",
        },
    )
    stored = by_row(puller, topic, results)
    assert [m.tags for m in stored] == ["TagA", None, None, "TagB"]
    assert [m.keys for m in stored] == [("k1", "k2"), (), (), ("k3",)]
    assert [m.get_property("color") for m in stored] == ["red", None, "blue", "gr\u00fcn"]
    assert [m.get_property("n") for m in stored] == ["0", "1", "2", "3"]
    assert {m.get_property("const") for m in stored} == {"c"}
    assert {m.get_property("WAIT") for m in stored} == {"true"}


def test_should_store_the_same_properties_as_a_message_of_the_row(
    producer: Producer, puller: Puller, topic: str
) -> None:
    results = producer.send_columns(
        topic,
        pa.array([b"body"]),
        tags=pa.array(["T"]),
        keys=pa.array(["a b"]),
        properties={"x": pa.array(["1"])},
    )
    row = by_row(puller, topic, results)[0]
    message = Message(topic, b"body", tags="T", keys="a b", properties={"x": "1"})
    producer.send(message, queue=MessageQueue(topic, "broker-a", 3))
    sent = read_all(puller, topic)[3][-1]
    assert dict(row.properties) | {"UNIQ_KEY": ""} == dict(sent.properties) | {"UNIQ_KEY": ""}


def test_should_store_each_rows_own_properties_from_an_arrow_map(
    producer: Producer, puller: Puller, topic: str
) -> None:
    maps = [[("a", "1"), ("b", None)], None, [], [("c", "3")]]
    array = pa.array([[("z", "0")], *maps], pa.map_(pa.string(), pa.string()))[1:]
    results = producer.send_columns(topic, pa.array([b"0", b"1", b"2", b"3"]), properties=array)
    stored = by_row(puller, topic, results)
    user = [
        {k: v for k, v in m.properties.items() if k not in ("WAIT", "UNIQ_KEY")} for m in stored
    ]
    assert user == [{"a": "1"}, {}, {}, {"c": "3"}]


def test_should_send_every_row_to_the_given_queue(
    producer: Producer, puller: Puller, topic: str
) -> None:
    queue = MessageQueue(topic, "broker-a", 2)
    bodies = pa.array([b"%d" % i for i in range(5_000)])
    results = producer.send_columns(topic, bodies, queue=queue)
    assert set(results.queue_ids().tolist()) == {2}
    assert results.queue_offsets().tolist() == list(range(5_000))
    stored = read_all(puller, topic)
    assert [m.body for m in stored[2]] == bodies.to_pylist()
    assert not stored[0] and not stored[1] and not stored[3]


def test_should_place_rows_by_the_hash_of_their_first_key_as_for_messages(
    producer: Producer, puller: Puller, topic: str
) -> None:
    keys = [f"user-{i % 37} extra" for i in range(500)]
    results = producer.send_columns(
        topic,
        pa.array([b"%d" % i for i in range(500)]),
        keys=pa.array(keys),
        selector=KeyHashSelector(),
    )
    queues = producer.fetch_publish_queues(topic)
    selector = KeyHashSelector()
    for row, result in enumerate(results):
        message = Message(topic, b"x", keys=keys[row])
        assert result.message_queue == selector(queues, message, None)
        assert result.message_queue.queue_id == abs(hash_code(keys[row].split()[0])) % 4
    assert [m.body for m in by_row(puller, topic, results)] == [b"%d" % i for i in range(500)]


def test_should_place_rows_by_the_hash_of_an_arg_column_or_value(
    producer: Producer, topic: str
) -> None:
    orders = pa.array([f"order-{i % 5}" for i in range(100)])
    bodies = pa.array([b"x"] * 100)
    results = producer.send_columns(topic, bodies, selector=KeyHashSelector(), arg=orders)
    expected = [abs(hash_code(o)) % 4 for o in orders.to_pylist()]
    assert results.queue_ids().tolist() == expected
    one = producer.send_columns(topic, bodies, selector=KeyHashSelector(), arg="order-3")
    assert set(one.queue_ids().tolist()) == {abs(hash_code("order-3")) % 4}


def test_should_refuse_hash_selection_of_a_row_without_a_key(
    producer: Producer, topic: str
) -> None:
    with pytest.raises(IllegalArgumentError, match="hash selection needs a key") as raised:
        producer.send_columns(
            topic,
            pa.array([b"a", b"b"]),
            keys=pa.array(["k", "  "]),
            selector=KeyHashSelector(),
        )
    assert raised.value.values["row"] == 1


class _ByBody:
    """A column selector: the body's first byte, modulo the queues."""

    def select_rows(
        self, queues: Sequence[MessageQueue], columns: ColumnSet, arg: object
    ) -> np.ndarray[Any, np.dtype[np.int64]]:
        count = columns.bodies.length
        return np.array(
            [(column_value(columns.bodies, i) or b"\0")[0] % len(queues) for i in range(count)]
        )


def test_should_place_rows_where_a_column_selector_or_a_message_selector_says(
    producer: Producer, puller: Puller, topic: str
) -> None:
    bodies = pa.array([bytes([i]) + b"-body" for i in range(40)])
    results = producer.send_columns(topic, bodies, selector=_ByBody())
    assert results.queue_ids().tolist() == [i % 4 for i in range(40)]

    def by_tag(queues: Sequence[MessageQueue], message: Message, arg: object) -> MessageQueue:
        assert message.topic == topic and message.get_property("p") == "v"
        return queues[3 if message.tags == "last" else 0]

    tags = pa.array(["last" if i % 2 else "first" for i in range(40)])
    results = producer.send_columns(
        topic, bodies, tags=tags, properties={"p": "v"}, selector=by_tag
    )
    assert results.queue_ids().tolist() == [3 if i % 2 else 0 for i in range(40)]


def test_should_store_each_row_where_its_result_says_with_random_or_round_robin_queues(
    producer: Producer, puller: Puller, topic: str
) -> None:
    bodies = pa.array([b"%06d" % i for i in range(20_000)])
    first = producer.send_columns(topic, bodies, selector=RandomSelector(seed=7))
    assert len(set(first.queue_ids().tolist())) == 4
    second = producer.send_columns(topic, bodies)  # round robin, batch by batch
    assert len({batch.message_queue for batch in second.batches}) == 4
    stored = read_all(puller, topic)
    for results in (first, second):
        offsets, queue_ids = results.queue_offsets(), results.queue_ids()
        for row in range(0, 20_000, 997):
            assert stored[int(queue_ids[row])][int(offsets[row])].body == b"%06d" % row


@pytest.mark.parametrize(
    ("column", "value", "error", "problem"),
    [
        ("bodies", None, MessageIllegalError, "EMPTY_BODY"),
        ("bodies", b"", MessageIllegalError, "EMPTY_BODY"),
        ("bodies", b"x" * 2_000, MessageTooLargeError, None),
        ("tags", "a b", MessageIllegalError, "BAD_TAG"),
        ("keys", "k\x01", MessageIllegalError, "BAD_KEY"),
        ("color", "  ", MessageIllegalError, "BAD_PROPERTY"),
    ],
)
def test_should_refuse_a_row_that_cannot_be_a_message_naming_it_with_nothing_sent(
    make_producer: Callable[..., Producer],
    puller: Puller,
    topic: str,
    column: str,
    value: Any,
    error: type[Exception],
    problem: str | None,
) -> None:
    producer = make_producer(config=ProducerConfig(max_message_size=1_000))
    values: dict[str, list[Any]] = {
        "bodies": [b"ok"] * 6,
        "tags": ["T"] * 6,
        "keys": ["k"] * 6,
        "color": ["red"] * 6,
    }
    values[column][4] = value
    with pytest.raises(error) as raised:
        producer.send_columns(
            topic,
            pa.array(values["bodies"], pa.binary()),
            tags=pa.array(values["tags"]),
            keys=pa.array(values["keys"]),
            properties={"color": pa.array(values["color"])},
        )
    assert raised.value.values["row"] == 4
    if problem is not None:
        assert raised.value.values["problem"] == problem
    assert "row=4" in str(raised.value)
    assert not any(read_all(puller, topic).values())


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"tags": pa.array(["a"])}, IllegalArgumentError, "differ in length"),
        ({"properties": {"KEYS": "x"}}, MessageIllegalError, "reserved"),
        ({"properties": {" ": "x"}}, MessageIllegalError, "blank"),
        ({"properties": {"a\x00": "x"}}, MessageIllegalError, "x00"),
        (
            {"properties": pa.array([[("TAGS", "x")], []], pa.map_(pa.string(), pa.string()))},
            MessageIllegalError,
            "reserved",
        ),
        ({"tags": pa.array([1, 2])}, IllegalArgumentError, "binary or strings"),
        ({"tags": [b"a", b"b"]}, IllegalArgumentError, "an Arrow array"),
        ({"queue": MessageQueue("Other", "broker-a", 0)}, IllegalArgumentError, "another topic"),
    ],
)
def test_should_refuse_columns_a_send_cannot_take(
    producer: Producer, topic: str, arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        producer.send_columns(topic, pa.array([b"a", b"b"]), **arguments)


def test_should_refuse_bodies_that_are_not_a_column_and_an_empty_send(
    producer: Producer, topic: str
) -> None:
    with pytest.raises(IllegalArgumentError, match="Arrow array or a numpy array"):
        producer.send_columns(topic, [b"a"])  # type: ignore[arg-type]
    with pytest.raises(IllegalArgumentError, match="objects"):
        producer.send_columns(topic, np.array([b"a", None], object))
    with pytest.raises(IllegalArgumentError, match="nothing to send"):
        producer.send_columns(topic, pa.array([], pa.binary()))


def test_should_refuse_a_send_before_the_start(broker: Broker, topic: str) -> None:
    producer = Producer("test-producers", broker.grpc_address)
    with pytest.raises(IllegalStateError, match="not started"):
        producer.send_columns(topic, pa.array([b"a"]))


def test_should_send_columns_asynchronously(producer: Producer, puller: Puller, topic: str) -> None:
    bodies = pa.array([b"%d" % i for i in range(3_000)])
    futures = [
        producer.send_columns_async(topic, bodies.slice(i, 1_000)) for i in range(0, 3_000, 1_000)
    ]
    results = [future.result(30) for future in futures]
    assert [len(r) for r in results] == [1_000] * 3
    stored = read_all(puller, topic)
    got = sorted(m.body for queue in stored.values() for m in queue)
    assert got == sorted(bodies.to_pylist())


def test_should_count_a_call_as_one_send_and_run_the_hooks(producer: Producer, topic: str) -> None:
    seen: list[tuple[str, SendMessageContext]] = []

    class Hook:
        def send_message_before(self, context: SendMessageContext) -> None:
            seen.append(("before", context))

        def send_message_after(self, context: SendMessageContext) -> None:
            seen.append(("after", context))

    before = producer.metrics()
    producer.register_send_message_hook(Hook())
    results = producer.send_columns(topic, pa.array([b"a", b"b", b"c"]))
    after = producer.metrics()
    assert (after.sends - before.sends, after.messages - before.messages) == (1, 3)
    assert [what for what, _ in seen] == ["before", "after"]
    context = seen[1][1]
    assert context.topic == topic and context.messages == () and context.results == results
