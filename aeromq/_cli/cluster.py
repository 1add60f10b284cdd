"""``aeromq cluster up``: a broker group on this host, run until SIGINT or SIGTERM.

::

    aeromq cluster up --data-dir D [--group-size 3] [--min-isr 2] [--broker-name broker-a]
                      [--grpc-port P] [--rocketmq-port P] [--replication-port P] [--udp-port P]
                      [--etcd-port P] [--lease-ttl 2s] [--no-restart] [-- BROKER OPTIONS...]

It starts etcd (Debian's ``etcd``) and ``--group-size`` broker processes of one group
(:mod:`~aeromq._cli.cluster_runner`: every port distinct, each member's store in
``D/member-<i>``, its output in ``D/logs/member-<i>.log``), relays each member's ``broker
ready:`` line (``pid=``, ``group=``, ``role=``, ``epoch=``, with ``member=`` and ``log=``
added), then prints::

    cluster ready: group=broker-a endpoints=127.0.0.1:P0,127.0.0.1:P1,127.0.0.1:P2 etcd=... leader=0 ...

``endpoints=`` is what clients are given (``--endpoints``, ``Producer(..., endpoints)``). Role
changes (``group role:``) are relayed as they happen. A member that exits is reported
(``member exited: ...``) and started again after a back-off (it rejoins as a follower);
``--no-restart`` leaves it down. At SIGINT or SIGTERM the members are stopped (SIGTERM, SIGKILL
after 15 s), then etcd, and ``cluster stopped`` is printed. Started again on the same ``D``, the
group takes up its data, its etcd state and its ports.

Exit status: 0 stopped cleanly, 1 it could not start (or a member had to be killed), 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from aeromq._cli.cluster_runner import ClusterError, ClusterSpec, LocalCluster
from aeromq._cli.options import command_parser, setup_logging
from aeromq._cli.serve import serve, stop_on_signals

__all__ = ["build_parser", "main"]

_EXAMPLES = (
    "aeromq cluster up --data-dir /tmp/aeromq-cluster",
    "aeromq cluster up --data-dir /var/lib/aeromq/a --grpc-port 8081 --rocketmq-port 8181",
    "aeromq cluster up --data-dir /tmp/g5 --group-size 5 --min-isr 3 -- --flush-interval 200ms",
)
_WAIT_SLICE_S = 0.5


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text}")
    return port


def build_parser() -> argparse.ArgumentParser:
    """The ``aeromq cluster`` parser (also read by the documentation's CLI reference)."""
    parser = command_parser(
        "aeromq cluster",
        "Run a broker group on this host: etcd and a group of broker processes with ports that "
        "do not clash, until SIGINT or SIGTERM.",
        _EXAMPLES,
        default_log_level="INFO",
    )
    actions = parser.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="what to do with the group"
    )
    up = actions.add_parser(
        "up",
        help="start etcd and a broker group, print how clients reach it, run until interrupted",
        description="Start etcd and a broker group; print one 'broker ready:' line per member "
        "and 'cluster ready: endpoints=...'; run until SIGINT or SIGTERM. Options after '--' "
        "go to every broker.",
        epilog="examples:\n" + "\n".join(f"  {e}" for e in _EXAMPLES),
        formatter_class=parser.formatter_class,
    )
    up.add_argument("--data-dir", type=Path, required=True, help="the group's directory")
    up.add_argument("--broker-name", default="broker-a", help="the group's (broker) name")
    up.add_argument("--group-size", type=int, default=3, help="members of the group")
    up.add_argument("--min-isr", type=int, default=2, help="fewest in-sync members a send needs")
    up.add_argument("--host", default="127.0.0.1", help="address every member listens on")
    for name, what in (
        ("grpc", "gRPC port"),
        ("rocketmq", "RocketMQ 5 endpoint's port"),
        ("replication", "replication UDP port"),
        ("udp", "ingress UDP port"),
    ):
        up.add_argument(
            f"--{name}-port",
            type=_port,
            default=0,
            metavar="P",
            help=f"member 0's {what}, member i takes P+i; default: free ports at the first "
            "start, kept in D/cluster.json",
        )
    up.add_argument(
        "--etcd-port",
        type=_port,
        default=0,
        metavar="P",
        help="etcd's client port; default: a free one at the first start, kept",
    )
    up.add_argument(
        "--lease-ttl", default="2s", help="each member's etcd lease (the failover's main part)"
    )
    up.add_argument(
        "--no-restart",
        dest="restart",
        action="store_false",
        help="leave a member that exits down (default: start it again after a back-off)",
    )
    up.add_argument("broker_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def _spec(args: argparse.Namespace) -> ClusterSpec:
    if args.group_size < 1 or not 1 <= args.min_isr <= args.group_size:
        raise ClusterError("need --group-size >= 1 and 1 <= --min-isr <= --group-size")
    extra = list(args.broker_args)
    if extra and extra[0] == "--":
        extra = extra[1:]
    return ClusterSpec(
        data_dir=args.data_dir.resolve(),
        broker_name=args.broker_name,
        group_size=args.group_size,
        min_isr=args.min_isr,
        host=args.host,
        grpc_port=args.grpc_port,
        rocketmq_port=args.rocketmq_port,
        replication_port=args.replication_port,
        udp_port=args.udp_port,
        etcd_port=args.etcd_port,
        lease_ttl=args.lease_ttl,
        restart=args.restart,
        broker_args=tuple(extra),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``aeromq cluster ...`` (see module); returns the exit code."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    setup_logging(args)
    try:
        cluster = LocalCluster(_spec(args))
    except ClusterError as exc:
        print(f"aeromq cluster: {exc}", file=sys.stderr)
        return 2
    with stop_on_signals() as stop:
        try:
            cluster.start(stop)
        except Exception as exc:  # ClusterError, etcd's errors, OSError: said, then exit 1
            print(f"aeromq cluster: cannot start: {exc}", file=sys.stderr)
            return 1
        leader = cluster.leader()
        cluster.say(
            f"cluster ready: group={cluster.spec.broker_name} endpoints={cluster.endpoints} "
            f"etcd={cluster.etcd.endpoint} etcd_pid={cluster.etcd.pid} "
            f"leader={'none' if leader is None else leader.member_id} "
            f"epoch={'0' if leader is None else leader.ready.get('epoch', '0')} "
            f"min_isr={cluster.spec.min_isr} data_dir={cluster.spec.data_dir}"
        )
        cluster.watch()
        try:
            serve(stop, _WAIT_SLICE_S)
        finally:
            cluster.say("cluster stopping: members first, then etcd")
            clean = cluster.stop()
    cluster.say("cluster stopped")
    return 0 if clean else 1
