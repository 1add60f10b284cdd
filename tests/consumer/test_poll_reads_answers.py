"""``poll()`` reads the pull answers of its one broker on its own thread
(``consumer/consume_request_cache.py``), against a real ``aeromq broker`` process over IPC:
messages sent one at a time reach ``poll()`` without the consumer's session poller thread
waking for them, and the messages are the ones sent, in order."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from aeromq.client import Message
from aeromq.client.session import ClientSession
from aeromq.consumer._grpc_broker_api import GrpcBrokerApi
from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
from aeromq.consumer.lite_pull_consumer import DefaultLitePullConsumer
from aeromq.producer import Producer
from tests.consumer._broker_process import ServerProcess, create_topic, start_broker
from tests.consumer._lite import running

TOPIC = "PollReads"
ROUNDS = 30
GAP_S = 0.02


@pytest.fixture(scope="module")
def real_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = start_broker(tmp_path_factory.mktemp("poll-reads"))
    try:
        create_topic(process, TOPIC, 1)
        yield process
    finally:
        process.stop()


def _wakeups(session: ClientSession) -> int:
    """The voluntary context switches of the session's poller thread (``/proc``)."""
    name = f"aeromq-session-{session.response_stream_id}"
    (thread,) = [t for t in threading.enumerate() if t.name == name]
    with open(f"/proc/self/task/{thread.native_id}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise AssertionError("no voluntary_ctxt_switches in /proc")


def test_should_read_the_pull_answers_on_the_polling_thread(real_broker: ServerProcess) -> None:
    config = LitePullConsumerConfig(
        consumer_group="poll-reads",
        endpoints=(real_broker.grpc_address,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
    )
    consumer = DefaultLitePullConsumer(config=config)
    consumer.subscribe(TOPIC, "*")
    with (
        Producer("poll-reads-producer", real_broker.grpc_address) as producer,
        running(consumer),
    ):
        producer.send(Message(TOPIC, b"warm"))
        got = [m.body for m in consumer.poll(5_000)]
        assert got == [b"warm"]
        api = consumer._services.require_api()
        assert isinstance(api, GrpcBrokerApi)
        session = api.answer_pump()  # the one session: poll() reads its answers
        assert session is not None and session.rung_by_broker
        before = _wakeups(session)

        def send_slowly() -> None:
            for i in range(ROUNDS):
                time.sleep(GAP_S)
                producer.send(Message(TOPIC, b"%d" % i))

        sender = threading.Thread(target=send_slowly)
        sender.start()
        deadline = time.monotonic() + 20
        while len(got) < ROUNDS + 1 and time.monotonic() < deadline:
            got.extend(m.body for m in consumer.poll(1_000))
        sender.join()
        woken = _wakeups(session) - before
    assert got == [b"warm"] + [b"%d" % i for i in range(ROUNDS)]
    # asleep until its housekeeping (every 100 ms) while poll() reads: a handful of wake-ups,
    # where a poller that read the answers woke at least once for each of the 30
    assert woken <= ROUNDS // 3, woken
