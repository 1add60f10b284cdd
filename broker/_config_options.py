"""The names a broker setting goes by outside Python, and its command-line options.

A field of ``BrokerConfig`` is the option :func:`option_name` (``grpc_port`` -> ``--grpc-port``;
a duration without its ``_ms``: ``--flush-interval``), the environment variable
:data:`ENV_PREFIX` plus its name upper-cased, and the key of the same name in the TOML file;
:data:`FIELD_HELP` says what each means. :func:`add_options` adds ``--config`` and one option per
field to a parser.

Caller: ``broker.config`` (``add_arguments`` binds :func:`add_options` to ``BrokerConfig``'s
fields and defaults, and re-exports these names for the CLI and the documentation's
configuration reference) and ``broker._config_sources`` (the origin of each value). It knows no
config class: the fields come as arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Final

__all__ = [
    "CONFIG_ENV",
    "ENV_PREFIX",
    "FIELD_HELP",
    "add_options",
    "is_duration",
    "option_name",
]

ENV_PREFIX: Final = "AEROMQ_BROKER_"
CONFIG_ENV: Final = "AEROMQ_BROKER_CONFIG"
"""The variable naming the TOML file (``--config`` on the command line)."""

FIELD_HELP: Final[Mapping[str, str]] = {
    "broker_name": "this broker's name, unique in its cluster (1-127 of a-zA-Z0-9_-)",
    "cluster_name": "the cluster it belongs to",
    "data_dir": "directory of the store: commit log, consume queues, index, offsets, topics",
    "grpc_host": "address the gRPC control plane listens on",
    "grpc_port": "gRPC port (0: any free port, printed in the ready line)",
    "namesrv_address": "HOST:PORT of a name server to register with (none: serve routes alone)",
    "aeron_dir": "directory of an external media driver to use (none: run one embedded)",
    "ingress_ipc_channel": "the IPC channel clients on this host send requests to",
    "ingress_ipc_stream_id": "stream id of the IPC ingress",
    "ingress_udp_endpoint": "HOST:PORT of the UDP ingress for remote clients (none: IPC only)",
    "ingress_udp_stream_id": "stream id of the UDP ingress",
    "flush_mode": "ASYNC (acknowledge once written, flush on a timer) or SYNC (once flushed)",
    "flush_interval_ms": "how often ASYNC mode flushes the commit log to disk",
    "flush_index_interval_ms": "how often the key index is flushed to disk (an unclean start re-indexes since)",
    "sync_flush_timeout_ms": "how long a SYNC send waits for its flush before it fails",
    "auto_create_topic": "create a topic on its first send (default_queue_count queues)",
    "default_queue_count": "queue count of a topic created without one",
    "max_message_size": "largest message body accepted, bytes",
    "long_polling_max_suspend_ms": "longest a pull waits for new messages (long polling)",
    "session_timeout_ms": "a silent transport session is closed after this long",
    "client_heartbeat_timeout_ms": "a consumer that stops heartbeating leaves its group after",
    "namesrv_heartbeat_interval_ms": "how often the broker registers with its name server",
    "commit_log_segment_bytes": "size of one commit log file, bytes",
    "consume_queue_entries_per_segment": "entries per consume queue file (20 bytes each)",
    "file_reserved_time_ms": "retention: commit log files older than this are deleted",
    "max_store_bytes": "retention: oldest files are deleted past this store size (none: no cap)",
    "local_reads_enabled": "let readers on this host that ask for it (the Spark connector) read "
    "pulled batches straight from the commit log's files (IPC sessions; the reader falls back "
    "to pulls through the transport when it cannot open them)",
    "index_enabled": "keep the message index (lookup by key and unique id)",
    "index_slots": "hash slots of one index file",
    "index_entries": "entries of one index file",
    "offset_persist_interval_ms": "how often consumer offsets are written to disk",
    "timer_enabled": "hold timer and delayed messages (TIMER_DELIVER_MS, TIMER_DELAY_SEC, DELAY) "
    "until they are due (off: they are stored and delivered at once)",
    "timer_max_delay_ms": "furthest ahead a timer message may be due (RocketMQ's "
    "timerMaxDelaySec); a send beyond it is refused with MESSAGE_ILLEGAL",
    "transaction_timeout_ms": "age of a half message without an end before the broker checks "
    "it back with a producer of its group (RocketMQ's transactionTimeOut)",
    "transaction_check_max": "check-backs of a half message before it is discarded "
    "(RocketMQ's transactionCheckMax)",
    "transaction_check_interval_ms": "time between check-backs of one half message "
    "(RocketMQ's transactionCheckInterval)",
    "rocketmq_enabled": "serve RocketMQ 5 clients (apache.rocketmq.v2 MessagingService)",
    "rocketmq_port": "port of the RocketMQ 5 endpoint, on grpc_host (0: any free port)",
    "rocketmq_max_delivery_attempts": "deliveries of a message before it goes to the group DLQ",
    "metrics_host": "address the HTTP server of /metrics and the web console listens on",
    "metrics_port": "HTTP port of /metrics and the console (0: any free port, printed in the "
    "ready line; none: no HTTP server)",
    "console_enabled": "serve the read-only web console at /console/ beside /metrics",
    "tls_cert_file": "PEM certificate chain of the gRPC server (with tls_key_file: TLS on)",
    "tls_key_file": "PEM private key of the gRPC server's certificate",
    "tls_client_ca_file": "PEM CA that must sign client certificates (mutual TLS; none: off)",
    "acl_file": "TOML file with an [acl] table of users and permissions (none: no ACL, unless "
    "the config file has an [acl] table)",
    "session_idle_strategy": (
        "how the transport session agent waits for requests: doorbell:SPINS,YIELDS,MIN_NS,MAX_NS"
        "[,DEEP_NS,DEEP_AFTER_NS[,SPIN_WINDOW_NS]] (sleeps until a client rings), "
        "backoff:SPINS,YIELDS,MIN_NS,MAX_NS or sleep-ns:NS "
        "(fewer spins cost less CPU while idle, and answer later)"
    ),
    "driver_threading_mode": "threads of the embedded media driver: SHARED (its conductor, "
    "sender and receiver on one thread), SHARED_NETWORK (sender and receiver on one) or "
    "DEDICATED (one each); AERON_THREADING_MODE does not apply to it",
    "gc_freeze": "once started, collect Python's garbage once and freeze what is left "
    "(gc.freeze: the start-up's objects are never walked again by a collection)",
    "gc_threshold": "Python's collector thresholds, gc.set_threshold's three numbers "
    "YOUNG,GEN1,GEN2 (YOUNG net container allocations before a young collection; 700,10,10 is "
    "CPython's own), set once the broker has started",
    "file_mode": "permission bits (octal) of store and shared-memory files; directories get "
    "x beside each r",
    "min_free_disk_bytes": "sends are refused (DISK_FULL, retriable) below this much free disk",
    "max_disk_used_percent": "sends are refused past this disk usage, percent (none: no limit)",
    "etcd_endpoints": "HOST:PORT[,HOST:PORT...] of etcd: set, the broker is a member of the "
    "broker group named broker_name, replicated to group_size members with a leader elected "
    "through etcd (none: a single broker)",
    "member_id": "this member's id in its group, 0..group_size-1 (group mode)",
    "group_size": "members of the group (group mode)",
    "min_isr": "fewest in-sync members (the leader included) a send needs: below, sends are "
    "refused with NOT_ENOUGH_REPLICAS (group mode)",
    "replication_endpoint": "HOST:PORT of this member's replication endpoint, UDP (0: any free "
    "port) (group mode)",
    "lease_ttl_ms": "the member's etcd lease, whole seconds: a leader silent this long is "
    "replaced, and stops acting TTL/4 before (group mode)",
    "replica_lag_max_ms": "a follower that has not caught up with the leader's log for this "
    "long leaves the in-sync replicas (group mode)",
    "replication_timeout_ms": "a send not acknowledged by the in-sync replicas within this "
    "fails with REPLICATION_TIMEOUT, its outcome unknown (group mode)",
    "unclean_election": "when no in-sync member is alive, let another member lead (it may "
    "lack acknowledged messages) (group mode)",
    "leader_fsync_inline": "the leader fsyncs its log on its media driver's thread, after the "
    "cycle's frames are sent; false: on the member's fsync thread, the driver's thread going on "
    "meanwhile (group mode; docs/replication.md)",
}
"""What each :class:`BrokerConfig` field means (the option help and the configuration docs)."""


def option_name(field_name: str) -> str:
    """The command-line option of a field: ``flush_interval_ms`` -> ``--flush-interval``
    (durations take a unit suffix), ``grpc_port`` -> ``--grpc-port``."""
    base = field_name.removesuffix("_ms") if is_duration(field_name) else field_name
    return "--" + base.replace("_", "-")


def is_duration(field_name: str) -> bool:
    """Whether the field is a duration in milliseconds (its name ends in ``_ms``)."""
    return field_name.endswith("_ms")


def add_options(
    parser: argparse.ArgumentParser,
    field_types: Mapping[str, str],
    describe_default: Callable[[str], str],
) -> None:
    """Add ``--config`` and one option per field of ``field_types`` (name -> annotation, in
    field order) to ``parser``; ``describe_default(name)`` gives the default its help shows.
    See ``broker.config.add_arguments``."""
    group = parser.add_argument_group(
        "broker settings (also from the TOML file and AEROMQ_BROKER_*)"
    )
    group.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help=f"a TOML config file; default ${CONFIG_ENV}, else none",
    )
    for name, kind in field_types.items():
        flag = option_name(name)
        unit = "; a duration, e.g. 500ms, 5s" if is_duration(name) else ""
        text = describe_default(name)
        group.add_argument(
            flag,
            dest=name,
            metavar=_metavar(name, kind),
            default=None,
            help=f"{FIELD_HELP[name]}{unit}; default {text} (${ENV_PREFIX}{name.upper()})",
        )
        if flag != "--" + name.replace("_", "-"):
            group.add_argument(
                "--" + name.replace("_", "-"),
                dest=name,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )


def _metavar(field_name: str, kind: str) -> str:
    base = kind.replace(" | None", "")
    if is_duration(field_name):
        return "DURATION"
    return {"int": "N", "bool": "BOOL", "Path": "PATH", "FlushMode": "MODE"}.get(base, "TEXT")
