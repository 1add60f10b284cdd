"""The rules a broker's settings keep: ranges, formats and the settings that go together.

Caller: ``BrokerConfig.__post_init__``, once every value has its field's type (see
``broker.config``). The first rule broken raises ``BrokerConfigError`` with the ``key``, the
``value`` and the ``rule``; the store's own rules are checked too, through
``BrokerConfig.to_store_config``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from aeromq.broker._embedded_driver import DRIVER_THREADING_MODES
from aeromq.broker._errors import BrokerConfigError
from aeromq.common import parse_gc_threshold
from aeromq.transport import ConfigurationError
from aeromq.transport.concurrent.doorbell_idle_strategy import idle_strategy_with_doorbell

if TYPE_CHECKING:
    from aeromq.broker.config import BrokerConfig

__all__ = ["validate"]

_INT32_MAX: Final = (1 << 31) - 1
_NAME_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_-]{1,127}$")


def validate(config: BrokerConfig) -> None:
    """Raise ``BrokerConfigError`` for the first rule ``config`` breaks (see module)."""
    for name in ("broker_name", "cluster_name"):
        if not _NAME_PATTERN.match(getattr(config, name)):
            _fail(name, getattr(config, name), "1-127 of a-zA-Z0-9_-")
    if not config.grpc_host:
        _fail("grpc_host", config.grpc_host, "a host name or address")
    _in_range("grpc_port", config.grpc_port, 0, 65535)
    if config.namesrv_address is not None:
        _check_host_port("namesrv_address", config.namesrv_address, allow_zero=False)
    if not config.ingress_ipc_channel.startswith("aeron:ipc"):
        _fail("ingress_ipc_channel", config.ingress_ipc_channel, "an aeron:ipc channel URI")
    if config.ingress_udp_endpoint is not None:
        _check_host_port("ingress_udp_endpoint", config.ingress_udp_endpoint, allow_zero=True)
    for name in ("ingress_ipc_stream_id", "ingress_udp_stream_id"):
        _in_range(name, getattr(config, name), -(1 << 31), _INT32_MAX)
    _in_range("flush_interval_ms", config.flush_interval_ms, 1, 60_000)
    _in_range("flush_index_interval_ms", config.flush_index_interval_ms, 1, 3_600_000)
    _in_range("sync_flush_timeout_ms", config.sync_flush_timeout_ms, 1, 600_000)
    _in_range("default_queue_count", config.default_queue_count, 1, 1024)
    _in_range("max_message_size", config.max_message_size, 256, _INT32_MAX)
    _in_range("long_polling_max_suspend_ms", config.long_polling_max_suspend_ms, 0, 3_600_000)
    _in_range("session_timeout_ms", config.session_timeout_ms, 100, 3_600_000)
    _in_range("client_heartbeat_timeout_ms", config.client_heartbeat_timeout_ms, 100, 3_600_000)
    _in_range("namesrv_heartbeat_interval_ms", config.namesrv_heartbeat_interval_ms, 10, 600_000)
    _in_range("commit_log_segment_bytes", config.commit_log_segment_bytes, 4096, _INT32_MAX)
    if config.max_record_bytes > config.commit_log_segment_bytes - 8:
        _fail(
            "max_message_size",
            config.max_message_size,
            "a record of this body with the longest topic and properties must fit in "
            f"commit_log_segment_bytes - 8 = {config.commit_log_segment_bytes - 8}",
        )
    _in_range(
        "consume_queue_entries_per_segment", config.consume_queue_entries_per_segment, 2, 1 << 26
    )
    _in_range("file_reserved_time_ms", config.file_reserved_time_ms, 0, 1 << 50)
    if config.max_store_bytes is not None:
        _in_range(
            "max_store_bytes", config.max_store_bytes, config.commit_log_segment_bytes, 1 << 60
        )
    _in_range("index_slots", config.index_slots, 1, _INT32_MAX)
    _in_range("index_entries", config.index_entries, 2, _INT32_MAX)
    _in_range("offset_persist_interval_ms", config.offset_persist_interval_ms, 1, 3_600_000)
    _in_range("timer_max_delay_ms", config.timer_max_delay_ms, 1_000, 1 << 40)
    _in_range("transaction_timeout_ms", config.transaction_timeout_ms, 100, 1 << 40)
    _in_range("transaction_check_max", config.transaction_check_max, 1, 10_000)
    _in_range("transaction_check_interval_ms", config.transaction_check_interval_ms, 100, 1 << 40)
    _in_range("rocketmq_port", config.rocketmq_port, 0, 65535)
    _in_range("rocketmq_max_delivery_attempts", config.rocketmq_max_delivery_attempts, 1, 1000)
    if not config.metrics_host:
        _fail("metrics_host", config.metrics_host, "a host name or address")
    if config.metrics_port is not None:
        _in_range("metrics_port", config.metrics_port, 0, 65535)
    if (config.tls_cert_file is None) != (config.tls_key_file is None):
        _fail("tls_key_file", config.tls_key_file, "tls_cert_file and tls_key_file go together")
    if config.tls_client_ca_file is not None and config.tls_cert_file is None:
        _fail("tls_client_ca_file", config.tls_client_ca_file, "mutual TLS needs tls_cert_file")
    try:
        idle_strategy_with_doorbell(config.session_idle_strategy, None)
    except ConfigurationError as exc:
        _fail(
            "session_idle_strategy",
            config.session_idle_strategy,
            f"an idle strategy name, e.g. doorbell:SPINS,YIELDS,MIN_NS,MAX_NS, "
            f"backoff:SPINS,YIELDS,MIN_NS,MAX_NS or sleep-ns:NS "
            f"({exc})",
        )
    if config.driver_threading_mode.strip().upper() not in DRIVER_THREADING_MODES:
        _fail(
            "driver_threading_mode",
            config.driver_threading_mode,
            "one of " + ", ".join(DRIVER_THREADING_MODES),
        )
    try:
        parse_gc_threshold(config.gc_threshold)
    except ValueError as exc:
        _fail("gc_threshold", config.gc_threshold, f"YOUNG[,GEN1[,GEN2]], each above 0 ({exc})")
    _in_range("file_mode", config.file_mode, 0o600, 0o777)
    _in_range("min_free_disk_bytes", config.min_free_disk_bytes, 0, 1 << 60)
    if config.max_disk_used_percent is not None:
        _in_range("max_disk_used_percent", config.max_disk_used_percent, 1, 100)
    _validate_group(config)
    config.to_store_config()  # and whatever the store itself checks


def _validate_group(config: BrokerConfig) -> None:
    """The group options (checked whether or not ``etcd_endpoints`` is set)."""
    if config.etcd_endpoints is not None:
        endpoints = config.etcd_endpoint_list
        if not endpoints:
            _fail("etcd_endpoints", config.etcd_endpoints, "HOST:PORT[,HOST:PORT...]")
        for endpoint in endpoints:
            _check_host_port("etcd_endpoints", endpoint, allow_zero=False)
    _in_range("group_size", config.group_size, 1, 64)
    _in_range("member_id", config.member_id, 0, config.group_size - 1)
    _in_range("min_isr", config.min_isr, 1, config.group_size)
    _check_host_port("replication_endpoint", config.replication_endpoint, allow_zero=True)
    _in_range("lease_ttl_ms", config.lease_ttl_ms, 1000, 60_000)
    if config.lease_ttl_ms % 1000:
        _fail("lease_ttl_ms", config.lease_ttl_ms, "whole seconds (etcd's leases are)")
    _in_range("replica_lag_max_ms", config.replica_lag_max_ms, 100, 600_000)
    _in_range("replication_timeout_ms", config.replication_timeout_ms, 100, 600_000)


def _fail(key: str, value: object, rule: str) -> None:
    raise BrokerConfigError("invalid broker config", key=key, value=value, rule=rule)


def _in_range(key: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        _fail(key, value, f"{low}..{high}")


def _check_host_port(key: str, value: str, *, allow_zero: bool) -> None:
    host, sep, port = value.rpartition(":")
    low = 0 if allow_zero else 1
    if not sep or not host or not port.isdigit() or not low <= int(port) <= 65535:
        _fail(key, value, f"host:port with port {low}..65535")
