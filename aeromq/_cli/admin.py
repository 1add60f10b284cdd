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
    message id MESSAGE_ID                         the stored message of an offset message id
    message key TOPIC KEY [--max N] [--since WHEN]  messages with a key (KEYS or UNIQ_KEY)
    dlq list                                      every group's dead-letter queue and its size
    dlq browse GROUP [--offset N] [--max N]       a group's dead letters and their first topic
    dlq resend GROUP --offset N [--all] [--on-broker NAME]  back to the topic they came from
    cluster list
    replication                                   each broker group's leader, epoch, ISR, lag
    stats

``--endpoints`` defaults to ``$AEROMQ_ENDPOINTS``, else 127.0.0.1:8081 (the old ``--server``
still works); of several (a broker group's members, as ``aeromq cluster up`` prints them) the
first that answers is used, and a command a group's follower refuses (``NOT_LEADER``) is run
on the leader it names. The server is a name server or a broker: ``--namesrv`` / ``--broker`` say which,
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
remote administrator would. Its commands are in :mod:`~aeromq._cli.admin_commands`, what they run
against and how they print in :mod:`~aeromq._cli.admin_target`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from aeromq._cli.admin_commands import (
    PERMS,
    cluster_list,
    group_list,
    group_progress,
    message_by_id,
    message_by_key,
    offset_reset,
    replication,
    stats,
    topic_create,
    topic_delete,
    topic_list,
    topic_route,
    topic_update,
)
from aeromq._cli.admin_dlq import dlq_browse, dlq_list, dlq_resend
from aeromq._cli.admin_target import Output, Target, UsageError
from aeromq._cli.options import (
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
from aeromq._cli.progress import add_progress
from aeromq.common import ClientError, NotLeaderError, TopicNotFoundError

__all__ = ["build_parser", "main"]


Command = Callable[[Target, argparse.Namespace, Output], None]


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
    description: str | None = None,
) -> argparse.ArgumentParser:
    """An action of a section (``topic list``), or a command with no action (``stats``) when
    ``actions`` are the sections; it takes ``--json`` too."""
    parser = actions.add_parser(
        name,
        help=help_,
        description=description or help_,
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
    add_endpoints(
        parser, "broker or name server (the first that answers is used)", aliases=["--server"]
    )
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
        topic_create,
        ["aeromq admin topic create orders --queues 8", "aeromq admin topic create audit --perm r"],
    )
    _queue_options(create, "default: the broker's default_queue_count")
    create.add_argument(
        "--perm", default="rw", choices=sorted(PERMS), help="permission: rw, r or w"
    )
    create.add_argument("--order", action="store_true", help="an ordered topic")
    create.add_argument(
        "--cluster", default=None, help="through a name server: only this cluster's brokers"
    )
    update = _command(
        topic,
        "update",
        "change a topic's queue counts, permission or order flag on every broker that has it",
        topic_update,
        [
            "aeromq admin topic update orders --queues 16",
            "aeromq admin topic update orders --perm r",
        ],
    )
    _queue_options(update, "default: unchanged")
    update.add_argument(
        "--perm", default=None, choices=sorted(PERMS), help="permission; default: unchanged"
    )
    update.add_argument(
        "--order",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="ordered or not; default: unchanged",
    )
    _command(topic, "list", "list every topic", topic_list, ["aeromq admin topic list"])
    delete = _command(
        topic,
        "delete",
        "delete a topic from every broker that has it",
        topic_delete,
        ["aeromq admin topic delete orders"],
    )
    delete.add_argument("topic", help="the topic name")
    route = _command(
        topic,
        "route",
        "show which brokers serve a topic and how to reach them",
        topic_route,
        ["aeromq admin topic route orders"],
    )
    route.add_argument("topic", help="the topic name")

    group = _section(sections, "group", "list consumer groups; show a group's progress")
    _command(group, "list", "list consumer groups", group_list, ["aeromq admin group list --json"])
    progress = _command(
        group,
        "progress",
        "per queue: broker offset, committed offset and lag ('-' where never committed)",
        group_progress,
        [
            "aeromq admin group progress billing",
            "aeromq admin group progress billing --topic orders",
        ],
    )
    progress.add_argument("group", help="the consumer group")
    progress.add_argument("--topic", default=None, help="only this topic; default: every topic")

    message = _section(sections, "message", "look up stored messages by id or by key")
    by_id = _command(
        message,
        "id",
        "the stored message of an offset message id (a SendResult's offset_msg_id)",
        message_by_id,
        ["aeromq admin message id 7F00000100002A9F0000000000001A40"],
    )
    by_id.add_argument("message_id", help="an offset message id: 32 hex digits")
    by_key = _command(
        message,
        "key",
        "the messages of a topic with a key (among their KEYS, or as their UNIQ_KEY), newest first",
        message_by_key,
        [
            "aeromq admin message key orders order-42",
            "aeromq admin message key orders order-42 --since 2026-01-31T12:00:00+00:00",
        ],
    )
    by_key.add_argument("topic", help="the topic")
    by_key.add_argument("key", help="a key the producer gave, or a message's unique id")
    by_key.add_argument("--max", type=int, default=32, help="at most this many (default: 32)")
    by_key.add_argument(
        "--since",
        default=None,
        metavar="WHEN",
        help="only messages stored at or after WHEN: epoch ms or ISO 8601 (default: any time)",
    )

    dlq = _section(sections, "dlq", "list, browse and re-send consumer groups' dead letters")
    _command(dlq, "list", "every group's dead-letter queue and its size", dlq_list,
             ["aeromq admin dlq list"])  # fmt: skip
    browse = _command(dlq, "browse", "a group's dead letters, each with its first topic",
                      dlq_browse, ["aeromq admin dlq browse billing --offset 0 --max 10"])  # fmt: skip
    resend = _command(dlq, "resend", "put dead letters back on the topic each came from",
                      dlq_resend, ["aeromq admin dlq resend billing --offset 3",
                                   "aeromq admin dlq resend billing --offset 0 --all"])  # fmt: skip
    for parser_ in (browse, resend):
        parser_.add_argument("group", help="the consumer group")
        parser_.add_argument("--offset", type=int, default=0, help="the first offset (default 0)")
    browse.add_argument("--max", type=int, default=32, help="at most this many (default: 32)")
    resend.add_argument("--all", action="store_true", help="every one from --offset on")
    resend.add_argument("--on-broker", dest="broker", default=None, help="only on this broker")

    offset = _section(sections, "offset", "move a group's committed offsets")
    reset = _command(
        offset,
        "reset",
        "reset a group's committed offsets of a topic (stop its consumers first)",
        offset_reset,
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
    add_progress(reset)

    cluster = _section(sections, "cluster", "list clusters and their brokers")
    _command(
        cluster,
        "list",
        "list clusters, brokers and their endpoints",
        cluster_list,
        ["aeromq admin cluster list"],
    )
    _command(
        sections,
        "replication",
        "each broker group's leader, epoch, ISR and each member's lag",
        replication,
        [
            "aeromq admin --endpoints 127.0.0.1:8081,127.0.0.1:8082 replication",
            "aeromq admin replication --json",
        ],
        "each broker group's leader, epoch, ISR and each member's log end, fsynced offset and "
        "lag behind the leader (a single broker shows group=none)",
    )
    _command(
        sections,
        "stats",
        "each broker's uptime, counts, commit log offsets and counters",
        stats,
        ["aeromq admin stats", "aeromq admin stats --json"],
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
    target: Target | None = None
    endpoints = split_endpoints(args.endpoints)
    if not endpoints:
        print("aeromq admin: --endpoints is empty", file=sys.stderr)
        return 2
    try:
        address = endpoints[0] if len(endpoints) == 1 else _answering(endpoints, args.timeout)
        target = Target(address, args.kind, args.timeout / 1000)
        try:
            run(target, args, Output(stdout, args.json))
        except NotLeaderError as exc:  # a group's follower: nothing was done; the leader does it
            leader = exc.values.get("leader_address")
            if not isinstance(leader, str) or not leader or target.is_namesrv:
                raise
            target.close()
            target = Target(leader, "broker", args.timeout / 1000)
            run(target, args, Output(stdout, args.json))
    except UsageError as exc:
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


def _answering(endpoints: Sequence[str], timeout_ms: float) -> str:
    """The first of ``endpoints`` whose gRPC port answers (the last when none does: its error
    is then the command's)."""
    from aeromq.client import GrpcClient

    for address in endpoints[:-1]:
        with GrpcClient(address, timeout_s=timeout_ms / 1000) as client:
            try:
                client.wait_ready(min(timeout_ms / 1000, 2.0))
            except ClientError:
                continue
            return address
    return endpoints[-1]
