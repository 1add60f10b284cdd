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

This module holds the typed object: its fields and defaults, the parsing of a value by its
field's type, the derived values and the entry points that load it. The rules it checks are in
``broker._config_rules``; the TOML file and the environment are read by
``broker._config_sources``; the option names, variable names and help by
``broker._config_options`` (re-exported here).
"""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar, Final

from aeromq.broker._batch_limits import BATCH_FRAMING_ALLOWANCE
from aeromq.broker._config_options import (
    ENV_PREFIX,
    FIELD_HELP,
    add_options,
    is_duration,
    option_name,
)
from aeromq.broker._config_rules import validate
from aeromq.broker._config_sources import known_keys, read_sources
from aeromq.broker._errors import BrokerConfigError, ConfigError
from aeromq.broker.store import FlushMode, StoreConfig
from aeromq.common import (
    DEFAULT_GC_THRESHOLD,
    DEFAULT_INGRESS_STREAM_ID,
    DEFAULT_MAX_MESSAGE_SIZE,
    GcThreshold,
    format_gc_threshold,
    parse_gc_threshold,
)
from aeromq.transport.util import format_duration_ms, format_size, parse_duration_ms

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

DEFAULT_SESSION_IDLE_STRATEGY: Final = (
    "doorbell:0,0,1000,1000000,25000000,1000000000,100000,200000,500000"
)
"""The session agent sleeps on its doorbell (``transport/concurrent/doorbell.py``): IPC clients
ring it after each request, the embedded driver's receiver after each duty cycle that brought a
UDP client's requests (the ingress subscription's ``doorbell=`` parameter), the flusher and the
long-poll hold service after each answer they complete, so a park ends at the ring; while a
session that does not ring is open (an IPC client without doorbells, such as a plain Aeron
client), parks back off from 1 us to 1 ms as the backoff's, 25 ms after a quiet second. While every session
rings, each park is the longest (25 ms) at once: the ring ends it, and the first request after
a quiet spell is woken as fast as the thousandth. While requests have mostly come within 100 us
of going idle the agent polls that long before it parks, and after a cycle of one-at-a-time
sends (one message each), while the next sends have mostly come within 200 us, that long (the
long spin window, with a predictor of its own): such a producer's next send comes 100-200 us
after its answer on a 2-core VM (its wake-up, then its code), which a 100 us window missed, and
each miss cost the send a wake-up of the agent (``send()`` one at a time 9,100-9,300 a second
against 6,200-7,300, 5,000 msgs/s with a consumer kept; ``docs/latency.md``). The long window
grows to the sends it missed by up to 500 us (the ninth field), as Linux's guest halt-polling
does: where wake-ups are slower the producer's next send comes later, and a window that stayed
at 200 us let the agent and a producer in a loop settle both asleep (``docs/latency.md``, "A
window that grows"). A 200 us window
after every cycle made a consumer's drain of a backlog slower (the agent polled through the
turnaround of each large pull), and after a pipelining producer's batches ``bench broker``'s
end to end. Each poll of a window ends in ``sched_yield()`` (``broker/session/_idle.py``): a
client woken onto the agent's CPU runs at once. Measured with
``python -m bench broker`` against ``backoff:10,5,1000,1000000,25000000,1000000000`` (Agrona's
backoff with a deep idle, the default before; three runs each, alternating,
docs/benchmarks.md): broker CPU per message on
batched produce 1.35-1.40 against 1.95-2.05 us, one-at-a-time sends 13.0-13.3k against
10.7-11.1k a second, end to end the same (189-202k against 183-210k a second), the producer's
CPU per message higher (3.3-3.6 against 2.3-2.6 us: a ring that wakes the agent is a futex
wake). Off Linux (no futexes) the name gives the backoff of the same shape."""
DEFAULT_DRIVER_THREADING_MODE: Final = "SHARED"
"""The embedded driver's conductor, sender and receiver on one thread: an idle broker wakes a
third as often, and busy it costs no more CPU per message (see ``broker._embedded_driver``)."""
_MIB: Final = 1 << 20
_SIZE_SUFFIXES: Final = {"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_TRUE: Final = frozenset({"true", "yes", "on", "1"})
_FALSE: Final = frozenset({"false", "no", "off", "0"})


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
    flush_index_interval_ms: int = 10_000
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
    timer_enabled: bool = True
    timer_max_delay_ms: int = 3 * 24 * 3_600_000
    transaction_timeout_ms: int = 6_000
    transaction_check_max: int = 15
    transaction_check_interval_ms: int = 30_000
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
    gc_freeze: bool = True
    gc_threshold: str = format_gc_threshold(DEFAULT_GC_THRESHOLD)
    file_mode: int = 0o600
    min_free_disk_bytes: int = 64 * _MIB
    max_disk_used_percent: int | None = None
    etcd_endpoints: str | None = None
    member_id: int = 0
    group_size: int = 3
    min_isr: int = 2
    replication_endpoint: str = "127.0.0.1:0"
    lease_ttl_ms: int = 2000
    replica_lag_max_ms: int = 1000
    replication_timeout_ms: int = 5000
    unclean_election: bool = False
    leader_fsync_inline: bool = True

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
            "etcd_endpoints",
        }
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            object.__setattr__(self, f.name, _coerce(f.name, getattr(self, f.name), "value"))
        validate(self)

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
    def group_mode(self) -> bool:
        """Whether this broker is a member of a broker group (``etcd_endpoints`` set): its
        ``broker_name`` is the group, replicated to ``group_size`` members with a leader
        elected through etcd (see ``docs/replication.md``)."""
        return self.etcd_endpoints is not None

    @property
    def etcd_endpoint_list(self) -> tuple[str, ...]:
        """``etcd_endpoints`` split at commas (empty when not in a group)."""
        if self.etcd_endpoints is None:
            return ()
        return tuple(e.strip() for e in self.etcd_endpoints.split(",") if e.strip())

    @property
    def gc_threshold_numbers(self) -> GcThreshold:
        """``gc_threshold`` as ``gc.set_threshold``'s three numbers (``aeromq.common.tune_gc``)."""
        return parse_gc_threshold(self.gc_threshold)

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
                flush_index_interval_ms=self.flush_index_interval_ms,
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
                replicated=self.group_mode,
                replication_timeout_ms=self.replication_timeout_ms,
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
                "unknown broker arguments", key="argv", value=extra, rule=known_keys(_field_types())
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
        values, origins = read_sources(args, env, config_file, _field_types(), _coerce)
        try:
            return cls(**values)
        except BrokerConfigError as exc:
            key = exc.values.get("key")
            if "source" in exc.values or key not in origins:
                raise
            raise BrokerConfigError(
                "invalid broker config", **{**exc.values, "source": origins[key]}
            ) from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--config`` and one option per ``BrokerConfig`` field to ``parser`` (see
    :func:`option_name`; a duration's old ``--*-ms`` spelling is a hidden alias).

    Every option defaults to None (not given), so only what the command line names overrides
    the file and the environment; values stay strings until :meth:`BrokerConfig.from_sources`
    parses them by type. The help of each names its default, unit and environment variable."""
    add_options(parser, _field_types(), describe_default)


def _show_default(value: object) -> str:
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
        if is_duration(field_name):
            return format_duration_ms(value)
        if field_name.endswith("_bytes") or field_name == "max_message_size":
            return format_size(value)
    return _show_default(value)


# -- parsing a value by its field's type ------------------------------------------------------


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in fields(BrokerConfig)}


def _coerce(name: str, value: object, source: str) -> object:
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
        if base == "int" and is_duration(name) and isinstance(value, str):
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


def _parse_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
    raise ValueError(value)


def _parse_int(value: object) -> int:
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


def _is_ipv4(host: str) -> bool:
    try:
        ipaddress.IPv4Address(host)
    except ValueError:
        return False
    return True
