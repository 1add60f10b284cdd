"""The native append of a one-record send (``broker/store/_put_one.c``) held to the Python path,
its reference: the same results and the same bytes in the commit log, the consume queues and the
index; and the index's queued entries found by a query at once."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aeromq.broker.store import InboundMessage, MessageStore, PutMessageResult, _put_path
from aeromq.common.record_batch import TIMER_FLAG, TRANSACTION_PREPARED_FLAG, encode_batch

from .conftest import ManualClock, crash, small_config

pytestmark = pytest.mark.skipif(_put_path._native is None, reason="_put_one is not built")

TOPICS = ("TopicA", "TopicB")

_properties = st.sampled_from(
    [
        b"",
        b"UNIQ_KEY\x01u-1\x02",
        b"A\x01b\x02UNIQ_KEY\x01u-2",
        b"UNIQ_KEY\x01\x02",  # an empty unique key: not indexed
        b"KEYS\x01k-1 k-2\x02UNIQ_KEY\x01u-3\x02",
        b"X\x01aUNIQ_KEY\x01b\x02",  # the marker inside another property's value
        b"UNIQ_KEY\x01u-4\x02X\x01aUNIQ_KEY\x01b\x02",
        "UNIQ_KEY\x01ключ\x02".encode(),
    ]
)

# (topic, queue id, topic named in the batch, bodies, properties, attributes, producer, damage)
_sends = st.tuples(
    st.sampled_from(TOPICS),
    st.sampled_from((0, 1) * 5 + (-1,)),
    st.sampled_from((None,) * 15 + ("TopicB",)),
    st.lists(st.binary(max_size=700), min_size=1, max_size=1)
    | st.lists(st.binary(max_size=700), min_size=1, max_size=1)
    | st.lists(st.binary(max_size=700), min_size=1, max_size=1)
    | st.lists(st.binary(max_size=300), min_size=2, max_size=3),
    _properties,
    st.sampled_from((0,) * 10 + (TIMER_FLAG, TRANSACTION_PREPARED_FLAG)),
    st.sampled_from((None,) * 10 + (7,)),
    st.sampled_from((None,) * 20 + ("magic", "short", "length", "retry", "retry")),
)


def _batch(send: tuple[object, ...], sequence: int) -> bytes:
    topic, _queue_id, named, bodies, properties, attributes, producer, damage = send
    assert isinstance(bodies, list) and isinstance(properties, bytes)
    batch = encode_batch(
        str(named or topic).encode(),
        bodies,
        [None] * len(bodies),
        [properties] * len(bodies),
        born_timestamp_ms=1_700_000_000_000,
        attributes=int(attributes),  # type: ignore[call-overload]  # an int of the tuple
        producer_id=producer,  # type: ignore[arg-type]  # None or an int of the tuple
        base_sequence=sequence,
    )
    if damage == "magic":
        batch[4] ^= 0xFF
    elif damage == "short":
        del batch[-1]
    elif damage == "length":
        batch[0] ^= 0x01
    return bytes(batch)


def _files(data_dir: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(data_dir)): path.read_bytes()
        for folder in ("commitlog", "consumequeue", "index")
        for path in sorted((data_dir / folder).rglob("*"))
        if path.is_file()
    }


def _run(data_dir: Path, native: bool, sends: list[tuple[object, ...]]) -> list[PutMessageResult]:
    clock = ManualClock()
    store = MessageStore(small_config(data_dir, index_entries=24), clock_ms=clock)
    store.native_put = native
    store.start()
    results = []
    sequences: dict[tuple[object, object], int] = {}
    last: dict[tuple[object, object], bytes] = {}  # a retry sends the queue's last batch again
    for send in sends:
        topic, queue_id = send[0], send[1]
        sequence = sequences.get((topic, queue_id), 0)
        batch = last.get((topic, queue_id)) if send[-1] == "retry" else None
        if batch is None:
            batch = last[(topic, queue_id)] = _batch(send, sequence)
        result = store.put_batch(batch, str(topic), int(queue_id))  # type: ignore[call-overload]
        sequences[(topic, queue_id)] = sequence + result.message_count
        results.append(result)
        clock.advance(137)
    store.shutdown()
    return results


@settings(max_examples=40, deadline=None)
@given(sends=st.lists(_sends, min_size=10, max_size=80))
def test_should_append_one_record_sends_natively_as_the_python_path_does(
    sends: list[tuple[object, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as root:
        native, python = Path(root, "native"), Path(root, "python")
        assert _run(native, True, sends) == _run(python, False, sends)
        assert _files(native) == _files(python)


def test_should_take_a_plain_one_record_send_natively(
    open_store: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store()  # type: ignore[operator]
    assert isinstance(store, MessageStore)
    first = store.put_message(InboundMessage("TopicA", 0, b"first", {"UNIQ_KEY": "u0"}))
    assert first.ok  # the queue made by the Python path

    def refuse(*_: object) -> None:
        raise AssertionError("the Python path took a plain one-record send")

    monkeypatch.setattr(store, "_append", refuse)
    second = store.put_message(InboundMessage("TopicA", 0, b"second", {"UNIQ_KEY": "u1"}))
    assert (second.queue_offset, second.physical_offset) == (1, first.wrote_bytes)
    assert store.get_messages("TopicA", 0, 1).messages[0].body == b"second"


def test_should_find_a_message_by_key_as_soon_as_its_put_returns(open_store: object) -> None:
    store = open_store(flush_consume_queue_interval_ms=3_600_000)  # type: ignore[operator]
    assert isinstance(store, MessageStore)
    assert store.index is not None
    for i in range(3):
        store.put_message(InboundMessage("TopicA", 0, bytes([i]), {"UNIQ_KEY": f"u{i}"}))
        store.put_message(InboundMessage("TopicA", 1, bytes([i]), {"KEYS": f"k{i} both"}))
        assert store.index.pending  # not written yet: found in the queue
        (found,) = store.query_messages_by_key("TopicA", f"u{i}")
        assert found.body == bytes([i])
        (keyed,) = store.query_messages_by_key("TopicA", f"k{i}")
        assert keyed.queue_id == 1
    assert len(store.query_messages_by_key("TopicA", "both")) == 3
    store.flush()  # the checkpoint writes the queue to the files
    assert not store.index.pending
    assert [m.body for m in store.query_messages_by_key("TopicA", "both")] == [
        b"\x02",
        b"\x01",
        b"\x00",
    ]


def test_should_find_by_key_after_a_crash_what_the_index_had_queued(
    tmp_path: Path, clock: ManualClock
) -> None:
    quiet = {"flush_consume_queue_interval_ms": 600_000, "clean_interval_ms": 600_000}
    store = MessageStore(small_config(tmp_path, **quiet), clock_ms=clock)
    store.start()
    for i in range(30):
        store.put_message(InboundMessage("TopicA", i % 2, bytes([i]), {"UNIQ_KEY": f"u{i}"}))
        if i == 9:
            store.flush()  # a checkpoint: the first ten written to the index files
    assert store.index is not None and len(store.index.pending) == 20
    store.index.pending.clear()  # lost with the killed process
    crash(store)
    again = MessageStore(small_config(tmp_path, **quiet), clock_ms=clock)
    again.start()
    try:
        for i in range(30):
            (found,) = again.query_messages_by_key("TopicA", f"u{i}")
            assert found.body == bytes([i])
    finally:
        again.shutdown()
