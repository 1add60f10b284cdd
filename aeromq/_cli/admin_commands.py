"""The commands of ``aeromq admin``, one function each: ``command(target, args, out)``
(Caller: :mod:`~aeromq._cli.admin`, whose module docstring says what each does)."""

from __future__ import annotations

import argparse
import sys

from aeromq._cli.admin_target import Output, Target, UsageError, parse_time_ms, perm_text
from aeromq._cli.progress import Progress
from aeromq.common import (
    PERM_READ,
    PERM_READ_WRITE,
    PERM_WRITE,
    ClientError,
    ResponseCode,
    TopicNotFoundError,
)
from aeromq.proto import admin_pb2, common_pb2

__all__ = [
    "PERMS",
    "cluster_list",
    "group_list",
    "group_progress",
    "message_by_id",
    "message_by_key",
    "offset_reset",
    "replication",
    "stats",
    "topic_create",
    "topic_delete",
    "topic_list",
    "topic_route",
    "topic_update",
]

PERMS = {"rw": PERM_READ_WRITE, "r": PERM_READ, "w": PERM_WRITE}
_SUBSCRIPTION_GROUP_NOT_EXIST = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
_QUERY_NOT_FOUND = ResponseCode.QUERY_NOT_FOUND
_BODY_PREVIEW_CHARS = 60


def topic_create(target: Target, args: argparse.Namespace, out: Output) -> None:
    read = args.read_queues if args.read_queues is not None else args.queues
    write = args.write_queues if args.write_queues is not None else args.queues
    if args.perm not in PERMS:
        raise UsageError(f"--perm must be one of {', '.join(PERMS)}: value={args.perm!r}")
    brokers = target.brokers(args.cluster)
    if not brokers:
        raise UsageError("no broker to create the topic on (is any registered?)")
    rows: list[list[object]] = []
    for name, client in brokers:
        config = client.create_topic(
            args.topic,
            read_queue_nums=read or 0,
            write_queue_nums=write or 0,
            perm=PERMS[args.perm],
            order=args.order,
        )
        rows.append([name, config.topic_name, config.read_queue_nums, config.write_queue_nums])
    out.write(f"created topic {args.topic}\n")
    out.table(["BROKER", "TOPIC", "READ", "WRITE"], rows)


def topic_update(target: Target, args: argparse.Namespace, out: Output) -> None:
    if args.perm is not None and args.perm not in PERMS:
        raise UsageError(f"--perm must be one of {', '.join(PERMS)}: value={args.perm!r}")
    rows: list[list[object]] = []
    for name, client in target.brokers_of_topic(args.topic):
        current = next((t for t in client.list_topics() if t.topic_name == args.topic), None)
        if current is None:
            raise TopicNotFoundError("topic not found", topic=args.topic, broker=name)
        read = args.read_queues if args.read_queues is not None else args.queues
        write = args.write_queues if args.write_queues is not None else args.queues
        config = common_pb2.TopicConfig(
            topic_name=args.topic,
            read_queue_nums=current.read_queue_nums if read is None else read,
            write_queue_nums=current.write_queue_nums if write is None else write,
            perm=current.perm if args.perm is None else PERMS[args.perm],
            order=current.order if args.order is None else args.order,
        )
        stored = client.update_topic(config)
        rows.append(
            [
                name,
                stored.topic_name,
                stored.read_queue_nums,
                stored.write_queue_nums,
                perm_text(stored.perm),
                stored.order,
            ]
        )
    out.write(f"updated topic {args.topic}\n")
    out.table(["BROKER", "TOPIC", "READ", "WRITE", "PERM", "ORDER"], rows)


def topic_list(target: Target, args: argparse.Namespace, out: Output) -> None:
    topics = target.client.list_topics(namesrv=target.is_namesrv)
    out.table(
        ["TOPIC", "READ", "WRITE", "PERM", "ORDER"],
        [
            [t.topic_name, t.read_queue_nums, t.write_queue_nums, perm_text(t.perm), t.order]
            for t in topics
        ],
    )


def topic_delete(target: Target, args: argparse.Namespace, out: Output) -> None:
    for name, client in target.brokers_of_topic(args.topic):
        client.delete_topic(args.topic)
        out.write(f"deleted topic {args.topic} on {name}\n")


def topic_route(target: Target, args: argparse.Namespace, out: Output) -> None:
    route = target.client.query_route(args.topic, namesrv=target.is_namesrv)
    endpoints = {b.broker_name: b.endpoints for b in route.broker_datas}
    rows: list[list[object]] = []
    for q in route.queue_datas:
        e = endpoints.get(q.broker_name, common_pb2.BrokerEndpoints())
        ingress = e.udp_channel or e.ipc_channel
        rows.append(
            [
                q.broker_name,
                q.read_queue_nums,
                q.write_queue_nums,
                perm_text(q.perm),
                e.grpc_address,
                ingress,
            ]
        )
    out.table(["BROKER", "READ", "WRITE", "PERM", "GRPC", "INGRESS"], rows)


