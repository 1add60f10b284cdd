"""The orderly push consumer process of the orderly system test (run with ``spawn``).

It consumes with an orderly listener that sleeps ``work_ms`` per message and answers
``SUSPEND_CURRENT_QUEUE_A_MOMENT`` the first time it sees a body whose number is a multiple of
``fail_every``; each message consumed is written as one line ``C <wall_ns> <queue_id> <body>``
with ``os.write`` before the listener answers SUCCESS (a SIGKILL loses nothing written). ``S``
is written once started, ``E`` after a clean shutdown (SIGTERM).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType


def _line(fd: int, text: str) -> None:
    os.write(fd, (text + "\n").encode())


def run_orderly_consumer(
    endpoint: str, group: str, topic: str, instance: str, path: str, work_ms: int, fail_every: int
) -> None:
    from aeromq.client import MessageExt
    from aeromq.consumer.config import ConsumeFromWhere, LitePullConsumerConfig
    from aeromq.consumer.push import (
        ConsumeOrderlyContext,
        ConsumeOrderlyStatus,
        DefaultMQPushConsumer,
        PushConsumerConfig,
    )

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    stop = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_term)
    failed: set[bytes] = set()

    def listener(
        messages: list[MessageExt], context: ConsumeOrderlyContext
    ) -> ConsumeOrderlyStatus:
        for message in messages:
            number = int(message.body.split(b":")[1])
            if number % fail_every == fail_every - 1 and message.body not in failed:
                failed.add(message.body)
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
            time.sleep(work_ms / 1000)
            _line(fd, f"C {time.time_ns()} {message.queue_id} {message.body.decode()}")
        return ConsumeOrderlyStatus.SUCCESS

    pull = LitePullConsumerConfig(
        consumer_group=group,
        endpoints=(endpoint,),
        instance_name=instance,
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        broker_suspend_max_time_ms=500,
        rebalance_retry_interval_ms=200,
        pull_batch_size=16,
    )
    config = PushConsumerConfig(
        consumer_group=group,
        endpoints=(endpoint,),
        consume_from_where=ConsumeFromWhere.FIRST_OFFSET,
        consume_thread_count=4,
        suspend_current_queue_time_ms=100,
        persist_interval_ms=200,
        lock_interval_ms=1000,
        pull=pull,
    )
    consumer = DefaultMQPushConsumer(config=config)
    consumer.subscribe(topic, "*")
    consumer.register_message_listener_orderly(listener)
    consumer.start()
    _line(fd, f"S {time.time_ns()}")
    try:
        stop.wait(120)
    finally:
        consumer.shutdown()
        _line(fd, f"E {time.time_ns()}")
        os.close(fd)
