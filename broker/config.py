"""``BrokerConfig``: everything a broker process needs, typed and validated in one object.

Sources, each overriding the one before (``BrokerConfig.load``)::

    defaults  <  TOML file  <  environment (AEROMQ_BROKER_<KEY>)  <  command-line arguments

The TOML file is named by ``--config PATH`` or ``AEROMQ_BROKER_CONFIG``; its keys are the field
names below, at the top level or under a ``[broker]`` table. An environment variable is the
field name upper-cased after ``AEROMQ_BROKER_`` (``AEROMQ_BROKER_GRPC_PORT=0``); a command-line
argument is the field name with dashes (``--grpc-port 0``), less the ``_ms`` of a duration
(``--flush-interval 500ms``; the ``--flush-interval-ms`` spelling still works). Strings from the
environment and the command line are parsed by the field's type: ints allow ``_`` and the
suffixes ``KiB``, ``MiB``, ``GiB``; durations (``*_ms`` fields) allow ``ns``, ``us``, ``ms``,
``s``, ``m`` and ``h`` (``500ms``, ``5s``; a bare number is milliseconds); booleans are
``true/false/yes/no/on/off/1/0``; an optional field is unset by ``none`` or an empty string.
:data:`FIELD_HELP` says what each field means; the documentation's configuration reference is
generated from it and the defaults.

Any bad value raises :class:`BrokerConfigError` naming the key, the value, the rule it breaks
and where it came from; unknown keys in the file and unknown ``AEROMQ_BROKER_*`` variables are
errors too, so a typo never passes silently.

Defaults work with no arguments: an embedded media driver, ``~/.aeromq/broker`` for data, gRPC
on 127.0.0.1:8081, ingress on ``aeron:ipc`` stream 1001 and on UDP 127.0.0.1:40456.
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Final

from aeromq.broker._batch_limits import BATCH_FRAMING_ALLOWANCE
from aeromq.broker._embedded_driver import DRIVER_THREADING_MODES
from aeromq.broker._errors import ConfigError
from aeromq.broker.store import FlushMode, StoreConfig
from aeromq.common import DEFAULT_INGRESS_STREAM_ID, DEFAULT_MAX_MESSAGE_SIZE
from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent.doorbell import idle_strategy_with_doorbell
from aeromq.transport.tools.cli import format_duration_ms, format_size, parse_duration_ms

__all__ = [
    "DEFAULT_DRIVER_THREADING_MODE",
    "DEFAULT_SESSION_IDLE_STRATEGY",
    "ENV_PREFIX",
    "FIELD_HELP",
    "BrokerConfig",
    "BrokerConfigError",
    "add_arguments",
    "describe_default",
    "option_name",
]

ENV_PREFIX: Final = "AEROMQ_BROKER_"
DEFAULT_SESSION_IDLE_STRATEGY: Final = "doorbell:0,0,1000,1000000,25000000,1000000000,100000"
"""The session agent sleeps on its doorbell (``transport/concurrent/doorbell.py``): IPC clients
ring it after each request, the flusher and the long-poll hold service after each answer they
complete, so a park ends at the ring; while a session that does not ring is open (UDP), parks
back off from 1 us to 1 ms as the backoff's. Parks last 1 ms, 25 ms after a quiet second; while
requests have mostly come within 100 us of going idle (one-at-a-time sends) the agent polls
that long before it parks. Measured with ``python -m bench broker`` against
``backoff:10,5,1000,1000000,25000000,1000000000`` (Agrona's backoff with a deep idle, the
default before; three runs each, alternating, docs/benchmarks.md): broker CPU per message on
batched produce 1.35-1.40 against 1.95-2.05 us, one-at-a-time sends 13.0-13.3k against
10.7-11.1k a second, end to end the same (189-202k against 183-210k a second), the producer's
CPU per message higher (3.3-3.6 against 2.3-2.6 us: a ring that wakes the agent is a futex
wake). Off Linux (no futexes) the name gives the backoff of the same shape."""
DEFAULT_DRIVER_THREADING_MODE: Final = "SHARED"
"""The embedded driver's conductor, sender and receiver on one thread: an idle broker wakes a
third as often, and busy it costs no more CPU per message (see ``broker._embedded_driver``)."""
_CONFIG_ENV: Final = "AEROMQ_BROKER_CONFIG"
_MIB: Final = 1 << 20
_INT32_MAX: Final = (1 << 31) - 1
_NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,127}$")
_SIZE_SUFFIXES: Final = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})


class BrokerConfigError(ConfigError):
    """A bad broker setting: ``key``, ``value``, ``rule`` and ``source`` say which and why."""


def _default_data_dir() -> Path:
    return Path.home() / ".aeromq" / "broker"


@dataclass(frozen=True)
class BrokerConfig:
    """A broker's settings; validated on construction (``BrokerConfigError``).

    Times are in milliseconds, sizes in bytes. ``aeron_dir`` None runs an embedded media
    driver; ``ingress_udp_endpoint`` None serves IPC only; ``namesrv_address`` None serves
    routes from this broker alone.
    """

    broker_name: str = "broker-a"
    cluster_name: str = "DefaultCluster"
    data_dir: Path = dataclasses.field(default_factory=_default_data_dir)
    grpc_host: str = "127.0.0.1"
    grpc_port: int = 8081
    namesrv_address: str | None = None
    aeron_dir: Path | None = None
    ingress_ipc_channel: str = "aeron:ipc"
    ingress_ipc_stream_id: int = DEFAULT_INGRESS_STREAM_ID
    ingress_udp_endpoint: str | None = "127.0.0.1:40456"
    ingress_udp_stream_id: int = DEFAULT_INGRESS_STREAM_ID
    flush_mode: FlushMode = FlushMode.ASYNC
    flush_interval_ms: int = 500
    sync_flush_timeout_ms: int = 5_000
    auto_create_topic: bool = False
    default_queue_count: int = 8
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    long_polling_max_suspend_ms: int = 20_000
    session_timeout_ms: int = 10_000
    client_heartbeat_timeout_ms: int = 30_000
    namesrv_heartbeat_interval_ms: int = 10_000
    commit_log_segment_bytes: int = 1 << 30
    consume_queue_entries_per_segment: int = 300_000
    file_reserved_time_ms: int = 72 * 3_600_000
    max_store_bytes: int | None = None
    local_reads_enabled: bool = True
    index_enabled: bool = True
    index_slots: int = 5_000_000
    index_entries: int = 20_000_000
    offset_persist_interval_ms: int = 5_000
    rocketmq_enabled: bool = True
    rocketmq_port: int = 8181
    rocketmq_max_delivery_attempts: int = 16
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = 0
    console_enabled: bool = True
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    acl_file: Path | None = None
    session_idle_strategy: str = DEFAULT_SESSION_IDLE_STRATEGY
    driver_threading_mode: str = DEFAULT_DRIVER_THREADING_MODE
    file_mode: int = 0o600
    min_free_disk_bytes: int = 64 * _MIB
    max_disk_used_percent: int | None = None

    _OPTIONAL: ClassVar[frozenset[str]] = frozenset(
        {
            "namesrv_address",
            "aeron_dir",
            "ingress_udp_endpoint",
            "max_store_bytes",
            "metrics_port",
            "tls_cert_file",
            "tls_key_file",
            "tls_client_ca_file",
            "acl_file",
            "max_disk_used_percent",
        }
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, getattr(self, f.name), "value"))
        self._validate()

    # -- derived -----------------------------------------------------------------------------

    @property
    def grpc_address(self) -> str:
        """``host:port`` of the gRPC server (port 0: the one the server bound)."""
        return f"{self.grpc_host}:{self.grpc_port}"

    @property
    def ingress_udp_channel(self) -> str | None:
        """The UDP ingress as an Aeron channel URI, or None when UDP is off."""
        if self.ingress_udp_endpoint is None:
            return None
        return f"aeron:udp?endpoint={self.ingress_udp_endpoint}"

    @property
    def max_record_bytes(self) -> int:
        """The store's cap on one record batch: the send path's, ``max_message_size`` plus one
        record's framing (:data:`common.MAX_FRAMING_BYTES`), so every batch the clients may send
        can be stored."""
        return self.max_message_size + BATCH_FRAMING_ALLOWANCE

    def to_store_config(self, store_host: str | None = None) -> StoreConfig:
        """The store's config from this one. ``store_host`` (``a.b.c.d:port``, written into
        every record and offset message id) defaults to the gRPC host, when it is an IPv4
        address, and port."""
        if store_host is None:
            host = self.grpc_host if _is_ipv4(self.grpc_host) else "127.0.0.1"
            store_host = f"{host}:{self.grpc_port}"
        try:
            return StoreConfig(
                data_dir=self.data_dir,
                commit_log_segment_bytes=self.commit_log_segment_bytes,
                consume_queue_entries_per_segment=self.consume_queue_entries_per_segment,
                flush_mode=self.flush_mode,
                flush_interval_ms=self.flush_interval_ms,
                sync_flush_timeout_ms=self.sync_flush_timeout_ms,
                max_message_bytes=self.max_record_bytes,
                file_reserved_time_ms=self.file_reserved_time_ms,
                max_store_bytes=self.max_store_bytes,
                index_enabled=self.index_enabled,
                index_slots=self.index_slots,
                index_entries=self.index_entries,
                offset_persist_interval_ms=self.offset_persist_interval_ms,
                store_host=store_host,
                file_mode=self.file_mode,
                min_free_disk_bytes=self.min_free_disk_bytes,
                max_disk_used_percent=self.max_disk_used_percent,
            )
        except ConfigError as exc:
            key = exc.values.get("field", "store_host")
            raise BrokerConfigError(
                "invalid broker config",
                key=key,
                value=exc.values.get("value", store_host),
                rule=str(exc).split(":", 1)[0],
                source="store",
            ) from exc

    def with_overrides(self, **values: Any) -> BrokerConfig:
        """A copy with ``values`` replaced (validated again)."""
        return dataclasses.replace(self, **values)

    # -- loading -----------------------------------------------------------------------------

    @classmethod
    def load(
        cls,
        argv: Sequence[str] | None = None,
        environ: Mapping[str, str] | None = None,
        config_file: Path | None = None,
    ) -> BrokerConfig:
        """Defaults < TOML file < ``environ`` (``os.environ`` when None) < ``argv``.

        ``config_file`` (or ``--config`` in ``argv``, or ``AEROMQ_BROKER_CONFIG``) names the
        TOML file; no file is read when none is named. ``argv`` holds only broker options
        (see :func:`add_arguments`)."""
        parser = argparse.ArgumentParser(prog="aeromq broker", add_help=False, exit_on_error=False)
        add_arguments(parser)
        args = list(argv or ())
        try:
            namespace, extra = parser.parse_known_args(args)
        except argparse.ArgumentError as exc:
            raise BrokerConfigError(
                "invalid broker arguments", key="argv", value=args, rule=str(exc)
            ) from exc
        if extra:
            raise BrokerConfigError(
                "unknown broker arguments", key="argv", value=extra, rule=_known_keys()
            )
        return cls.from_sources(namespace, environ, config_file)

    @classmethod
    def from_sources(
        cls,
        namespace: argparse.Namespace | None = None,
        environ: Mapping[str, str] | None = None,
        config_file: Path | None = None,
    ) -> BrokerConfig:
        """Like :meth:`load`, from a namespace parsed with a parser that ``add_arguments``
        extended (so a command can add its own options beside the broker's)."""
        env = os.environ if environ is None else environ
        args = vars(namespace) if namespace is not None else {}
        path = args.get("config") or config_file or env.get(_CONFIG_ENV) or None
        values: dict[str, Any] = {}
        origins: dict[str, str] = {}
        if path is not None:
            from_file = _read_toml(Path(path))
            values.update(from_file)
            origins.update(dict.fromkeys(from_file, f"file {path}"))
        from_env = _read_environ(env)
        values.update(from_env)
        origins.update({key: f"environment {ENV_PREFIX}{key.upper()}" for key in from_env})
        for f in fields(cls):
            raw = args.get(f.name)
            if raw is not None:
                origin = f"argument {option_name(f.name)}"
                values[f.name] = _coerce(f.name, raw, origin)
                origins[f.name] = origin
        try:
            return cls(**values)
        except BrokerConfigError as exc:
            key = exc.values.get("key")
            if "source" in exc.values or key not in origins:
                raise
            raise BrokerConfigError(
                "invalid broker config", **{**exc.values, "source": origins[key]}
            ) from exc

    # -- validation --------------------------------------------------------------------------

    def _validate(self) -> None:
        for name in ("broker_name", "cluster_name"):
            if not _NAME_PATTERN.match(getattr(self, name)):
                _fail(name, getattr(self, name), "1-127 of a-zA-Z0-9_-")
        if not self.grpc_host:
            _fail("grpc_host", self.grpc_host, "a host name or address")
        _in_range("grpc_port", self.grpc_port, 0, 65535)
        if self.namesrv_address is not None:
            _check_host_port("namesrv_address", self.namesrv_address, allow_zero=False)
        if not self.ingress_ipc_channel.startswith("aeron:ipc"):
            _fail("ingress_ipc_channel", self.ingress_ipc_channel, "an aeron:ipc channel URI")
        if self.ingress_udp_endpoint is not None:
            _check_host_port("ingress_udp_endpoint", self.ingress_udp_endpoint, allow_zero=True)
        for name in ("ingress_ipc_stream_id", "ingress_udp_stream_id"):
            _in_range(name, getattr(self, name), -(1 << 31), _INT32_MAX)
        _in_range("flush_interval_ms", self.flush_interval_ms, 1, 60_000)
        _in_range("sync_flush_timeout_ms", self.sync_flush_timeout_ms, 1, 600_000)
        _in_range("default_queue_count", self.default_queue_count, 1, 1024)
        _in_range("max_message_size", self.max_message_size, 256, _INT32_MAX)
        _in_range("long_polling_max_suspend_ms", self.long_polling_max_suspend_ms, 0, 3_600_000)
        _in_range("session_timeout_ms", self.session_timeout_ms, 100, 3_600_000)
        _in_range("client_heartbeat_timeout_ms", self.client_heartbeat_timeout_ms, 100, 3_600_000)
        _in_range("namesrv_heartbeat_interval_ms", self.namesrv_heartbeat_interval_ms, 10, 600_000)
        _in_range("commit_log_segment_bytes", self.commit_log_segment_bytes, 4096, _INT32_MAX)
        if self.max_record_bytes > self.commit_log_segment_bytes - 8:
            _fail(
                "max_message_size",
                self.max_message_size,
                "a record of this body with the longest topic and properties must fit in "
                f"commit_log_segment_bytes - 8 = {self.commit_log_segment_bytes - 8}",
            )
        _in_range(
            "consume_queue_entries_per_segment", self.consume_queue_entries_per_segment, 2, 1 << 26
        )
        _in_range("file_reserved_time_ms", self.file_reserved_time_ms, 0, 1 << 50)
        if self.max_store_bytes is not None:
            _in_range(
                "max_store_bytes", self.max_store_bytes, self.commit_log_segment_bytes, 1 << 60
            )
        _in_range("index_slots", self.index_slots, 1, _INT32_MAX)
        _in_range("index_entries", self.index_entries, 2, _INT32_MAX)
        _in_range("offset_persist_interval_ms", self.offset_persist_interval_ms, 1, 3_600_000)
        _in_range("rocketmq_port", self.rocketmq_port, 0, 65535)
        _in_range("rocketmq_max_delivery_attempts", self.rocketmq_max_delivery_attempts, 1, 1000)
        if not self.metrics_host:
            _fail("metrics_host", self.metrics_host, "a host name or address")
        if self.metrics_port is not None:
            _in_range("metrics_port", self.metrics_port, 0, 65535)
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            _fail("tls_key_file", self.tls_key_file, "tls_cert_file and tls_key_file go together")
        if self.tls_client_ca_file is not None and self.tls_cert_file is None:
            _fail("tls_client_ca_file", self.tls_client_ca_file, "mutual TLS needs tls_cert_file")
        try:
            idle_strategy_with_doorbell(self.session_idle_strategy, None)
        except ConfigurationError as exc:
            _fail(
                "session_idle_strategy",
                self.session_idle_strategy,
                f"an idle strategy name, e.g. doorbell:SPINS,YIELDS,MIN_NS,MAX_NS, "
                f"backoff:SPINS,YIELDS,MIN_NS,MAX_NS or sleep-ns:NS "
                f"({exc})",
            )
        if self.driver_threading_mode.strip().upper() not in DRIVER_THREADING_MODES:
            _fail(
                "driver_threading_mode",
                self.driver_threading_mode,
                "one of " + ", ".join(DRIVER_THREADING_MODES),
            )
        _in_range("file_mode", self.file_mode, 0o600, 0o777)
        _in_range("min_free_disk_bytes", self.min_free_disk_bytes, 0, 1 << 60)
        if self.max_disk_used_percent is not None:
            _in_range("max_disk_used_percent", self.max_disk_used_percent, 1, 100)
        self.to_store_config()  # and whatever the store itself checks


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
    "file_mode": "permission bits (octal) of store and shared-memory files; directories get "
    "x beside each r",
    "min_free_disk_bytes": "sends are refused (DISK_FULL, retriable) below this much free disk",
    "max_disk_used_percent": "sends are refused past this disk usage, percent (none: no limit)",
}
"""What each :class:`BrokerConfig` field means (the option help and the configuration docs)."""


