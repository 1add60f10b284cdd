"""A topic's permission bits on a broker (RocketMQ's ``PermName``).

A topic config's ``perm`` and each queue spec of a route carry these bits: producers send only
to writable queues, consumers read only readable ones, and the broker refuses the others.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "PERM_INHERIT",
    "PERM_PRIORITY",
    "PERM_READ",
    "PERM_READ_WRITE",
    "PERM_WRITE",
    "is_readable",
    "is_writeable",
]

PERM_PRIORITY: Final = 0x8
PERM_READ: Final = 0x4
PERM_WRITE: Final = 0x2
PERM_INHERIT: Final = 0x1
PERM_READ_WRITE: Final = PERM_READ | PERM_WRITE
"""A topic's default permission: readable and writable."""


def is_readable(perm: int) -> bool:
    """Whether ``perm`` has :data:`PERM_READ`: consumers may pull from the topic's queues."""
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    """Whether ``perm`` has :data:`PERM_WRITE`: producers may send to the topic's queues."""
    return bool(perm & PERM_WRITE)
