"""``NameServerConfig``: the name server's settings, typed and validated.

From defaults < environment (``AEROMQ_NAMESRV_<KEY>``) < command-line arguments
(``--<key-with-dashes>``); errors are ``BrokerConfigError`` naming key, value, rule and source.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final

from aeromq.broker.config import BrokerConfigError

__all__ = ["ENV_PREFIX", "NameServerConfig"]

ENV_PREFIX: Final = "AEROMQ_NAMESRV_"


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
        env = os.environ if environ is None else environ
        parser = argparse.ArgumentParser(prog="aeromq namesrv", exit_on_error=False)
        for f in fields(cls):
            parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=None)
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
                rule="--" + ", --".join(f.name.replace("_", "-") for f in fields(cls)),
            )
        names = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
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
            raw = getattr(namespace, name)
            if raw is not None:
                values[name], origins[name] = raw, f"argument --{name.replace('_', '-')}"
        typed: dict[str, Any] = {}
        for key, raw in values.items():
            if names[key] == "int":
                try:
                    typed[key] = int(str(raw).replace("_", ""))
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


def _fail(key: str, value: Any, rule: str) -> None:
    raise BrokerConfigError("invalid name server config", key=key, value=value, rule=rule)
