"""``NameServerConfig``: the name server's settings, typed and validated.

From defaults < environment (``AEROMQ_NAMESRV_<KEY>``) < command-line arguments
(``--<key-with-dashes>``, less the ``_ms`` of a duration, which takes a unit: ``--broker-timeout
30s``; the ``--broker-timeout-ms`` spelling still works); errors are ``BrokerConfigError`` naming
key, value, rule and source.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from aeromq.broker.config import BrokerConfigError, option_name
from aeromq.transport.util import format_duration_ms, parse_duration_ms

__all__ = ["ENV_PREFIX", "FIELD_HELP", "NameServerConfig", "add_arguments"]

ENV_PREFIX: Final = "AEROMQ_NAMESRV_"
FIELD_HELP: Final[Mapping[str, str]] = {
    "host": "address to listen on",
    "port": "gRPC port (0: any free port, printed in the ready line; RocketMQ's is 9876)",
    "broker_timeout_ms": "a broker silent this long is dropped (unless it registered its own)",
    "scan_interval_ms": "how often silent brokers are looked for",
}
"""What each :class:`NameServerConfig` field means (the option help and the docs)."""


@dataclass(frozen=True)
class NameServerConfig:
    """``host:port`` to serve on (port 0: any free port; RocketMQ's default is 9876), how long
    a silent broker is kept (unless its registration names its own timeout), and how often
    brokers are checked."""

    host: str = "127.0.0.1"
    port: int = 9876
    broker_timeout_ms: int = 30_000
    scan_interval_ms: int = 1_000

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            _fail("host", self.host, "a host name or address")
        for name, low, high in (
            ("port", 0, 65535),
            ("broker_timeout_ms", 10, 3_600_000),
            ("scan_interval_ms", 1, 600_000),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                _fail(name, value, f"{low}..{high}")

    @classmethod
    def load(
        cls, argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
    ) -> NameServerConfig:
        """The settings from the defaults, then ``environ`` (default :data:`os.environ`:
        ``AEROMQ_NAMESRV_<KEY>``), then ``argv`` (``aeromq namesrv``'s options), each over the
        one before. Raises :class:`BrokerConfigError` naming the key, value, rule and source
        of an unknown or invalid setting."""
        env = os.environ if environ is None else environ
        parser = argparse.ArgumentParser(prog="aeromq namesrv", exit_on_error=False)
        add_arguments(parser)
        try:
            namespace, extra = parser.parse_known_args(list(argv or ()))
        except argparse.ArgumentError as exc:
            raise BrokerConfigError(
                "invalid name server arguments", key="argv", value=list(argv or ()), rule=str(exc)
            ) from exc
        if extra:
            raise BrokerConfigError(
                "unknown name server arguments",
                key="argv",
                value=extra,
                rule=", ".join(option_name(f.name) for f in fields(cls)),
            )
        names = {f.name: f.type for f in fields(cls)}
        values: dict[str, object] = {}
        origins: dict[str, str] = {}
        for variable in sorted(env):
            if not variable.startswith(ENV_PREFIX):
                continue
            key = variable[len(ENV_PREFIX) :].lower()
            if key not in names:
                raise BrokerConfigError(
                    "unknown name server environment variable",
                    key=variable,
                    value=env[variable],
                    rule="one of " + ", ".join(ENV_PREFIX + n.upper() for n in names),
                    source="environment",
                )
            values[key], origins[key] = env[variable], f"environment {variable}"
        for name in names:
            raw = getattr(namespace, name, None)
            if raw is not None:
                values[name], origins[name] = raw, f"argument {option_name(name)}"
        typed: dict[str, Any] = {}  # field name -> value of its type, for the constructor
        for key, raw in values.items():
            if names[key] == "int":
                try:
                    typed[key] = _parse_int(key, str(raw))
                except ValueError as exc:
                    raise BrokerConfigError(
                        "invalid name server config",
                        key=key,
                        value=raw,
                        rule="must be an integer",
                        source=origins[key],
                    ) from exc
            else:
                typed[key] = raw
        try:
            return cls(**typed)
        except BrokerConfigError as exc:
            key = exc.values.get("key", "")
            if key not in origins:
                raise
            raise BrokerConfigError(
                "invalid name server config", **{**exc.values, "source": origins[key]}
            ) from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per :class:`NameServerConfig` field, default None (not given), with help."""
    for f in fields(NameServerConfig):
        flag = option_name(f.name)
        duration = f.name.endswith("_ms")
        default = getattr(NameServerConfig(), f.name)
        shown = format_duration_ms(default) if duration else default
        unit = "; a duration, e.g. 500ms, 30s" if duration else ""
        parser.add_argument(
            flag,
            dest=f.name,
            default=None,
            metavar="DURATION" if duration else f.name.upper(),
            help=f"{FIELD_HELP[f.name]}{unit}; default {shown} (${ENV_PREFIX}{f.name.upper()})",
        )
        old = "--" + f.name.replace("_", "-")
        if old != flag:
            parser.add_argument(old, dest=f.name, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _parse_int(key: str, text: str) -> int:
    try:
        return int(text.replace("_", ""))
    except ValueError:
        if not key.endswith("_ms"):
            raise
        return round(parse_duration_ms(text))


def _fail(key: str, value: object, rule: str) -> None:
    raise BrokerConfigError("invalid name server config", key=key, value=value, rule=rule)