def group_list(target: Target, args: argparse.Namespace, out: Output) -> None:
    merged: dict[str, tuple[set[str], int, admin_pb2.MessageModel.ValueType]] = {}
    for _name, client in target.brokers():
        for group in client.list_groups():
            topics, count, model = merged.get(group.consumer_group, (set(), 0, group.message_model))
            topics.update(group.topics)
            merged[group.consumer_group] = (topics, max(count, group.consumer_count), model)
    out.table(
        ["GROUP", "CONSUMERS", "MODEL", "TOPICS"],
        [
            [g, count, admin_pb2.MessageModel.Name(model), ",".join(sorted(topics)) or "-"]
            for g, (topics, count, model) in sorted(merged.items())
        ],
    )


def group_progress(target: Target, args: argparse.Namespace, out: Output) -> None:
    brokers = target.brokers_of_topic(args.topic) if args.topic else target.brokers()
    queues: list[admin_pb2.QueueProgress] = []
    online = 0
    found = False
    for _name, client in brokers:
        try:
            progress = client.consumer_progress(args.group, args.topic or "")
        except ClientError as exc:
            if exc.code == _SUBSCRIPTION_GROUP_NOT_EXIST and len(brokers) > 1:
                continue  # the group has nothing on this broker
            raise
        found = True
        queues.extend(progress.queues)
        online = max(online, progress.online_consumers)
    if not found:
        raise ClientError(
            "no such consumer group", code=_SUBSCRIPTION_GROUP_NOT_EXIST, group=args.group
        )
    queues.sort(key=lambda q: (q.topic, q.broker_name, q.queue_id))
    committed = [q for q in queues if q.consumer_offset >= 0]
    rows = [
        [
            q.topic,
            q.broker_name,
            q.queue_id,
            q.broker_offset,
            q.consumer_offset if q.consumer_offset >= 0 else "-",
            q.lag if q.consumer_offset >= 0 else "-",  # never committed: no lag, as in Kafka
        ]
        for q in queues
    ]
    out.table(["TOPIC", "BROKER", "QUEUE", "BROKER_OFFSET", "CONSUMER_OFFSET", "LAG"], rows)
    out.write(
        f"group {args.group}: consumers online {online}, "
        f"total lag {sum(q.lag for q in committed)}, "
        f"queues never committed {len(queues) - len(committed)}\n"
    )


def message_by_id(target: Target, args: argparse.Namespace, out: Output) -> None:
    for name, client in target.brokers():  # the id names its broker's store host, not its name
        try:
            found = client.query_message(args.message_id)
        except ClientError as exc:
            if exc.code == _QUERY_NOT_FOUND:
                continue
            raise
        _messages(out, [(name, message) for message in found])
        return
    raise ClientError("no stored message has this id", code=_QUERY_NOT_FOUND, id=args.message_id)


def message_by_key(target: Target, args: argparse.Namespace, out: Output) -> None:
    found: list[tuple[str, admin_pb2.StoredMessage]] = []
    for name, client in target.brokers_of_topic(args.topic):
        messages = client.query_message(
            topic=args.topic,
            key=args.key,
            max_count=args.max,
            begin_ms=parse_time_ms(args.since) if args.since else 0,
        )
        found.extend((name, message) for message in messages)
    found.sort(key=lambda item: -item[1].store_timestamp_ms)
    _messages(out, found[: args.max])
    out.write(f"{min(len(found), args.max)} message(s) of topic {args.topic} with key {args.key}\n")


def _messages(out: Output, found: list[tuple[str, admin_pb2.StoredMessage]]) -> None:
    rows = []
    for broker, message in found:
        properties = message.properties
        body = message.body.decode(errors="replace")
        if not out.as_json and len(body) > _BODY_PREVIEW_CHARS:
            body = body[:_BODY_PREVIEW_CHARS] + "..."
        rows.append(
            [
                message.topic,
                broker,
                message.queue_id,
                message.queue_offset,
                message.store_timestamp_ms,
                properties.get("UNIQ_KEY", "-"),
                message.offset_msg_id,
                properties.get("KEYS", "-"),
                properties.get("TAGS", "-"),
                body,
            ]
        )
    out.table(
        [
            "TOPIC", "BROKER", "QUEUE", "OFFSET", "STORE_TIME_MS", "MSG_ID", "OFFSET_MSG_ID",
            "KEYS", "TAGS", "BODY",
        ],
        rows,
    )  # fmt: skip


