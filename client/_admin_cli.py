"""``aeromq admin``: manage topics, groups and offsets of a broker or of every broker behind a
name server (RocketMQ's ``mqadmin``).

::

    aeromq admin [--server HOST:PORT] [--namesrv | --broker] [--timeout-s S] COMMAND ...

    topic create TOPIC [--queues N | --read-queues N --write-queues N] [--perm rw|r|w]
                       [--order] [--cluster NAME]
    topic list
    topic delete TOPIC
    topic route TOPIC
    group list
    group progress GROUP [--topic TOPIC]           a lag table per queue, with the total
    offset reset GROUP TOPIC (--earliest | --latest | --time WHEN) [--queue Q]
    cluster list
    stats

``--server`` defaults to ``AEROMQ_ADMIN_SERVER`` or 127.0.0.1:8081. The server is a name
server or a broker: ``--namesrv`` / ``--broker`` say which, otherwise the tool asks. Against a
name server, a command runs on every broker concerned (``topic create`` on every broker of the
cluster, or of all clusters; ``group progress`` merges every broker's queues). ``WHEN`` is epoch
milliseconds or an ISO 8601 time (``2026-01-31T12:00:00+00:00``; no zone: local time).

Exit status: 0 done, 1 the server refused or could not be reached (the message says why), 2
bad usage.

A client tool: it speaks to the servers over gRPC only (:class:`~client.GrpcClient`), as any
remote administrator would, so it lives on the client side.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TextIO

from aeromq.client.grpc_client import GrpcClient
from aeromq.common import (
    PERM_READ,
    PERM_READ_WRITE,
    PERM_WRITE,
    ClientError,
    NotSupportedError,
    ResponseCode,
    TopicNotFoundError,
)
from aeromq.proto import admin_pb2, common_pb2

__all__ = ["main"]

_DEFAULT_SERVER = "127.0.0.1:8081"
_PERMS = {"rw": PERM_READ_WRITE, "r": PERM_READ, "w": PERM_WRITE}
_SUBSCRIPTION_GROUP_NOT_EXIST = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class _UsageError(Exception):
    pass


class _Target:
    """The server the command runs against and, through a name server, its brokers."""

    def __init__(self, address: str, kind: str | None, timeout_s: float) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self.client = GrpcClient(address, timeout_s=timeout_s)
        self._brokers: dict[str, GrpcClient] = {}
        if kind is None:
            try:
                self.client.list_clusters(namesrv=True)
                kind = "namesrv"
            except NotSupportedError:
                kind = "broker"
        self.is_namesrv = kind == "namesrv"

    def close(self) -> None:
        self.client.close()
        for client in self._brokers.values():
            client.close()

    def clusters(self) -> list[common_pb2.ClusterInfo]:
        return self.client.list_clusters(namesrv=self.is_namesrv)

    def brokers(self, cluster: str | None = None) -> list[tuple[str, GrpcClient]]:
        """(broker name, client) of every broker concerned, sorted by name."""
        if not self.is_namesrv:
            name = self.client.list_clusters()[0].brokers[0].broker_name
            return [(name, self.client)]
        found: list[tuple[str, GrpcClient]] = []
        for info in self.clusters():
            if cluster is not None and info.cluster_name != cluster:
                continue
            for broker in info.brokers:
                found.append((broker.broker_name, self._broker(broker.endpoints.grpc_address)))
        return sorted(found, key=lambda pair: pair[0])

    def brokers_of_topic(self, topic: str) -> list[tuple[str, GrpcClient]]:
        if not self.is_namesrv:
            self.client.query_route(topic)  # TopicNotFoundError if the broker lacks it
            return self.brokers()
        route = self.client.query_route(topic, namesrv=True)
        return [
            (b.broker_name, self._broker(b.endpoints.grpc_address))
            for b in sorted(route.broker_datas, key=lambda b: b.broker_name)
        ]

    def _broker(self, address: str) -> GrpcClient:
        found = self._brokers.get(address)
        if found is None:
            found = self._brokers[address] = GrpcClient(address, timeout_s=self.timeout_s)
        return found


def _table(out: TextIO, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _perm_text(perm: int) -> str:
    return ("r" if perm & 0x4 else "-") + ("w" if perm & 0x2 else "-")


def _parse_time_ms(text: str) -> int:
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError as exc:
        raise _UsageError(f"--time must be epoch milliseconds or ISO 8601: value={text!r}") from exc


# -- commands ----------------------------------------------------------------------------------


def _topic_create(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    read = args.read_queues if args.read_queues is not None else args.queues
    write = args.write_queues if args.write_queues is not None else args.queues
    if args.perm not in _PERMS:
        raise _UsageError(f"--perm must be one of {', '.join(_PERMS)}: value={args.perm!r}")
    brokers = target.brokers(args.cluster)
    if not brokers:
        raise _UsageError("no broker to create the topic on (is any registered?)")
    rows: list[list[object]] = []
    for name, client in brokers:
        config = client.create_topic(
            args.topic,
            read_queue_nums=read or 0,
            write_queue_nums=write or 0,
            perm=_PERMS[args.perm],
            order=args.order,
        )
        rows.append([name, config.topic_name, config.read_queue_nums, config.write_queue_nums])
    out.write(f"created topic {args.topic}\n")
    _table(out, ["BROKER", "TOPIC", "READ", "WRITE"], rows)


def _topic_list(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    topics = target.client.list_topics(namesrv=target.is_namesrv)
    _table(
        out,
        ["TOPIC", "READ", "WRITE", "PERM", "ORDER"],
        [
            [t.topic_name, t.read_queue_nums, t.write_queue_nums, _perm_text(t.perm), t.order]
            for t in topics
        ],
    )


def _topic_delete(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    for name, client in target.brokers_of_topic(args.topic):
        client.delete_topic(args.topic)
        out.write(f"deleted topic {args.topic} on {name}\n")


def _topic_route(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
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
                _perm_text(q.perm),
                e.grpc_address,
                ingress,
            ]
        )
    _table(out, ["BROKER", "READ", "WRITE", "PERM", "GRPC", "INGRESS"], rows)


def _group_list(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    merged: dict[str, tuple[set[str], int, admin_pb2.MessageModel.ValueType]] = {}
    for _name, client in target.brokers():
        for group in client.list_groups():
            topics, count, model = merged.get(group.consumer_group, (set(), 0, group.message_model))
            topics.update(group.topics)
            merged[group.consumer_group] = (topics, max(count, group.consumer_count), model)
    _table(
        out,
        ["GROUP", "CONSUMERS", "MODEL", "TOPICS"],
        [
            [g, count, admin_pb2.MessageModel.Name(model), ",".join(sorted(topics)) or "-"]
            for g, (topics, count, model) in sorted(merged.items())
        ],
    )


def _group_progress(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
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
    rows = [
        [
            q.topic,
            q.broker_name,
            q.queue_id,
            q.broker_offset,
            q.consumer_offset if q.consumer_offset >= 0 else "-",
            q.lag,
        ]
        for q in queues
    ]
    _table(out, ["TOPIC", "BROKER", "QUEUE", "BROKER_OFFSET", "CONSUMER_OFFSET", "LAG"], rows)
    out.write(
        f"group {args.group}: consumers online {online}, total lag {sum(q.lag for q in queues)}\n"
    )


def _offset_reset(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    if args.time is not None:
        kind, timestamp_ms = "time", _parse_time_ms(args.time)
    else:
        kind, timestamp_ms = ("earliest" if args.earliest else "latest"), 0
    rows: list[list[object]] = []
    for name, client in target.brokers_of_topic(args.topic):
        moved = client.reset_offset(
            args.group, args.topic, kind, timestamp_ms=timestamp_ms, queue_id=args.queue
        )
        rows.extend([name, queue_id, offset] for queue_id, offset in sorted(moved.items()))
    out.write(f"reset group {args.group} on topic {args.topic} to {kind}\n")
    _table(out, ["BROKER", "QUEUE", "OFFSET"], rows)


def _cluster_list(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
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
    _table(out, ["CLUSTER", "BROKER", "GRPC", "IPC", "UDP", "TOPICS"], rows)


def _stats(target: _Target, args: argparse.Namespace, out: TextIO) -> None:
    for name, client in target.brokers():
        stats = client.broker_stats()
        out.write(
            f"broker {name} (cluster {stats.cluster_name}): uptime {stats.uptime_ms} ms, "
            f"topics {stats.topic_count}, groups {stats.group_count}, "
            f"consumers {stats.consumer_count}, commit log "
            f"[{stats.commit_log_min_offset}, {stats.commit_log_max_offset}) "
            f"flushed {stats.commit_log_flushed_offset}\n"
        )
        _table(out, ["COUNTER", "VALUE"], sorted(stats.counters.items()))


# -- parsing -----------------------------------------------------------------------------------

Command = Callable[[_Target, argparse.Namespace, TextIO], None]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aeromq admin", description="manage topics, groups and offsets", exit_on_error=False
    )
    parser.add_argument("--server", default=os.environ.get("AEROMQ_ADMIN_SERVER", _DEFAULT_SERVER))
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--namesrv", dest="kind", action="store_const", const="namesrv")
    kind.add_argument("--broker", dest="kind", action="store_const", const="broker")
    parser.add_argument("--timeout-s", type=float, default=5.0)
    sections = parser.add_subparsers(dest="section", required=True)

    topic = sections.add_parser("topic").add_subparsers(dest="action", required=True)
    create = topic.add_parser("create")
    create.add_argument("topic")
    create.add_argument("--queues", type=int, default=None)
    create.add_argument("--read-queues", type=int, default=None)
    create.add_argument("--write-queues", type=int, default=None)
    create.add_argument("--perm", default="rw")
    create.add_argument("--order", action="store_true")
    create.add_argument("--cluster", default=None)
    create.set_defaults(run=_topic_create)
    topic.add_parser("list").set_defaults(run=_topic_list)
    delete = topic.add_parser("delete")
    delete.add_argument("topic")
    delete.set_defaults(run=_topic_delete)
    route = topic.add_parser("route")
    route.add_argument("topic")
    route.set_defaults(run=_topic_route)

    group = sections.add_parser("group").add_subparsers(dest="action", required=True)
    group.add_parser("list").set_defaults(run=_group_list)
    progress = group.add_parser("progress")
    progress.add_argument("group")
    progress.add_argument("--topic", default=None)
    progress.set_defaults(run=_group_progress)

    offset = sections.add_parser("offset").add_subparsers(dest="action", required=True)
    reset = offset.add_parser("reset")
    reset.add_argument("group")
    reset.add_argument("topic")
    where = reset.add_mutually_exclusive_group(required=True)
    where.add_argument("--earliest", action="store_true")
    where.add_argument("--latest", action="store_true")
    where.add_argument("--time", default=None)
    reset.add_argument("--queue", type=int, default=-1)
    reset.set_defaults(run=_offset_reset)

    cluster = sections.add_parser("cluster").add_subparsers(dest="action", required=True)
    cluster.add_parser("list").set_defaults(run=_cluster_list)
    sections.add_parser("stats").set_defaults(run=_stats)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    stdout = out or sys.stdout
    parser = _parser()
    try:
        args = parser.parse_args(args_list)
    except argparse.ArgumentError as exc:
        print(f"aeromq admin: {exc}\n{parser.format_usage()}", file=sys.stderr, end="")
        return 2
    except SystemExit as exc:  # --help (0) or a usage error argparse reported itself (2)
        return exc.code if isinstance(exc.code, int) else 2
    run: Command = args.run
    target: _Target | None = None
    try:
        target = _Target(args.server, args.kind, args.timeout_s)
        run(target, args, stdout)
    except _UsageError as exc:
        print(f"aeromq admin: {exc}", file=sys.stderr)
        return 2
    except TopicNotFoundError as exc:
        print(f"aeromq admin: no such topic: {exc}", file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f"aeromq admin: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if target is not None:
            target.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
