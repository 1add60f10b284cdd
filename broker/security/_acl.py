"""Access control in the spirit of RocketMQ ACL 2.0: users (name and secret) and, for each, the
permissions it holds on topics and consumer groups.

A rule names a resource and permissions: ``topic:Orders`` (one topic), ``topic:Orders*`` (a
prefix), ``group:*`` (every group), ``*`` (every topic and group); permissions are ``pub``
(send to a topic), ``sub`` (pull a topic, commit and read a group's offsets, join a group) and
``admin`` (create, change and delete topics, reset offsets, read stats and groups). A user holds
a permission on a resource when one of its rules grants it. Configured in TOML (the broker's
config file's ``[acl]`` table, or a file of its own)::

    [[acl.users]]
    name = "orders-app"
    secret = "change-me"
    rules = [
      { resource = "topic:Orders*", permissions = ["pub", "sub"] },
      { resource = "group:orders-*", permissions = ["sub"] },
    ]

:meth:`Acl.authenticate` and :meth:`Acl.refusal` return None or the reason: the broker turns a
reason into a gRPC ``UNAUTHENTICATED``/``PERMISSION_DENIED`` status or a refused session, which
the clients raise as ``AuthenticationError``/``AccessDeniedError``.
"""

from __future__ import annotations

import enum
import hmac
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aeromq.broker._errors import ConfigError

__all__ = ["Acl", "AclRule", "AclUser", "Permission", "ResourceKind", "load_acl"]


class Permission(enum.Enum):
    PUB = "pub"
    SUB = "sub"
    ADMIN = "admin"


class ResourceKind(enum.Enum):
    TOPIC = "topic"
    GROUP = "group"


_ANY: Final = "*"


@dataclass(frozen=True)
class AclRule:
    """``kind`` None: every kind; ``pattern`` ending in ``*``: a prefix."""

    kind: ResourceKind | None
    pattern: str
    permissions: frozenset[Permission]

    @classmethod
    def parse(cls, resource: str, permissions: Sequence[str]) -> AclRule:
        if resource == _ANY:
            kind, pattern = None, _ANY
        else:
            head, sep, pattern = resource.partition(":")
            if not sep or not pattern or head not in {k.value for k in ResourceKind}:
                raise ConfigError(
                    "bad ACL resource", resource=resource, rule="*, topic:NAME or group:NAME"
                )
            kind = ResourceKind(head)
        try:
            granted = frozenset(Permission(p) for p in permissions)
        except ValueError as exc:
            raise ConfigError(
                "bad ACL permission", resource=resource, permissions=list(permissions),
                rule="pub, sub or admin",
            ) from exc  # fmt: skip
        return cls(kind, pattern, granted)

    def grants(self, kind: ResourceKind, name: str, permission: Permission) -> bool:
        if permission not in self.permissions or (self.kind is not None and self.kind is not kind):
            return False
        if self.pattern.endswith(_ANY):
            return name.startswith(self.pattern[:-1])
        return name == self.pattern


@dataclass(frozen=True)
class AclUser:
    name: str
    secret: str
    rules: tuple[AclRule, ...]

    def holds(self, kind: ResourceKind, name: str, permission: Permission) -> bool:
        return any(rule.grants(kind, name, permission) for rule in self.rules)


class Acl:
    """The users of one broker (see module)."""

    def __init__(self, users: Sequence[AclUser]) -> None:
        self._users: Mapping[str, AclUser] = {user.name: user for user in users}

    @property
    def users(self) -> list[str]:
        return sorted(self._users)

    def user(self, name: str) -> AclUser | None:
        return self._users.get(name)

    def authenticate(self, name: str, secret: str) -> str | None:
        """None when ``name`` is a user and ``secret`` its secret, else why not."""
        if not name:
            return "no credentials: user=''"
        user = self._users.get(name)
        if user is None or not hmac.compare_digest(user.secret.encode(), secret.encode()):
            return f"bad user or secret: user={name!r}"
        return None

    def refusal(
        self, name: str, kind: ResourceKind, resource: str, permission: Permission
    ) -> str | None:
        """None when user ``name`` holds ``permission`` on the resource, else why not."""
        user = self._users.get(name)
        if user is not None and user.holds(kind, resource, permission):
            return None
        return (
            f"access denied: user={name!r} resource='{kind.value}:{resource}' "
            f"permission={permission.value!r}"
        )

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str) -> Acl:
        """The ACL of a TOML ``[acl]`` table (``users``: name, secret, rules)."""
        users: list[AclUser] = []
        entries = table.get("users", [])
        if not isinstance(entries, list):
            raise ConfigError("ACL users must be an array of tables", source=source)
        for entry in entries:
            name, secret = entry.get("name"), entry.get("secret")
            if not isinstance(name, str) or not name or not isinstance(secret, str) or not secret:
                raise ConfigError("an ACL user needs a name and a secret", source=source)
            rules = tuple(
                AclRule.parse(str(rule.get("resource", "")), list(rule.get("permissions", [])))
                for rule in entry.get("rules", [])
            )
            users.append(AclUser(name, secret, rules))
        if len({u.name for u in users}) != len(users):
            raise ConfigError("duplicate ACL user names", source=source)
        return cls(users)


def load_acl(path: Path) -> Acl | None:
    """The ACL of the ``[acl]`` table of the TOML file ``path``; None when it has none."""
    try:
        with Path(path).open("rb") as file:
            document = tomllib.load(file)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError("cannot read the ACL", path=str(path), reason=str(exc)) from exc
    table = document.get("acl")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ConfigError("[acl] must be a table", path=str(path))
    return Acl.from_table(table, str(path))
