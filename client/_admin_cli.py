"""``aeromq admin``: manage topics, groups and offsets of a broker or of every broker behind a
name server (RocketMQ's ``mqadmin``).

::

    aeromq admin [--endpoints HOST:PORT] [--namesrv | --broker] [--timeout DURATION] [--json]
                 COMMAND ...

    topic create TOPIC [--queues N | --read-queues N --write-queues N] [--perm rw|r|w]
                       [--order] [--cluster NAME]
    topic update TOPIC [--queues N | --read-queues N --write-queues N] [--perm rw|r|w]
                       [--order | --no-order]
    topic list
    topic delete TOPIC
    topic route TOPIC
    group list
    group progress GROUP [--topic TOPIC]           a lag table per queue, with the total
    offset reset GROUP TOPIC (--earliest | --latest | --time WHEN) [--queue Q]
    cluster list
    stats

``--endpoints`` defaults to ``$AEROMQ_ENDPOINTS``, else 127.0.0.1:8081 (the old ``--server``
still works). The server is a name server or a broker: ``--namesrv`` / ``--broker`` say which,
otherwise the tool asks. Against a name server, a command runs on every broker concerned
(``topic create`` on every broker of the cluster, or of all clusters; ``group progress`` merges
every broker's queues). ``WHEN`` is epoch milliseconds or an ISO 8601 time
(``2026-01-31T12:00:00+00:00``; no zone: local time). ``--json`` prints each table row as one
JSON object per line (keys: the column names in lower case) and nothing else. In ``group
progress`` a queue the group never committed shows ``-`` as its consumer offset and its lag, as
Kafka does, and counts in no total.

Exit status: 0 done, 1 the server refused or could not be reached (the message says why), 2
bad usage.

A client tool: it speaks to the servers over gRPC only (:class:`~client.GrpcClient`), as any
remote administrator would, so it lives on the client side.
"""

from __future__ import annotations

import argparse
import json
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
from aeromq.transport.tools.cli import (
    HelpFormatter,
    add_alias,
    add_endpoints,
    add_json,
    command_parser,
    duration_ms,
    seconds_as_ms,
    setup_logging,
    split_endpoints,
)

__all__ = ["main"]

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


class _Output:
    """Tables and notes as text, or each table row as a JSON object (notes dropped)."""

    def __init__(self, stream: TextIO, as_json: bool) -> None:
        self.stream = stream
        self.as_json = as_json

    def write(self, text: str) -> None:
        """A note for a person (``created topic T``); not part of ``--json`` output."""
        if not self.as_json:
            self.stream.write(text)

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        if self.as_json:
            keys = [h.lower() for h in headers]
            for row in rows:
                values = [None if c == "-" else c for c in row]
                self.stream.write(json.dumps(dict(zip(keys, values, strict=True))) + "\n")
        else:
            _table(self.stream, headers, rows)

    def record(self, record: dict[str, object]) -> None:
        """One JSON object (``--json`` only)."""
        if self.as_json:
            self.stream.write(json.dumps(record, sort_keys=True) + "\n")


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


def _topic_create(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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
    out.table(["BROKER", "TOPIC", "READ", "WRITE"], rows)


def _topic_update(target: _Target, args: argparse.Namespace, out: _Output) -> None:
    if args.perm is not None and args.perm not in _PERMS:
        raise _UsageError(f"--perm must be one of {', '.join(_PERMS)}: value={args.perm!r}")
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
            perm=current.perm if args.perm is None else _PERMS[args.perm],
            order=current.order if args.order is None else args.order,
        )
        stored = client.update_topic(config)
        rows.append(
            [
                name,
                stored.topic_name,
                stored.read_queue_nums,
                stored.write_queue_nums,
                _perm_text(stored.perm),
                stored.order,
            ]
        )
    out.write(f"updated topic {args.topic}\n")
    out.table(["BROKER", "TOPIC", "READ", "WRITE", "PERM", "ORDER"], rows)


def _topic_list(target: _Target, args: argparse.Namespace, out: _Output) -> None:
    topics = target.client.list_topics(namesrv=target.is_namesrv)
    out.table(
        ["TOPIC", "READ", "WRITE", "PERM", "ORDER"],
        [
            [t.topic_name, t.read_queue_nums, t.write_queue_nums, _perm_text(t.perm), t.order]
            for t in topics
        ],
    )