def option_name(field_name: str) -> str:
    """The command-line option of a field: ``flush_interval_ms`` -> ``--flush-interval``
    (durations take a unit suffix), ``grpc_port`` -> ``--grpc-port``."""
    base = field_name.removesuffix("_ms") if _is_duration(field_name) else field_name
    return "--" + base.replace("_", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one option per ``BrokerConfig`` field to ``parser`` (see
    :func:`option_name`; a duration's old ``--*-ms`` spelling is a hidden alias).

    Every option defaults to None (not given), so only what the command line names overrides
    the file and the environment; values stay strings until :meth:`BrokerConfig.from_sources`
    parses them by type. The help of each names its default, unit and environment variable."""
    group = parser.add_argument_group(
        "broker settings (also from the TOML file and AEROMQ_BROKER_*)"
    )
    group.add_argument(
        "--config",
        metavar="PATH",
        default=None,
        help=f"a TOML config file; default ${_CONFIG_ENV}, else none",
    )
    for f in fields(BrokerConfig):
        flag = option_name(f.name)
        unit = "; a duration, e.g. 500ms, 5s" if _is_duration(f.name) else ""
        text = describe_default(f.name)
        group.add_argument(
            flag,
            dest=f.name,
            metavar=_metavar(f.name),
            default=None,
            help=f"{FIELD_HELP[f.name]}{unit}; default {text} (${ENV_PREFIX}{f.name.upper()})",
        )
        if flag != "--" + f.name.replace("_", "-"):
            group.add_argument(
                "--" + f.name.replace("_", "-"),
                dest=f.name,
                default=argparse.SUPPRESS,
                help=argparse.SUPPRESS,
            )


def _is_duration(field_name: str) -> bool:
    return field_name.endswith("_ms")


def _metavar(field_name: str) -> str:
    kind = _field_types()[field_name].replace(" | None", "")
    if _is_duration(field_name):
        return "DURATION"
    return {"int": "N", "bool": "BOOL", "Path": "PATH", "FlushMode": "MODE"}.get(kind, "TEXT")


def _show_default(value: Any) -> str:
    """A default as the documentation shows it: ``5s`` for 5000 ms, ``1 GiB``, ``none``."""
    if value is None:
        return "none"
    if isinstance(value, FlushMode):
        return value.value
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Path) and value == _default_data_dir():
        return "~/.aeromq/broker"
    return str(value)


def describe_default(field_name: str) -> str:
    """The default of ``field_name`` as the documentation shows it: durations and sizes in
    their largest whole unit (``72h``, ``1GiB``), ``none``, ``~/.aeromq/broker``."""
    f = next(f for f in fields(BrokerConfig) if f.name == field_name)
    value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
    if isinstance(value, int) and not isinstance(value, bool):
        if field_name == "file_mode":
            return f"{value:#o}"
        if _is_duration(field_name):
            return format_duration_ms(value)
        if field_name.endswith("_bytes") or field_name == "max_message_size":
            return format_size(value)
    return _show_default(value)


# -- parsing and checks ------------------------------------------------------------------------


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in fields(BrokerConfig)}


def _coerce(name: str, value: Any, source: str) -> Any:
    """``value`` as the type of field ``name``; strings are parsed."""
    kind = _field_types()[name]
    optional = name in BrokerConfig._OPTIONAL
    if optional and (
        value is None or (isinstance(value, str) and value.strip().lower() in ("", "none"))
    ):
        return None
    base = kind.replace(" | None", "")
    try:
        if base == "str":
            if not isinstance(value, str):
                raise TypeError
            return value
        if base == "Path":
            if not isinstance(value, str | os.PathLike):
                raise TypeError
            return Path(value).expanduser()
        if base == "bool":
            return _parse_bool(value)
        if name == "file_mode" and isinstance(value, str):
            return int(value.strip().lower().removeprefix("0o"), 8)
        if base == "int" and _is_duration(name) and isinstance(value, str):
            try:
                return _parse_int(value)
            except ValueError:
                return round(parse_duration_ms(value))
        if base == "int":
            return _parse_int(value)
        if base == "FlushMode":
            if isinstance(value, FlushMode):
                return value
            return FlushMode(str(value).strip().upper())
    except (TypeError, ValueError) as exc:
        raise BrokerConfigError(
            "invalid broker config",
            key=name,
            value=value,
            rule=f"must be {_describe(base)}",
            source=source,
        ) from exc
    raise AssertionError(f"no parser for field type: name={name} type={kind}")


def _describe(base: str) -> str:
    return {
        "str": "a string",
        "Path": "a path",
        "bool": "a boolean (true/false)",
        "int": "an integer (KiB/MiB/GiB suffixes allowed; for *_ms: a duration, e.g. 5s)",
        "FlushMode": "ASYNC or SYNC",
    }[base]


def _parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise ValueError(value)


def _parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise TypeError(value)
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise TypeError(value)
    text = value.strip().replace("_", "")
    scale = 1
    lowered = text.lower()
    for suffix, factor in _SIZE_SUFFIXES.items():
        if lowered.endswith(suffix):
            text, scale = text[: -len(suffix)].strip(), factor
            break
    return int(text, 10) * scale


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except OSError as exc:
        raise BrokerConfigError(
            "cannot read broker config file", key="config", value=str(path), rule=exc.strerror
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise BrokerConfigError(
            "broker config file is not valid TOML", key="config", value=str(path), rule=str(exc)
        ) from exc
    table = dict(document.get("broker", document))
    if isinstance(document.get("acl"), dict):  # the ACL may sit in the broker's own file
        table.pop("acl", None)
        table.setdefault("acl_file", str(path))
    if not isinstance(table, dict):
        raise BrokerConfigError(
            "broker config file: [broker] must be a table",
            key="broker",
            value=table,
            source=str(path),
        )
    names = _field_types()
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in names:
            raise BrokerConfigError(
                "unknown broker config key",
                key=key,
                value=value,
                rule=_known_keys(),
                source=str(path),
            )
        values[key] = _coerce(key, value, f"file {path}")
    return values


def _read_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    names = _field_types()
    values: dict[str, Any] = {}
    for variable in sorted(environ):
        if not variable.startswith(ENV_PREFIX) or variable == _CONFIG_ENV:
            continue
        key = variable[len(ENV_PREFIX) :].lower()
        if key not in names:
            raise BrokerConfigError(
                "unknown broker environment variable",
                key=variable,
                value=environ[variable],
                rule=_known_keys(),
                source="environment",
            )
        values[key] = _coerce(key, environ[variable], f"environment {variable}")
    return values


def _known_keys() -> str:
    return "one of " + ", ".join(sorted(_field_types()))


def _fail(key: str, value: Any, rule: str) -> None:
    raise BrokerConfigError("invalid broker config", key=key, value=value, rule=rule)


def _in_range(key: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        _fail(key, value, f"{low}..{high}")


def _check_host_port(key: str, value: str, *, allow_zero: bool) -> None:
    host, sep, port = value.rpartition(":")
    low = 0 if allow_zero else 1
    if not sep or not host or not port.isdigit() or not low <= int(port) <= 65535:
        _fail(key, value, f"host:port with port {low}..65535")


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True
