"""Machine rooms (data centres) of brokers and consumers, read from their names.

Brokers are named ``room@broker`` and consumer ids ``room@id`` (the separator is configurable).
A :class:`MachineRoomResolver` tells the room of a queue's broker and of a consumer; names are
split as Java's ``String.split`` does (trailing empty parts dropped), so they read as in
RocketMQ.
"""

from __future__ import annotations

from typing import Protocol

from aeromq.client import MessageQueue

__all__ = ["MachineRoomResolver", "PrefixMachineRoomResolver", "java_split"]


def java_split(text: str, separator: str) -> list[str]:
    """``text.split(separator)`` with Java's rule: trailing empty strings are removed."""
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


class MachineRoomResolver(Protocol):
    """Which machine room a queue's broker and a consumer are in (never None; may be empty)."""

    def broker_deploy_in(self, queue: MessageQueue) -> str:
        """The machine room of ``queue``'s broker."""
        ...

    def consumer_deploy_in(self, client_id: str) -> str:
        """The machine room of the consumer ``client_id``."""
        ...


class PrefixMachineRoomResolver:
    """The room is the part of the name before the first ``separator`` (the whole name when
    there is none): ``room1@broker-a`` is in ``room1``."""

    __slots__ = ("separator",)

    def __init__(self, separator: str = "@") -> None:
        self.separator = separator

    def _room(self, name: str) -> str:
        parts = java_split(name, self.separator)
        return parts[0] if parts else ""

    def broker_deploy_in(self, queue: MessageQueue) -> str:
        """The room of the queue's broker name (``room1@broker-a``: ``room1``)."""
        return self._room(queue.broker_name)

    def consumer_deploy_in(self, client_id: str) -> str:
        """The room of the consumer id (``room1@client-7``: ``room1``)."""
        return self._room(client_id)