def _topic_delete(target: _Target, args: argparse.Namespace, out: _Output) -> None:
    for name, client in target.brokers_of_topic(args.topic):
        client.delete_topic(args.topic)
        out.write(f"deleted topic {args.topic} on {name}\n")


def _topic_route(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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
    out.table(["BROKER", "READ", "WRITE", "PERM", "GRPC", "INGRESS"], rows)


def _group_list(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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


def _group_progress(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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


def _offset_reset(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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
    out.table(["BROKER", "QUEUE", "OFFSET"], rows)


def _cluster_list(target: _Target, args: argparse.Namespace, out: _Output) -> None:
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


def _stats(target: _Target, args: argparse.Namespace, out: _Output) -> None:
    for name, client in target.brokers():
        stats = client.broker_stats()
        out.record(
            {
                "broker": name,
                "cluster": stats.cluster_name,
                "uptime_ms": stats.uptime_ms,
                "topics": stats.topic_count,
                "groups": stats.group_count,
                "consumers": stats.consumer_count,
                "commit_log_min_offset": stats.commit_log_min_offset,
                "commit_log_max_offset": stats.commit_log_max_offset,
                "commit_log_flushed_offset": stats.commit_log_flushed_offset,
                "counters": dict(sorted(stats.counters.items())),
            }
        )
        out.write(
            f"broker {name} (cluster {stats.cluster_name}): uptime {stats.uptime_ms} ms, "
            f"topics {stats.topic_count}, groups {stats.group_count}, "
            f"consumers {stats.consumer_count}, commit log "
            f"[{stats.commit_log_min_offset}, {stats.commit_log_max_offset}) "
            f"flushed {stats.commit_log_flushed_offset}\n"
        )
        out.table(["COUNTER", "VALUE"], sorted(stats.counters.items()))


# -- parsing -----------------------------------------------------------------------------------

Command = Callable[[_Target, argparse.Namespace, _Output], None]


_EXAMPLES = (
    "aeromq admin topic create orders --queues 8",
    "aeromq admin topic list --json",
    "aeromq admin group progress billing --topic orders",
    "aeromq admin offset reset billing orders --time 2026-01-31T12:00:00+00:00",
    "aeromq admin --endpoints 127.0.0.1:9876 --namesrv cluster list",
)


def _section(
    sections: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help_: str
) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    parser = sections.add_parser(name, help=help_, description=help_, formatter_class=HelpFormatter)
    return parser.add_subparsers(
        dest="action", required=True, metavar="ACTION", help=f"what to do with {name}s"
    )


def _command(
    actions: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help_: str,
    run: Command,
    examples: Sequence[str],
) -> argparse.ArgumentParser:
    parser = actions.add_parser(
        name,
        help=help_,
        description=help_,
        epilog="examples:\n" + "\n".join(f"  {e}" for e in examples),
        formatter_class=HelpFormatter,
    )
    parser.set_defaults(run=run)
    parser.add_argument(  # also here, so `... topic list --json` works as `--json topic list`
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print one JSON object per line instead of text",
    )
    return parser


def _queue_options(parser: argparse.ArgumentParser, default_help: str) -> None:
    parser.add_argument("topic", help="the topic name")
    parser.add_argument(
        "--queues", type=int, default=None, help=f"read and write queue count; {default_help}"
    )
    parser.add_argument(
        "--read-queues", type=int, default=None, help="read queue count (overrides --queues)"
    )
    parser.add_argument(
        "--write-queues", type=int, default=None, help="write queue count (overrides --queues)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq admin`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq admin",
        "Manage topics, groups, offsets and clusters of a broker or of every broker behind a "
        "name server.",
        _EXAMPLES,
        exit_on_error=False,
    )
    add_endpoints(parser, "broker or name server (only the first is used)", aliases=["--server"])
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--namesrv",
        dest="kind",
        action="store_const",
        const="namesrv",
        help="the endpoint is a name server (default: ask it)",
    )
    kind.add_argument(
        "--broker",
        dest="kind",
        action="store_const",
        const="broker",
        help="the endpoint is a broker (default: ask it)",
    )
    parser.add_argument(
        "--timeout",
        type=duration_ms,
        default=5_000.0,
        metavar="DURATION",
        help="timeout of each call, e.g. 500ms, 5s; default 5s",
    )
    add_alias(parser, "--timeout-s", "timeout", seconds_as_ms)
    add_json(parser)
    sections = parser.add_subparsers(
        dest="section", required=True, metavar="COMMAND", help="what to manage"
    )

    topic = _section(sections, "topic", "create, update, list, delete topics; show routes")
    create = _command(
        topic,
        "create",
        "create a topic (on every broker of the cluster through a name server)",
        _topic_create,
        ["aeromq admin topic create orders --queues 8", "aeromq admin topic create audit --perm r"],
    )
    _queue_options(create, "default: the broker's default_queue_count")
    create.add_argument(
        "--perm", default="rw", choices=sorted(_PERMS), help="permission: rw, r or w"
    )
    create.add_argument("--order", action="store_true", help="an ordered topic")
    create.add_argument(
        "--cluster", default=None, help="through a name server: only this cluster's brokers"
    )
    update = _command(
        topic,
        "update",
        "change a topic's queue counts, permission or order flag on every broker that has it",
        _topic_update,
        [
            "aeromq admin topic update orders --queues 16",
            "aeromq admin topic update orders --perm r",
        ],
    )
    _queue_options(update, "default: unchanged")
    update.add_argument(
        "--perm", default=None, choices=sorted(_PERMS), help="permission; default: unchanged"
    )
    update.add_argument(
        "--order",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ordered or not; default: unchanged",
    )
    _command(topic, "list", "list every topic", _topic_list, ["aeromq admin topic list"])
    delete = _command(
        topic,
        "delete",
        "delete a topic from every broker that has it",
        _topic_delete,
        ["aeromq admin topic delete orders"],
    )
    delete.add_argument("topic", help="the topic name")
    route = _command(
        topic,
        "route",
        "show which brokers serve a topic and how to reach them",
        _topic_route,
        ["aeromq admin topic route orders"],
    )
    route.add_argument("topic", help="the topic name")

    group = _section(sections, "group", "list consumer groups; show a group's progress")
    _command(group, "list", "list consumer groups", _group_list, ["aeromq admin group list --json"])
    progress = _command(
        group,
        "progress",
        "per queue: broker offset, committed offset and lag ('-' where never committed)",
        _group_progress,
        [
            "aeromq admin group progress billing",
            "aeromq admin group progress billing --topic orders",
        ],
    )
    progress.add_argument("group", help="the consumer group")
    progress.add_argument("--topic", default=None, help="only this topic; default: every topic")

    offset = _section(sections, "offset", "move a group's committed offsets")
    reset = _command(
        offset,
        "reset",
        "reset a group's committed offsets of a topic (stop its consumers first)",
        _offset_reset,
        [
            "aeromq admin offset reset billing orders --earliest",
            "aeromq admin offset reset billing orders --time 1767225600000 --queue 3",
        ],
    )
    reset.add_argument("group", help="the consumer group")
    reset.add_argument("topic", help="the topic")
    where = reset.add_mutually_exclusive_group(required=True)
    where.add_argument("--earliest", action="store_true", help="to each queue's first offset")
    where.add_argument("--latest", action="store_true", help="to each queue's end")
    where.add_argument(
        "--time",
        default=None,
        metavar="WHEN",
        help="to the first message stored at or after WHEN: epoch ms or ISO 8601",
    )
    reset.add_argument("--queue", type=int, default=-1, help="only this queue id (-1: all)")

    cluster = _section(sections, "cluster", "list clusters and their brokers")
    _command(
        cluster,
        "list",
        "list clusters, brokers and their endpoints",
        _cluster_list,
        ["aeromq admin cluster list"],
    )
    stats = sections.add_parser(
        "stats",
        help="each broker's uptime, counts, commit log offsets and counters",
        description="each broker's uptime, counts, commit log offsets and counters",
        epilog="examples:\n  aeromq admin stats\n  aeromq admin stats --json",
        formatter_class=HelpFormatter,
    )
    stats.set_defaults(run=_stats)
    stats.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print one JSON object per line instead of text",
    )
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    stdout = out or sys.stdout
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
    except argparse.ArgumentError as exc:
        print(f"aeromq admin: {exc}\n{parser.format_usage()}", file=sys.stderr, end="")
        return 2
    except SystemExit as exc:  # --help (0) or a usage error argparse reported itself (2)
        return exc.code if isinstance(exc.code, int) else 2
    setup_logging(args)
    run: Command = args.run
    target: _Target | None = None
    endpoints = split_endpoints(args.endpoints)
    if not endpoints:
        print("aeromq admin: --endpoints is empty", file=sys.stderr)
        return 2
    try:
        target = _Target(endpoints[0], args.kind, args.timeout / 1000)
        run(target, args, _Output(stdout, args.json))
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
