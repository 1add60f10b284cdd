"""Which process a member key belongs to, and whether that process is provably gone.

A member's key (``members/<id>``) outlives its process by up to a lease's TTL (and etcd's
500 ms revocation tick): after a SIGKILL, a crash or a whole group's restart, the others would
wait that long for the old leader's key to vanish, and count members whose keys are left as
live in an election. A member that can prove the process of such a key gone revokes its lease
at once, which is what the TTL would do a little later: a process that no longer exists
renews nothing and acknowledges nothing.

The proof holds on the member's own host only. :func:`this_process` names a process as
``<boot id>/<pid namespace>/<pid>/<start time>`` (the kernel's random id of this boot, the
``/proc/self/ns/pid`` inode, the pid, and the process's start time in clock ticks after boot);
:func:`is_gone` is True only when the boot and the pid namespace are this process's own and
``/proc/<pid>`` is missing, a zombie, or a process started at another time (the pid used
again). Anything else, another host or container, an identity it cannot read (a key written
before this field existed: ``""``), is not gone: its lease ends with its TTL, as before.

Caller: :class:`~broker.replication.membership.MemberInfo` (its ``process``), the group
controller (the members it revokes), :meth:`Membership.join` (its own previous key).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Final

__all__ = ["is_gone", "this_process"]

_PROC: Final = Path("/proc")
_BOOT_ID: Final = _PROC / "sys/kernel/random/boot_id"
_START_TIME_FIELD: Final = 19
"""``/proc/<pid>/stat`` field 22 (``starttime``), counted after the command's ``)`` from the
state (field 3)."""
_GONE_STATES: Final = frozenset("ZX")
"""A zombie (exited, not reaped) or dead process."""


def _stat_after_command(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name, or None: no such process."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rpartition(")")[2].split()


@functools.cache
def _host_and_namespace() -> str:
    """``<boot id>/<pid namespace>`` of this process ("" where ``/proc`` cannot say)."""
    try:
        boot = _BOOT_ID.read_text().strip()
        namespace = os.stat("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace.st_dev}:{namespace.st_ino}"


def this_process() -> str:
    """This process's identity (see the module), "" where ``/proc`` cannot give one."""
    where = _host_and_namespace()
    fields = _stat_after_command(os.getpid())
    if not where or fields is None:
        return ""
    return f"{where}/{os.getpid()}/{fields[_START_TIME_FIELD]}"


def is_gone(identity: str) -> bool:
    """Whether the process ``identity`` names is provably gone (see the module)."""
    parts = identity.split("/")
    if len(parts) != 4 or f"{parts[0]}/{parts[1]}" != _host_and_namespace():
        return False
    try:
        pid = int(parts[2])
    except ValueError:
        return False
    fields = _stat_after_command(pid)
    if fields is None:
        return True
    return fields[0] in _GONE_STATES or fields[_START_TIME_FIELD] != parts[3]
