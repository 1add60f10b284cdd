"""Where a broker's settings come from besides its constructor: a TOML file, the environment
and a parsed command line, each value read by its field's type and kept with its origin.

Each source overrides the one before: the TOML file (named by ``--config``, the caller's
``config_file`` or ``AEROMQ_BROKER_CONFIG``; its keys at the top level or under ``[broker]``),
then the ``AEROMQ_BROKER_*`` variables, then the command line. An origin (``file PATH``,
``environment VAR``, ``argument --opt``) is what a ``BrokerConfigError`` names as its
``source``. A key of the file or a variable that names no field is an error, never ignored.

Caller: ``BrokerConfig.from_sources``, which passes its field types and its coercion (so this
module knows no config class) and builds the config from what :func:`read_sources` returns.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeAlias

from aeromq.broker._config_options import CONFIG_ENV, ENV_PREFIX, option_name
from aeromq.broker._errors import BrokerConfigError

__all__ = ["Coerce", "FieldValues", "known_keys", "read_sources"]

FieldValues: TypeAlias = dict[str, Any]
"""Field name -> typed value (of that field's type), for the config's constructor."""

Coerce = Callable[[str, object, str], object]
"""``coerce(field_name, value, origin)``: ``value`` as the field's type (strings parsed), or
``BrokerConfigError`` naming ``origin``."""


def read_sources(
    args: Mapping[str, Any],  # a parsed command line's values
    environ: Mapping[str, str],
    config_file: Path | None,
    field_types: Mapping[str, str],
    coerce: Coerce,
) -> tuple[FieldValues, dict[str, str]]:
    """The typed values the TOML file, ``environ`` and ``args`` (a parsed command line, by
    field name; None: not given) set, the later overriding the earlier, and the origin of each
    (field name -> ``file PATH``, ``environment VAR`` or ``argument --opt``)."""
    path = args.get("config") or config_file or environ.get(CONFIG_ENV) or None
    values: FieldValues = {}
    origins: dict[str, str] = {}
    if path is not None:
        from_file = _read_toml(Path(path), field_types, coerce)
        values.update(from_file)
        origins.update(dict.fromkeys(from_file, f"file {path}"))
    from_env = _read_environ(environ, field_types, coerce)
    values.update(from_env)
    origins.update({key: f"environment {ENV_PREFIX}{key.upper()}" for key in from_env})
    for name in field_types:
        raw = args.get(name)
        if raw is not None:
            origin = f"argument {option_name(name)}"
            values[name] = coerce(name, raw, origin)
            origins[name] = origin
    return values, origins


def _read_toml(path: Path, field_types: Mapping[str, str], coerce: Coerce) -> FieldValues:
    """The settings of the TOML file at ``path`` (top level or ``[broker]``); an ``[acl]`` table
    beside them makes the file its own ``acl_file``."""
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
    values: FieldValues = {}
    for key, value in table.items():
        if key not in field_types:
            raise BrokerConfigError(
                "unknown broker config key",
                key=key,
                value=value,
                rule=known_keys(field_types),
                source=str(path),
            )
        values[key] = coerce(key, value, f"file {path}")
    return values


def _read_environ(
    environ: Mapping[str, str], field_types: Mapping[str, str], coerce: Coerce
) -> FieldValues:
    """The settings of the ``AEROMQ_BROKER_*`` variables of ``environ`` (less the one that
    names the file)."""
    values: FieldValues = {}
    for variable in sorted(environ):
        if not variable.startswith(ENV_PREFIX) or variable == CONFIG_ENV:
            continue
        key = variable[len(ENV_PREFIX) :].lower()
        if key not in field_types:
            raise BrokerConfigError(
                "unknown broker environment variable",
                key=variable,
                value=environ[variable],
                rule=known_keys(field_types),
                source="environment",
            )
        values[key] = coerce(key, environ[variable], f"environment {variable}")
    return values


def known_keys(field_types: Mapping[str, str]) -> str:
    """The rule an unknown key breaks: ``one of`` the field names, sorted."""
    return "one of " + ", ".join(sorted(field_types))