def offset_reset(target: Target, args: argparse.Namespace, out: Output) -> None:
    if args.time is not None:
        kind, timestamp_ms = "time", parse_time_ms(args.time)
    else:
        kind, timestamp_ms = ("earliest" if args.earliest else "latest"), 0
    rows: list[list[object]] = []
    brokers = target.brokers_of_topic(args.topic)
    with Progress(
        "offset reset", len(brokers), sys.stderr, mode=args.progress,
        interval_ms=args.progress_interval, unit="brokers",
    ) as progress:  # fmt: skip
        for name, client in brokers:
            moved = client.reset_offset(
                args.group, args.topic, kind, timestamp_ms=timestamp_ms, queue_id=args.queue
            )
            rows.extend([name, queue_id, offset] for queue_id, offset in sorted(moved.items()))
            progress.advance()
    out.write(f"reset group {args.group} on topic {args.topic} to {kind}\n")
    out.table(["BROKER", "QUEUE", "OFFSET"], rows)


def cluster_list(target: Target, args: argparse.Namespace, out: Output) -> None:
    rows: list[list[object]] = []
    for cluster in target.clusters():
        for b in cluster.brokers:
            e = b.endpoints
            rows.append(
                [
                    cluster.cluster_name,
                    b.broker_name,
                    e.grpc_address or "-",
                    (e.ipc_channel and f"{e.ipc_channel}/{e.ipc_stream_id}") or "-",
                    (e.udp_channel and f"{e.udp_channel}/{e.udp_stream_id}") or "-",
                    b.topic_count,
                ]
            )
    out.table(["CLUSTER", "BROKER", "GRPC", "IPC", "UDP", "TOPICS"], rows)


def stats(target: Target, args: argparse.Namespace, out: Output) -> None:
    for name, client in target.brokers():
        info = client.broker_stats()
        out.record(
            {
                "broker": name,
                "cluster": info.cluster_name,
                "uptime_ms": info.uptime_ms,
                "topics": info.topic_count,
                "groups": info.group_count,
                "consumers": info.consumer_count,
                "commit_log_min_offset": info.commit_log_min_offset,
                "commit_log_max_offset": info.commit_log_max_offset,
                "commit_log_flushed_offset": info.commit_log_flushed_offset,
                "counters": dict(sorted(info.counters.items())),
            }
        )
        out.write(
            f"broker {name} (cluster {info.cluster_name}): uptime {info.uptime_ms} ms, "
            f"topics {info.topic_count}, groups {info.group_count}, "
            f"consumers {info.consumer_count}, commit log "
            f"[{info.commit_log_min_offset}, {info.commit_log_max_offset}) "
            f"flushed {info.commit_log_flushed_offset}\n"
        )
        if not out.as_json:  # in JSON the counters are in the broker's record
            out.table(["COUNTER", "VALUE"], sorted(info.counters.items()))


def replication(target: Target, args: argparse.Namespace, out: Output) -> None:
    """Each broker group's leader, epoch, ISR and each member's lag (asked of the leader when
    the broker asked is a follower: only the leader knows its followers' progress)."""
    for name, client in target.brokers():
        status = client.broker_stats().replication
        if not status.group:
            out.record({"broker": name, "group": None, "role": "single"})
            out.write(f"broker {name}: group=none role=single (not a broker group)\n")
            continue
        if status.role != "leader" and status.leader_grpc_address:
            leader = target.connect(status.leader_grpc_address)
            status = leader.broker_stats().replication
        _replication(out, status)


def _replication(out: Output, status: admin_pb2.ReplicationStatus) -> None:
    leader = "none" if status.leader_id < 0 else str(status.leader_id)
    isr = ",".join(str(m) for m in status.isr) or "-"
    members = [
        {
            "member": m.member_id,
            "role": ("leader" if m.leader else "follower") if m.live else "down",
            "live": m.live,
            "in_isr": m.in_isr,
            "grpc": m.grpc_address or None,
            "log_end": None if m.log_end_offset < 0 else m.log_end_offset,
            "fsynced": None if m.fsynced_offset < 0 else m.fsynced_offset,
            "lag": None if m.lag_bytes < 0 else m.lag_bytes,
            "last_heard_ms": None if m.last_heard_ms < 0 else m.last_heard_ms,
        }
        for m in status.members
    ]
    out.record(
        {
            "group": status.group,
            "leader": None if status.leader_id < 0 else status.leader_id,
            "leader_grpc": status.leader_grpc_address or None,
            "epoch": status.epoch,
            "isr": list(status.isr),
            "min_isr": status.min_isr,
            "high_watermark": status.high_watermark,
            "log_end": status.log_end_offset,
            "seen_from": status.member_id,
            "members": members,
        }
    )
    out.write(
        f"group={status.group} leader={leader} epoch={status.epoch} isr={isr} "
        f"min_isr={status.min_isr} high_watermark={status.high_watermark} "
        f"log_end={status.log_end_offset} (seen from member {status.member_id}, "
        f"{status.role})\n"
    )
    if not out.as_json:
        columns = ["member", "role", "live", "in_isr", "grpc", "log_end", "fsynced", "lag"]
        rows = [
            ["-" if m[c] is None else ("yes" if m[c] is True else "no" if m[c] is False else m[c])
             for c in columns]
            for m in members
        ]  # fmt: skip
        out.table([c.upper() for c in columns[:-1]] + ["LAG_BYTES"], rows)
