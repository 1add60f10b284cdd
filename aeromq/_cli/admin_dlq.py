"""The dead-letter commands of ``aeromq admin`` (``dlq list``, ``dlq browse``, ``dlq resend``),
one function each: ``command(target, args, out)`` (Caller: :mod:`~aeromq._cli.admin`).

A consumer group's dead letters are the topic ``%DLQ%<group>`` (one queue per broker): the
messages its consumers gave up on after ``max_reconsume_times`` retries (``docs/push-consumer.md``).
``browse`` shows them with the topic each first came from (``RETRY_TOPIC``) and its reconsume
times; ``resend`` puts one (or every one from an offset) back on that topic, on each broker that
holds the group's dead letters, with its reconsume times back at 0 (the dead-letter copy stays).
"""

from __future__ import annotations

import argparse

from aeromq._cli.admin_target import Output, Target
from aeromq.client import GrpcClient
from aeromq.common import (
    DLQ_TOPIC_PREFIX,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    ClientError,
    TopicNotFoundError,
    dlq_topic,
)

__all__ = ["dlq_browse", "dlq_list", "dlq_resend"]

_BODY_PREVIEW_CHARS = 60
_PAGE = 256


def dlq_list(target: Target, args: argparse.Namespace, out: Output) -> None:
    rows: list[list[object]] = []
    for name, client in target.brokers():
        for topic in client.list_topics():
            if not topic.topic_name.startswith(DLQ_TOPIC_PREFIX):
                continue
            count = sum(
                client.max_offset(topic.topic_name, q) - client.min_offset(topic.topic_name, q)
                for q in range(topic.read_queue_nums)
            )
            rows.append([topic.topic_name[len(DLQ_TOPIC_PREFIX) :], name, topic.topic_name, count])
    out.table(["GROUP", "BROKER", "TOPIC", "MESSAGES"], rows)


def dlq_browse(target: Target, args: argparse.Namespace, out: Output) -> None:
    topic = dlq_topic(args.group)
    rows: list[list[object]] = []
    for name, client in _brokers(target, topic):
        for message in client.view_messages(topic, 0, args.offset, args.max):
            properties = message.properties
            body = message.body.decode(errors="replace")
            if not out.as_json and len(body) > _BODY_PREVIEW_CHARS:
                body = body[:_BODY_PREVIEW_CHARS] + "..."
            rows.append([name, message.queue_offset, properties.get(PROPERTY_RETRY_TOPIC, "-"),
                         properties.get(PROPERTY_RECONSUME_TIME, "-"),
                         properties.get("UNIQ_KEY", "-"), message.store_timestamp_ms,
                         body])  # fmt: skip
    out.table(
        ["BROKER", "OFFSET", "ORIGIN_TOPIC", "RECONSUME_TIMES", "MSG_ID", "STORE_TIME_MS", "BODY"],
        rows,
    )


def dlq_resend(target: Target, args: argparse.Namespace, out: Output) -> None:
    topic = dlq_topic(args.group)
    for name, client in _brokers(target, topic):
        if args.broker is not None and name != args.broker:
            continue
        offsets = [args.offset]
        if args.all:
            end = client.max_offset(topic, 0)
            offsets = list(range(max(args.offset, client.min_offset(topic, 0)), end))
        for offset in offsets:
            try:
                copy = client.resend_message(topic, 0, offset)
            except ClientError as exc:
                if args.all:  # gone to retention or not re-sendable: say so, go on
                    out.write(f"not resent {topic}@{offset} on {name}: {exc}\n")
                    continue
                raise
            out.record({"broker": name, "offset": offset, "topic": copy.topic,
                        "queue": copy.queue_id, "queue_offset": copy.queue_offset})  # fmt: skip
            out.write(f"resent {topic}@{offset} on {name} to {copy.topic} queue "
                      f"{copy.queue_id} offset {copy.queue_offset}\n")  # fmt: skip


def _brokers(target: Target, topic: str) -> list[tuple[str, GrpcClient]]:
    try:
        return target.brokers_of_topic(topic)
    except TopicNotFoundError as exc:
        raise TopicNotFoundError("the group has no dead letters", topic=topic) from exc
